package wire

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Bounds of the artifact fetch extension.
const (
	// MaxArtifactChunk is the most data one artifact_chunk carries (512
	// KiB: base64 and the envelope keep the body under DefaultMaxBodySize).
	MaxArtifactChunk = 512 << 10
	// DefaultArtifactChunk is the chunk size when a request names none.
	DefaultArtifactChunk = 256 << 10
)

// Reason codes of request_refused beyond L3's (ReasonUnauthorized,
// ReasonForbidden, ReasonInvalidInput).
const (
	// ReasonNotFound: no such capability, session or artifact (also the
	// task_rejected that answers a session_handoff naming no session the
	// callee knows).
	ReasonNotFound = "not_found"
	// ReasonTooLarge: the artifact exceeds the agent's fetch limit.
	ReasonTooLarge = "too_large"
	// ReasonAccessRequired: a T4 session's data without an approved,
	// unexpired access approval.
	ReasonAccessRequired = "access_required"
	// ReasonAccessDenied: the T4 session's access request was denied.
	ReasonAccessDenied = "access_denied"
	// ReasonUnavailable: the agent cannot serve the request now (the
	// artifact cannot be read or opened).
	ReasonUnavailable = "unavailable"
)

// CapabilitiesRequest is the payload of capabilities_request (extension):
// the capability declarations the asking harness may use. The harness is
// the broker-validated user_id, never a payload field.
type CapabilitiesRequest struct {
	// Capability restricts the answer to one capability by name (empty:
	// every one the caller may use).
	Capability string `json:"capability,omitempty"`
}

// MessageType returns TypeCapabilitiesRequest.
func (*CapabilitiesRequest) MessageType() Type { return TypeCapabilitiesRequest }

// Validate accepts any request; capability, when set, is 1–128 characters.
func (p *CapabilitiesRequest) Validate() error {
	if len(p.Capability) > 128 {
		return derr("payload.capability", KindInvalid, "longer than 128 characters")
	}
	return nil
}

// CapabilitiesResponse is the payload of capabilities_response
// (extension): what the caller may use on this callee.
type CapabilitiesResponse struct {
	CalleeID string `json:"callee_id"`
	CallerID string `json:"caller_id"`
	// MaxRiskLevel and MaxDataClassification are the caller's ceilings in
	// the callee's access control list.
	MaxRiskLevel          string `json:"max_risk_level,omitempty"`
	MaxDataClassification string `json:"max_data_classification,omitempty"`
	// Capabilities are the declarations, by name and version.
	Capabilities []CapabilityOffer `json:"capabilities"`
}

// CapabilityOffer is one capability a caller may use: L3's Capability
// Declaration as the callee publishes it, and the safety envelope a session
// of it is bound by (absent for a capability that involves no physical
// resources).
type CapabilityOffer struct {
	Capability CapabilityDeclaration `json:"capability"`
	// RiskFloor is the lowest risk level a task of the capability is
	// assessed at on this agent (never above the caller's max_risk_level:
	// a capability whose floor is above it is not offered).
	RiskFloor      string          `json:"risk_floor,omitempty"`
	SafetyEnvelope *SafetyEnvelope `json:"safety_envelope,omitempty"`
}

// CapabilityDeclaration is L3's Capability Declaration; the schemas, the
// safety declaration and the constraints stay raw JSON objects.
type CapabilityDeclaration struct {
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Safety       json.RawMessage `json:"safety"`
	Constraints  json.RawMessage `json:"constraints,omitempty"`
}

// MessageType returns TypeCapabilitiesResponse.
func (*CapabilitiesResponse) MessageType() Type { return TypeCapabilitiesResponse }

