package token

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"hcp-edge/envelope"
)

// EnvelopeDigest is "sha256:" and the hex SHA-256 of the envelope's
// configuration and rig specification as JSON (map keys sorted by
// encoding/json). Equal envelopes give equal digests; any change to a
// limit, a rule or the rig gives another one.
func EnvelopeDigest(env *envelope.Envelope) (string, error) {
	if env == nil {
		return "", fmt.Errorf("token: digest of a nil envelope")
	}
	doc := struct {
		Config envelope.Config  `json:"config"`
		Spec   envelope.RigSpec `json:"spec"`
	}{env.Config(), env.Spec()}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("token: digest of the envelope: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
