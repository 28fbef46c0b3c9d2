// Package lifecycle is the L2 session state machine of the HCP spec
// (spec/hcp/L2-session-lifecycle.md): the states, the valid transitions with
// their triggers, the standard event types, and the per-session sequence
// counter. It is pure: no I/O, no clock, no goroutines. session/store
// persists what it decides.
//
// # Concepts
//
// A State is one of the eight L2 states. Edges lists the nine valid
// transitions of the spec's "Valid State Transitions" table, each with its
// Trigger; Check accepts exactly those and refuses every other pair,
// self-transitions included, with a *TransitionError (which matches
// ErrInvalidTransition under errors.Is).
//
// A Machine is the state of one session plus the last sequence number it
// assigned. Transition moves it along a valid edge and returns the events
// the move produces, numbered: state_changed always, and session_closed
// when the new state is terminal. Emit numbers any other event. Sequence
// numbers start at 1 and strictly increase; a refused transition or emit
// consumes none. A Machine is a value: copy it, change the copy, and keep
// the copy only once the store has committed it.
//
// # Caveats
//
// The spec's diagram draws a RUNNING box under RUNNING; the table, which is
// normative here, has no RUNNING → RUNNING row, so a self-transition is
// refused. Recovery from a checkpoint is not a transition either: it is a
// state_changed event whose from_state equals to_state and whose reason is
// recovered_from_checkpoint (see Machine.Recovered).
//
// Once a session is closed (a terminal state was reached) no further event
// can be emitted.
package lifecycle