// Validate requires callee_id, caller_id and, per capability, name,
// version and the schemas and safety as objects.
func (p *CapabilitiesResponse) Validate() error {
	if err := CheckID(p.CalleeID); err != nil {
		return withField(err, "payload.callee_id")
	}
	if err := CheckID(p.CallerID); err != nil {
		return withField(err, "payload.caller_id")
	}
	if err := optEnum("payload.max_risk_level", p.MaxRiskLevel, riskLevels); err != nil {
		return err
	}
	if err := optEnum("payload.max_data_classification", p.MaxDataClassification, dataClassifications); err != nil {
		return err
	}
	for i, c := range p.Capabilities {
		f := "payload.capabilities[" + strconv.Itoa(i) + "]"
		d := c.Capability
		switch {
		case d.Name == "":
			return derr(f+".capability.name", KindMissing, "")
		case d.Version == "":
			return derr(f+".capability.version", KindMissing, "")
		}
		for _, o := range []struct {
			name string
			raw  json.RawMessage
		}{{"input_schema", d.InputSchema}, {"output_schema", d.OutputSchema}, {"safety", d.Safety}} {
			if err := reqObject(f+".capability."+o.name, o.raw); err != nil {
				return err
			}
		}
		if err := optObject(f+".capability.constraints", d.Constraints); err != nil {
			return err
		}
		if err := c.SafetyEnvelope.Validate(f + ".safety_envelope"); err != nil {
			return err
		}
	}
	return nil
}

// ArtifactRequest is the payload of artifact_request (extension): one
// chunk of an artifact of the envelope's session, from Offset.
type ArtifactRequest struct {
	URI    string `json:"uri"`
	Offset int64  `json:"offset"`
	// ChunkSize is the most data wanted (default DefaultArtifactChunk, at
	// most MaxArtifactChunk).
	ChunkSize int `json:"chunk_size,omitempty"`
}

// MessageType returns TypeArtifactRequest.
func (*ArtifactRequest) MessageType() Type { return TypeArtifactRequest }

// Validate requires an hcp:// uri, a non-negative offset and a chunk size
// within bounds.
func (p *ArtifactRequest) Validate() error {
	if err := checkArtifactURI("payload.uri", p.URI); err != nil {
		return err
	}
	if p.Offset < 0 {
		return derr("payload.offset", KindInvalid, "negative")
	}
	if p.ChunkSize < 0 || p.ChunkSize > MaxArtifactChunk {
		return derr("payload.chunk_size", KindInvalid, "want 1.."+strconv.Itoa(MaxArtifactChunk))
	}
	return nil
}

// ArtifactChunk is the payload of artifact_chunk (extension): Data (base64
// on the wire) from Offset of the artifact at URI, whose whole plaintext is
// SizeBytes long with Checksum ("sha256:" and 64 hex digits, as
// task_completed listed it). Final marks the last chunk
// (Offset+len(Data) == SizeBytes).
type ArtifactChunk struct {
	URI       string `json:"uri"`
	Offset    int64  `json:"offset"`
	Data      []byte `json:"data"`
	SizeBytes int64  `json:"size_bytes"`
	Checksum  string `json:"checksum"`
	Final     bool   `json:"final"`
}

// MessageType returns TypeArtifactChunk.
func (*ArtifactChunk) MessageType() Type { return TypeArtifactChunk }

// Validate checks the chunk's bounds and checksum format.
func (p *ArtifactChunk) Validate() error {
	if err := checkArtifactURI("payload.uri", p.URI); err != nil {
		return err
	}
	end := p.Offset + int64(len(p.Data))
	switch {
	case p.Offset < 0:
		return derr("payload.offset", KindInvalid, "negative")
	case p.SizeBytes < 0:
		return derr("payload.size_bytes", KindInvalid, "negative")
	case len(p.Data) > MaxArtifactChunk:
		return derr("payload.data", KindInvalid, "more than "+strconv.Itoa(MaxArtifactChunk)+" bytes")
	case end > p.SizeBytes:
		return derr("payload.data", KindInvalid, "ends past size_bytes")
	case p.Final != (end == p.SizeBytes):
		return derr("payload.final", KindInvalid, "final must be true exactly on the chunk that ends at size_bytes")
	}
	return checkChecksum("payload.checksum", p.Checksum)
}

