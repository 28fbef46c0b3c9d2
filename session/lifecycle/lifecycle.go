package lifecycle

import (
	"encoding/json"
	"fmt"
)

// State is an L2 session state. The values are the spec's upper-case names.
type State string

// The L2 states.
const (
	Pending   State = "PENDING"   // task received, awaiting the L3 gate
	Rejected  State = "REJECTED"  // the gate refused (terminal)
	Running   State = "RUNNING"   // executing
	Paused    State = "PAUSED"    // suspended, session preserved
	Aborting  State = "ABORTING"  // abort requested, cleaning up
	Aborted   State = "ABORTED"   // cleanup done (terminal)
	Completed State = "COMPLETED" // finished successfully (terminal)
	Failed    State = "FAILED"    // unrecoverable error or timeout (terminal)
)

// States lists every state in the order of the spec's table.
func States() []State {
	return []State{Pending, Rejected, Running, Paused, Aborting, Aborted, Completed, Failed}
}

// Valid reports whether s is one of the eight L2 states.
func (s State) Valid() bool {
	switch s {
	case Pending, Rejected, Running, Paused, Aborting, Aborted, Completed, Failed:
		return true
	}
	return false
}

// Terminal reports whether s ends the session: REJECTED, ABORTED, COMPLETED
// or FAILED.
func (s State) Terminal() bool {
	switch s {
	case Rejected, Aborted, Completed, Failed:
		return true
	}
	return false
}

func (s State) String() string { return string(s) }

// Trigger names what causes a transition, after the spec's table.
type Trigger string

// The triggers of the spec's "Valid State Transitions" table.
const (
	TriggerGatePassed  Trigger = "l3_safety_check_passed" // PENDING → RUNNING
	TriggerGateFailed  Trigger = "l3_safety_check_failed" // PENDING → REJECTED
	TriggerPause       Trigger = "callee_pauses"          // RUNNING → PAUSED
	TriggerAbort       Trigger = "caller_abort"           // RUNNING or PAUSED → ABORTING
	TriggerSuccess     Trigger = "task_succeeded"         // RUNNING → COMPLETED
	TriggerFailure     Trigger = "unrecoverable_error"    // RUNNING → FAILED
	TriggerResume      Trigger = "callee_resumes"         // PAUSED → RUNNING
	TriggerCleanupDone Trigger = "cleanup_finished"       // ABORTING → ABORTED
)

// Edge is one valid transition.
type Edge struct {
	From, To State
	Trigger  Trigger
}

// edges is the spec's table, in its order.
var edges = [...]Edge{
	{Pending, Running, TriggerGatePassed},
	{Pending, Rejected, TriggerGateFailed},
	{Running, Paused, TriggerPause},
	{Running, Aborting, TriggerAbort},
	{Running, Completed, TriggerSuccess},
	{Running, Failed, TriggerFailure},
	{Paused, Running, TriggerResume},
	{Paused, Aborting, TriggerAbort},
	{Aborting, Aborted, TriggerCleanupDone},
}

// Edges returns the valid transitions, in the order of the spec's table.
func Edges() []Edge {
	out := make([]Edge, len(edges))
	copy(out, edges[:])
	return out
}

// Check returns the edge from → to, or a *TransitionError when the spec's
// table has no such row (unknown states and self-transitions included).
func Check(from, to State) (Edge, error) {
	for _, e := range edges {
		if e.From == from && e.To == to {
			return e, nil
		}
	}
	return Edge{}, &TransitionError{From: from, To: to}
}

// EventType is an L2 standard event type.
type EventType string

// The standard event types of L2.
const (
	EventSessionCreated     EventType = "session_created"
	EventStateChanged       EventType = "state_changed"
	EventProgress           EventType = "progress"
	EventIntermediateResult EventType = "intermediate_result"
	EventLog                EventType = "log"
	EventWarning            EventType = "warning"
	EventError              EventType = "error"
	EventCheckpointCreated  EventType = "checkpoint_created"
	EventSessionClosed      EventType = "session_closed"
)

// Valid reports whether t is one of the nine standard event types.
func (t EventType) Valid() bool {
	switch t {
	case EventSessionCreated, EventStateChanged, EventProgress, EventIntermediateResult,
		EventLog, EventWarning, EventError, EventCheckpointCreated, EventSessionClosed:
		return true
	}
	return false
}

