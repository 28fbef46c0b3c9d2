package wire

import (
	"strings"
	"unicode/utf8"
)

// TypeSessionHandoff is hcp-edge's command that hands a running session to
// another caller (Loops contract 4, ownership → hand-off). HCP is silent on
// ownership: docs/PROTOCOL-NOTES.md records the extension and its shapes.
// It travels on the command channel, from the session's current owner, with
// the session's id.
const TypeSessionHandoff Type = "session_handoff"

// EventOwnershipChanged is the event_type of the sequenced event that
// announces a change of a session's owner. It goes to the old owner and to
// the new one (the same message, the same sequence number); its data is an
// OwnershipChanged.
const EventOwnershipChanged = "ownership_changed"

// ReasonSessionEnded is the reason_code of the task_rejected that answers a
// session_handoff (or a control command) for a session that has ended or
// is ending.
const ReasonSessionEnded = "session_ended"

// ReasonInvalidState is the reason_code of the task_rejected that answers
// a session_handoff for a session whose state allows no change of owner
// (PENDING: awaiting its approval).
const ReasonInvalidState = "invalid_state"

// MaxHandoffReason bounds SessionHandoff.Reason, in bytes.
const MaxHandoffReason = 500

// SessionHandoff is the payload of session_handoff: To is the caller id of
// the new owner; Reason is free text kept in the ownership chain.
type SessionHandoff struct {
	To     string `json:"to"`
	Reason string `json:"reason,omitempty"`
}

// MessageType returns TypeSessionHandoff.
func (*SessionHandoff) MessageType() Type { return TypeSessionHandoff }

// Validate checks that To is a caller id and Reason is bounded text.
func (p *SessionHandoff) Validate() error {
	if p.To == "" {
		return derr("payload.to", KindMissing, "")
	}
	if err := CheckID(p.To); err != nil {
		return withField(err, "payload.to")
	}
	if len(p.Reason) > MaxHandoffReason || !utf8.ValidString(p.Reason) || strings.ContainsRune(p.Reason, 0) {
		return derr("payload.reason", KindInvalid, "at most 500 bytes of text")
	}
	return nil
}

// SessionHandoff returns the typed payload of a session_handoff envelope.
func (env *Envelope) SessionHandoff() (*SessionHandoff, error) {
	return payloadAs[*SessionHandoff](env, TypeSessionHandoff)
}

// OwnershipChanged is the data of an ownership_changed event: one record of
// the session's ownership chain. Via is "handoff" (a caller's
// session_handoff), "takeover" (a technician at the rig took the session
// over) or "handback" (the technician gave it back). By is who asked: the
// broker-verified caller id of a handoff, the operator's name otherwise.
// RequestID is the message_id of the session_handoff ("" for local
// requests); Index is the record's place in the chain, from 1.
type OwnershipChanged struct {
	From      string `json:"from"`
	To        string `json:"to"`
	By        string `json:"by"`
	Via       string `json:"via"`
	Reason    string `json:"reason,omitempty"`
	At        string `json:"at"`
	RequestID string `json:"request_id,omitempty"`
	Index     int    `json:"index"`
}
