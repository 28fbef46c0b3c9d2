package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// specTable is the "Valid State Transitions" table of L2, written out again
// by hand so that a change to edges shows up here.
var specTable = map[[2]State]Trigger{
	{Pending, Running}:   TriggerGatePassed,
	{Pending, Rejected}:  TriggerGateFailed,
	{Running, Paused}:    TriggerPause,
	{Running, Aborting}:  TriggerAbort,
	{Running, Completed}: TriggerSuccess,
	{Running, Failed}:    TriggerFailure,
	{Paused, Running}:    TriggerResume,
	{Paused, Aborting}:   TriggerAbort,
	{Aborting, Aborted}:  TriggerCleanupDone,
}

func TestCheckEveryPair(t *testing.T) {
	all := append(States(), State(""), State("running"), State("BOGUS"))
	valid := 0
	for _, from := range all {
		for _, to := range all {
			t.Run(fmt.Sprintf("%s→%s", from, to), func(t *testing.T) {
				trig, ok := specTable[[2]State{from, to}]
				edge, err := Check(from, to)
				if ok {
					valid++
					if err != nil {
						t.Fatalf("Check = %v, want the edge", err)
					}
					if edge != (Edge{from, to, trig}) {
						t.Fatalf("edge = %+v, want trigger %s", edge, trig)
					}
					return
				}
				var te *TransitionError
				if !errors.As(err, &te) || te.From != from || te.To != to {
					t.Fatalf("Check = %v, want *TransitionError{%s, %s}", err, from, to)
				}
				if !errors.Is(err, ErrInvalidTransition) {
					t.Fatalf("errors.Is(%v, ErrInvalidTransition) = false", err)
				}
			})
		}
	}
	if valid != len(specTable) || len(Edges()) != len(specTable) {
		t.Fatalf("%d valid pairs, %d edges, want %d", valid, len(Edges()), len(specTable))
	}
}

func TestStates(t *testing.T) {
	terminal := map[State]bool{Rejected: true, Aborted: true, Completed: true, Failed: true}
	for _, s := range States() {
		if !s.Valid() {
			t.Errorf("%s not valid", s)
		}
		if s.Terminal() != terminal[s] {
			t.Errorf("%s.Terminal() = %v", s, s.Terminal())
		}
		// a terminal state has no way out; a non-terminal one has one at least
		out := 0
		for _, e := range Edges() {
			if e.From == s {
				out++
			}
		}
		if (out == 0) != terminal[s] {
			t.Errorf("%s: %d outgoing edges, terminal %v", s, out, terminal[s])
		}
	}
	for _, s := range []State{"", "pending", "DONE"} {
		if s.Valid() || s.Terminal() {
			t.Errorf("%q valid or terminal", s)
		}
	}
}

func decode[T any](t *testing.T, ev Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatalf("event %d data %s: %v", ev.Seq, ev.Data, err)
	}
	return v
}

func TestMachinePaths(t *testing.T) {
	tests := []struct {
		name  string
		path  []State
		final State
	}{
		{"rejected", []State{Rejected}, Rejected},
		{"completed", []State{Running, Completed}, Completed},
		{"failed", []State{Running, Failed}, Failed},
		{"pause resume complete", []State{Running, Paused, Running, Paused, Running, Completed}, Completed},
		{"abort while running", []State{Running, Aborting, Aborted}, Aborted},
		{"abort while paused", []State{Running, Paused, Aborting, Aborted}, Aborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			var all []Event
			if _, err := m.Emit(EventSessionCreated, map[string]any{"state": m.State}); err != nil {
				t.Fatal(err)
			}
			all = append(all, Event{Seq: m.LastSeq})
			for _, to := range tt.path {
				from := m.State
				_, evs, err := m.Transition(to, "because")
				if err != nil {
					t.Fatalf("%s → %s: %v", from, to, err)
				}
				sc := decode[StateChanged](t, evs[0])
				if evs[0].Type != EventStateChanged || sc.From != from || sc.To != to || sc.Reason != "because" {
					t.Fatalf("first event %+v %s", evs[0], evs[0].Data)
				}
				if to.Terminal() {
					if len(evs) != 2 || evs[1].Type != EventSessionClosed || decode[SessionClosed](t, evs[1]).FinalState != to {
						t.Fatalf("terminal %s: events %+v", to, evs)
					}
				} else if len(evs) != 1 {
					t.Fatalf("non-terminal %s: %d events", to, len(evs))
				}
				all = append(all, evs...)
			}
			if m.State != tt.final || !m.Closed() {
				t.Fatalf("state %s closed %v", m.State, m.Closed())
			}
			seqs := make([]uint64, len(all))
			for i, e := range all {
				seqs[i] = e.Seq
			}
			if err := CheckSequence(1, seqs); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Emit(EventLog, map[string]string{"message": "late"}); !errors.Is(err, ErrClosed) {
				t.Fatalf("emit after close: %v", err)
			}
			if _, err := m.Recovered(); !errors.Is(err, ErrClosed) {
				t.Fatalf("recover after close: %v", err)
			}
		})
	}
}