// ReasonRecovered is the state_changed reason the spec asks for after a
// restart from a checkpoint.
const ReasonRecovered = "recovered_from_checkpoint"

// StateChanged is the data of a state_changed event.
type StateChanged struct {
	From   State  `json:"from_state"`
	To     State  `json:"to_state"`
	Reason string `json:"reason"`
}

// SessionClosed is the data of a session_closed event.
type SessionClosed struct {
	FinalState State  `json:"final_state"`
	Reason     string `json:"reason"`
}

// Event is one numbered L2 event: the payload of an L1 "event" message.
type Event struct {
	Seq  uint64          `json:"sequence"`
	Type EventType       `json:"event_type"`
	Data json.RawMessage `json:"data"`
}

// Machine is one session's position in the state machine and the last
// sequence number it assigned (0 before the first event). The zero Machine
// is not valid; start with New or Restore.
type Machine struct {
	State   State
	LastSeq uint64
}

// New returns the machine of a session just created by a task_submit:
// PENDING, no event yet.
func New() Machine { return Machine{State: Pending} }

// Restore rebuilds a machine from persisted values, refusing an unknown
// state.
func Restore(s State, lastSeq uint64) (Machine, error) {
	if !s.Valid() {
		return Machine{}, fmt.Errorf("lifecycle: restore: %w: %q", ErrUnknownState, s)
	}
	return Machine{State: s, LastSeq: lastSeq}, nil
}

// Closed reports whether the session reached a terminal state.
func (m *Machine) Closed() bool { return m.State.Terminal() }

func (m *Machine) next(t EventType, data any) (Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("lifecycle: %s data: %w", t, err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return Event{}, fmt.Errorf("lifecycle: %s data: %w", t, ErrDataNotObject)
	}
	m.LastSeq++
	return Event{Seq: m.LastSeq, Type: t, Data: raw}, nil
}

// Transition moves the machine to `to` along a valid edge and returns its
// events: state_changed, then session_closed when `to` is terminal. An
// invalid pair returns a *TransitionError and leaves m unchanged.
func (m *Machine) Transition(to State, reason string) (Edge, []Event, error) {
	edge, err := Check(m.State, to)
	if err != nil {
		return Edge{}, nil, err
	}
	work := *m
	ev, err := work.next(EventStateChanged, StateChanged{From: m.State, To: to, Reason: reason})
	if err != nil {
		return Edge{}, nil, err
	}
	evs := []Event{ev}
	if to.Terminal() {
		ev, err := work.next(EventSessionClosed, SessionClosed{FinalState: to, Reason: reason})
		if err != nil {
			return Edge{}, nil, err
		}
		evs = append(evs, ev)
	}
	work.State = to
	*m = work
	return edge, evs, nil
}

// Recovered returns the state_changed event that announces a resumption
// from a checkpoint after a restart: from_state and to_state are the
// current state, reason recovered_from_checkpoint. A closed session cannot
// recover.
func (m *Machine) Recovered() (Event, error) {
	if m.Closed() {
		return Event{}, fmt.Errorf("lifecycle: recover in %s: %w", m.State, ErrClosed)
	}
	return m.next(EventStateChanged, StateChanged{From: m.State, To: m.State, Reason: ReasonRecovered})
}

// Emit numbers an event that is not a transition. data must marshal to a
// JSON object. state_changed and session_closed come from Transition only;
// nothing is emitted after the session closed.
func (m *Machine) Emit(t EventType, data any) (Event, error) {
	switch {
	case !t.Valid():
		return Event{}, fmt.Errorf("lifecycle: emit %q: %w", t, ErrUnknownEvent)
	case t == EventStateChanged || t == EventSessionClosed:
		return Event{}, fmt.Errorf("lifecycle: emit %s: %w", t, ErrReservedEvent)
	case m.Closed():
		return Event{}, fmt.Errorf("lifecycle: emit %s in %s: %w", t, m.State, ErrClosed)
	}
	return m.next(t, data)
}

// CheckSequence verifies that seqs strictly increase by one from first: the
// stored events of a session have no gap and no duplicate.
func CheckSequence(first uint64, seqs []uint64) error {
	want := first
	for i, s := range seqs {
		if s != want {
			return &SequenceError{Index: i, Want: want, Got: s}
		}
		want++
	}
	return nil
}
