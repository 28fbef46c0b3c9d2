package store

import (
	"time"

	"hcp-edge/session/lifecycle"
)

//go:generate go tool msgp

//msgp:shim lifecycle.State as:string using:string/lifecycle.State
//msgp:shim lifecycle.EventType as:string using:string/lifecycle.EventType

// Session is the stored record of one session. ID, State, LastSeq,
// CreatedAt, UpdatedAt and LastCheckpoint are kept by the Store; the other
// fields are the gate's to fill (at Create, or through Change.Update).
type Session struct {
	ID             string          `msg:"id"`
	State          lifecycle.State `msg:"state"`
	LastSeq        uint64          `msg:"last_seq"` // sequence number of the newest event
	CreatedAt      time.Time       `msg:"created_at"`
	UpdatedAt      time.Time       `msg:"updated_at"` // last state transition
	LastEventAt    time.Time       `msg:"last_event_at"`
	LastCheckpoint uint64          `msg:"last_ckpt"` // Seq of the newest checkpoint, 0 if none

	Capability        string `msg:"capability"`
	CapabilityVersion string `msg:"capability_version"`
	CallerID          string `msg:"caller_id"`
	RequestID         string `msg:"request_id"` // message_id of the task_submit
	RiskLevel         string `msg:"risk_level"`
	DataClass         string `msg:"data_class"`
	Token             string `msg:"token"`
	MaxDuration       int64  `msg:"max_duration_ns"`
	Metadata          []byte `msg:"metadata"` // JSON object, caller- and callee-assigned
}

// Event is one stored L2 event.
type Event struct {
	Seq  uint64              `msg:"seq"`
	Type lifecycle.EventType `msg:"type"`
	At   time.Time           `msg:"at"`
	Data []byte              `msg:"data"` // JSON object; sealed when Sealed
	// Sealed: Data is an atrest blob bound to the session id, purpose
	// event and Seq (a T3/T4 session, sealevent.go). Absent from the
	// records of events in the clear, which keep their encoding.
	Sealed bool `msg:"sealed,omitempty"`
	// Frame holds, for a sealed lifecycle event, the fields Check replays
	// in the clear (JSON): from_state and to_state of state_changed (its
	// reason only when it is the fixed recovered_from_checkpoint),
	// final_state of session_closed, checkpoint_id of checkpoint_created.
	// No other event has one, and it never holds a value of the session's
	// data.
	Frame []byte `msg:"frame,omitempty"`
}

// Checkpoint is one stored checkpoint of a session.
type Checkpoint struct {
	ID          string          `msg:"id"`  // ckpt-<seq>, also in its checkpoint_created event
	Seq         uint64          `msg:"seq"` // sequence number of its checkpoint_created event
	CreatedAt   time.Time       `msg:"created_at"`
	State       lifecycle.State `msg:"state"` // the session's state when it was taken
	Description string          `msg:"description"`
	Resumable   bool            `msg:"resumable"`
	Step        string          `msg:"step"`    // the executor's step name
	Payload     []byte          `msg:"payload"` // the executor's own encoding, opaque here; sealed when Sealed
	// Sealed: Payload is an atrest blob bound to the session id, purpose
	// checkpoint and ID (T3/T4 sessions). Absent from the records of
	// unsealed checkpoints, which keep their encoding.
	Sealed bool `msg:"sealed,omitempty"`
}
