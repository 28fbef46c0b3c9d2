package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

// summaryOf is the execution_summary of the session's final message.
func summaryOf(t *testing.T, h *harness, id string) *wire.ExecutionSummary {
	t.Helper()
	msgs := h.out.of(id, nil)
	last := msgs[len(msgs)-1]
	switch last.Type {
	case wire.TypeTaskCompleted:
		p, err := last.TaskCompleted()
		if err != nil {
			t.Fatal(err)
		}
		return p.ExecutionSummary
	case wire.TypeTaskFailed:
		p, err := last.TaskFailed()
		if err != nil {
			t.Fatal(err)
		}
		return p.ExecutionSummary
	}
	t.Fatalf("session ended with %s", last.Type)
	return nil
}

// TestRiskEvents: a trip and an e-stop of the rig while the session runs,
// and its own refused and failed actions, are its risk events, each with
// its time; a refusal of another session and a trip before it are not.
func TestRiskEvents(t *testing.T) {
	ctx := context.Background()
	h, _ := fakeHarness(t, 20, 10*time.Millisecond, nil)
	il := audit.Interlock{Log: h.st.Audit()}
	record := func(e envelope.Entry) time.Time {
		t.Helper()
		if e.At.IsZero() {
			e.At = time.Now()
		}
		if err := il.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e.At
	}
	record(envelope.Entry{At: time.Now().Add(-time.Second), Decision: envelope.DecisionTripped, Trip: envelope.TripEStop, Reason: "before the session"})
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	// Held between two steps while the rig's record is written.
	if err := h.e.Pause(ctx, res.SessionID, "olga"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, res.SessionID, lifecycle.Paused)
	heater := envelope.HeaterAction(true)
	tripAt := record(envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripOverTemperature,
		Rule: "immediate_shutdown", Reason: "over_temperature on furnace.temperature: 912 > 900"})
	refusedAt := record(envelope.Entry{SessionID: res.SessionID, Action: &heater, Decision: envelope.DecisionRefused,
		Rule: envelope.RuleLatched, Reason: "latched by over_temperature"})
	record(envelope.Entry{SessionID: "another-session", Action: &heater, Decision: envelope.DecisionRefused, Rule: envelope.RuleLatched})
	haltAt := record(envelope.Entry{Decision: envelope.DecisionHalted, Reason: "e-stop by olga"})
	failedAt := record(envelope.Entry{SessionID: res.SessionID, Action: &heater, Decision: envelope.DecisionFailed, Reason: "read-back 0"})
	record(envelope.Entry{SessionID: res.SessionID, Action: &heater, Decision: envelope.DecisionExecuted})
	if err := h.e.Resume(ctx, res.SessionID, "olga"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, res.SessionID, lifecycle.Completed)

	got := summaryOf(t, h, res.SessionID).RiskEvents
	want := []string{
		wire.FormatTimestamp(tripAt) + " trip_over_temperature: over_temperature on furnace.temperature: 912 > 900",
		wire.FormatTimestamp(refusedAt) + " refused_latched: latched by over_temperature",
		wire.FormatTimestamp(haltAt) + " safe_state: e-stop by olga",
		wire.FormatTimestamp(failedAt) + " action_failed: read-back 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("risk_events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRiskEventsNone: a run without any leaves risk_events out (empty).
func TestRiskEventsNone(t *testing.T) {
	h, _ := fakeHarness(t, 2, time.Millisecond, nil)
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	h.waitState(t, res.SessionID, lifecycle.Completed)
	s := summaryOf(t, h, res.SessionID)
	if s.RiskEvents != nil || s.StepsExecuted != 2 || s.CheckpointsCreated != 2 || s.Duration == "" {
		t.Fatalf("summary %+v", s)
	}
}
