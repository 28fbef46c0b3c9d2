package reply

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"hcp-edge/session/engine"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// ApprovalID returns the approval id an approval_pending event carries.
func ApprovalID(env *wire.Envelope) string {
	ev, err := env.Event()
	if err != nil || ev.EventType != engine.EventApprovalPending {
		return ""
	}
	var d struct {
		Details struct {
			ApprovalID string `json:"approval_id"`
		} `json:"details"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	return d.Details.ApprovalID
}

// Encode is env's wire JSON, or a JSON object naming the encoding error
// (the replies embed it as json.RawMessage, which must stay valid JSON).
func Encode(env *wire.Envelope) []byte {
	b, err := wire.Encode(env)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}

// ParseArtifactURI splits hcp://{session}/artifacts/{name}.
func ParseArtifactURI(uri string) (sid, name string, err error) {
	rest, ok := strings.CutPrefix(uri, "hcp://")
	if !ok {
		return "", "", fmt.Errorf("%q: an artifact URI is hcp://{session}/artifacts/{name}", uri)
	}
	sid, name, ok = strings.Cut(rest, "/artifacts/")
	if !ok || sid == "" || name == "" || strings.ContainsAny(sid, "/\\") || strings.ContainsAny(name, "/\\") ||
		name == "." || name == ".." || path.Clean(name) != name || len(sid) > store.MaxIDLen {
		return "", "", fmt.Errorf("%q: an artifact URI is hcp://{session}/artifacts/{name}", uri)
	}
	return sid, name, nil
}
