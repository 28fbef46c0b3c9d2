package reply

import (
	"encoding/json"
	"time"

	"hcp-edge/session/budget"
	"hcp-edge/session/store"
)

// Access is one access request as access list shows it (never the
// held message).
type Access struct {
	ID         string    `json:"access_id"`
	SessionID  string    `json:"session_id"`
	CallerID   string    `json:"caller_id"`
	DataClass  string    `json:"data_classification"`
	What       string    `json:"what"`
	State      string    `json:"state"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	Operator   string    `json:"operator,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	DecidedAt  time.Time `json:"decided_at,omitzero"`
	ValidUntil time.Time `json:"valid_until,omitzero"`
	// WithdrawnAt, WithdrawnBy, WithdrawReason: a release ended early.
	WithdrawnAt    time.Time `json:"withdrawn_at,omitzero"`
	WithdrawnBy    string    `json:"withdrawn_by,omitempty"`
	WithdrawReason string    `json:"withdraw_reason,omitempty"`
	// Approvals are the signatures, oldest first (who, uid, when, meaning).
	Approvals []store.AccessSignature `json:"approvals,omitempty"`
}

// Ownership is the reply of takeover, handback and owner: the
// session's owner and its ownership chain, oldest first.
type Ownership struct {
	Message string            `json:"message,omitempty"`
	Session string            `json:"session"`
	Owner   string            `json:"owner"`
	Chain   []store.Ownership `json:"chain"`
}

// Progress is a session's latest progress event.
type Progress struct {
	Stage   string   `json:"stage"`
	Percent *float64 `json:"percent,omitempty"`
	Message string   `json:"message,omitempty"`
}

// Submit is the reply to submit without --watch.
type Submit struct {
	SessionID  string            `json:"session_id,omitempty"`
	ApprovalID string            `json:"approval_id,omitempty"`
	Replies    []json.RawMessage `json:"replies"`
}

// Session is one row of sessions.
type Session struct {
	ID         string    `json:"session_id"`
	State      string    `json:"state"`
	Capability string    `json:"capability"`
	Version    string    `json:"capability_version"`
	Caller     string    `json:"caller_id"`
	Risk       string    `json:"risk_level"`
	DataClass  string    `json:"data_classification"`
	ApprovalID string    `json:"approval_id,omitempty"`
	Operator   string    `json:"operator,omitempty"`
	Progress   *Progress `json:"progress,omitempty"`
	// Budgets is a running session's live resource usage against its
	// budgets (session/budget).
	Budgets   *budget.Report `json:"budgets,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	// Question is the recipe question a PAUSED session is blocked at
	// (hcp-edge answer ID CHECKPOINT VALUE).
	Question *Question `json:"question,omitempty"`
}

// Question is a recipe question a session awaits an answer to.
type Question struct {
	CheckpointID string    `json:"checkpoint_id"`
	Name         string    `json:"name"`
	Question     string    `json:"question"`
	Answer       string    `json:"answer"`   // what answer it takes: "yes or no", "one of MoO3, WO3, none"
	Deadline     time.Time `json:"deadline"` // the session aborts to a safe state then
}

// Artifact is the reply to artifact: where the file is and what the
// session's final message recorded about it. The file of a T3/T4 session
// is sealed (atrest): SizeBytes and Checksum describe its plaintext, and
// the reader opens it with the key the daemon names (KeyFile, KeyID).
type Artifact struct {
	URI       string `json:"uri"`
	SessionID string `json:"session_id"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
	Checksum  string `json:"checksum"`
	Type      string `json:"type,omitempty"`
	DataClass string `json:"data_classification,omitempty"`
	Sealed    bool   `json:"sealed,omitempty"`
	KeyFile   string `json:"at_rest_key_file,omitempty"` // the daemon's agent.at_rest_key_file
	KeyID     string `json:"at_rest_key_id,omitempty"`   // the id of the daemon's key
}

// Export is the reply to export: the session's .eln archive (base64 in
// the JSON reply).
type Export struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name"` // the default file name
	Data      []byte `json:"data"`
}