// RequestRefused is the payload of request_refused (extension): an
// extension request the callee will not serve, with L3-style reason codes
// (ReasonUnauthorized, ReasonForbidden, ReasonInvalidInput, ReasonNotFound,
// ReasonTooLarge, ReasonAccessRequired, ReasonAccessDenied,
// ReasonUnavailable).
type RequestRefused struct {
	RequestType   Type   `json:"request_type"`
	ReasonCode    string `json:"reason_code"`
	ReasonMessage string `json:"reason_message"`
}

// MessageType returns TypeRequestRefused.
func (*RequestRefused) MessageType() Type { return TypeRequestRefused }

// Validate requires a request type, reason_code and reason_message.
func (p *RequestRefused) Validate() error {
	if !p.RequestType.IsRequest() {
		return derr("payload.request_type", KindInvalid, "want capabilities_request, artifact_request or preview_request")
	}
	if err := reqCode("payload.reason_code", p.ReasonCode); err != nil {
		return err
	}
	if p.ReasonMessage == "" {
		return derr("payload.reason_message", KindMissing, "")
	}
	return nil
}

// CapabilitiesRequest returns the typed payload of a capabilities_request.
func (env *Envelope) CapabilitiesRequest() (*CapabilitiesRequest, error) {
	return payloadAs[*CapabilitiesRequest](env, TypeCapabilitiesRequest)
}

// CapabilitiesResponse returns the typed payload of a capabilities_response.
func (env *Envelope) CapabilitiesResponse() (*CapabilitiesResponse, error) {
	return payloadAs[*CapabilitiesResponse](env, TypeCapabilitiesResponse)
}

// ArtifactRequest returns the typed payload of an artifact_request.
func (env *Envelope) ArtifactRequest() (*ArtifactRequest, error) {
	return payloadAs[*ArtifactRequest](env, TypeArtifactRequest)
}

// ArtifactChunk returns the typed payload of an artifact_chunk.
func (env *Envelope) ArtifactChunk() (*ArtifactChunk, error) {
	return payloadAs[*ArtifactChunk](env, TypeArtifactChunk)
}

// RequestRefused returns the typed payload of a request_refused.
func (env *Envelope) RequestRefused() (*RequestRefused, error) {
	return payloadAs[*RequestRefused](env, TypeRequestRefused)
}

// ParseArtifactURI splits hcp://{session}/artifacts/{name}. Errors are
// *DecodeError.
func ParseArtifactURI(uri string) (session, name string, err error) {
	if e := checkArtifactURI("uri", uri); e != nil {
		return "", "", e
	}
	rest := strings.TrimPrefix(uri, "hcp://")
	session, name, _ = strings.Cut(rest, "/artifacts/")
	return session, name, nil
}

func checkArtifactURI(field, uri string) error {
	bad := func() error {
		return derr(field, KindMalformed, "want hcp://{session}/artifacts/{name}, got "+strconv.Quote(truncate(uri)))
	}
	if uri == "" {
		return derr(field, KindMissing, "")
	}
	rest, ok := strings.CutPrefix(uri, "hcp://")
	if !ok || len(uri) > 512 {
		return bad()
	}
	if hasDotDot(rest) {
		return derr(field, KindTraversal, `a ".." segment in `+strconv.Quote(truncate(uri))+`: an artifact is hcp://{session}/artifacts/{name}, its name one path segment`)
	}
	sid, name, ok := strings.Cut(rest, "/artifacts/")
	if !ok || sid == "" || name == "" || name == "." || name == ".." || strings.ContainsAny(sid, "/\\") ||
		strings.ContainsAny(name, "/\\") {
		return bad()
	}
	return nil
}

// hasDotDot reports whether path has a ".." segment between separators (/
// or \).
func hasDotDot(path string) bool {
	for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return true
		}
	}
	return false
}

func checkChecksum(field, s string) error {
	hex, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hex) != 64 {
		return derr(field, KindMalformed, "want sha256: and 64 hex digits")
	}
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return derr(field, KindMalformed, "want sha256: and 64 lowercase hex digits")
		}
	}
	return nil
}