func TestMachineRefusalsConsumeNothing(t *testing.T) {
	m := New()
	before := m
	tests := []struct {
		name string
		do   func() error
		is   error
	}{
		{"pending to completed", func() error { _, _, err := m.Transition(Completed, ""); return err }, ErrInvalidTransition},
		{"self transition", func() error { _, _, err := m.Transition(Pending, ""); return err }, ErrInvalidTransition},
		{"unknown target", func() error { _, _, err := m.Transition("DONE", ""); return err }, ErrInvalidTransition},
		{"emit state_changed", func() error { _, err := m.Emit(EventStateChanged, map[string]any{}); return err }, ErrReservedEvent},
		{"emit session_closed", func() error { _, err := m.Emit(EventSessionClosed, map[string]any{}); return err }, ErrReservedEvent},
		{"emit unknown", func() error { _, err := m.Emit("telemetry", map[string]any{}); return err }, ErrUnknownEvent},
		{"data not object", func() error { _, err := m.Emit(EventLog, []int{1}); return err }, ErrDataNotObject},
		{"data null", func() error { _, err := m.Emit(EventLog, nil); return err }, ErrDataNotObject},
		{"data unmarshalable", func() error { _, err := m.Emit(EventLog, map[string]any{"c": make(chan int)}); return err }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if m != before {
				t.Fatalf("machine changed to %+v", m)
			}
		})
	}
}

func TestRecoveredAndRestore(t *testing.T) {
	if _, err := Restore("NOPE", 3); !errors.Is(err, ErrUnknownState) {
		t.Fatalf("Restore unknown: %v", err)
	}
	m, err := Restore(Running, 41)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := m.Recovered()
	if err != nil {
		t.Fatal(err)
	}
	sc := decode[StateChanged](t, ev)
	if ev.Seq != 42 || sc.From != Running || sc.To != Running || sc.Reason != ReasonRecovered {
		t.Fatalf("recovered event %d %s", ev.Seq, ev.Data)
	}
	if m.State != Running || m.LastSeq != 42 {
		t.Fatalf("machine %+v", m)
	}
}

func TestCheckSequence(t *testing.T) {
	tests := []struct {
		name  string
		first uint64
		seqs  []uint64
		bad   int // index of the first error, -1 if none
	}{
		{"empty", 1, nil, -1},
		{"consecutive", 1, []uint64{1, 2, 3}, -1},
		{"from later", 7, []uint64{7, 8}, -1},
		{"gap", 1, []uint64{1, 2, 4}, 2},
		{"duplicate", 1, []uint64{1, 2, 2, 3}, 2},
		{"backwards", 1, []uint64{1, 3, 2}, 1},
		{"wrong start", 1, []uint64{2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSequence(tt.first, tt.seqs)
			var se *SequenceError
			switch {
			case tt.bad < 0 && err != nil:
				t.Fatal(err)
			case tt.bad >= 0 && (!errors.As(err, &se) || se.Index != tt.bad || !errors.Is(err, ErrSequence)):
				t.Fatalf("err = %v, want index %d", err, tt.bad)
			}
		})
	}
}

func ExampleCheck() {
	if _, err := Check(Paused, Completed); err != nil {
		fmt.Println(err)
	}
	e, _ := Check(Paused, Aborting)
	fmt.Println(e.Trigger)
	// Output:
	// lifecycle: PAUSED → COMPLETED: invalid state transition
	// caller_abort
}
