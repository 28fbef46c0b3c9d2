package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
	"hcp-edge/transport/wire"
)

// TestTripInRiskEvents: the seed's MoS2 task runs; a gas leak trips the
// monitor while it does; the session fails and its task_failed's
// execution_summary.risk_events lists the trip, with the time the
// interlock recorded it (after the leak, before the final message).
func TestTripInRiskEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator, tripped")
	}
	t.Parallel()
	e := newEnv(t, nil)
	e.start()
	e.arm()
	watch := e.cliAsync("submit", seedTask, "--watch")
	pending := e.waitSession("pending approval", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
	e.mustCLI("approve", pending.ApprovalID, "--operator", "olga")
	e.waitSession("running with progress", func(s sessionView) bool {
		return s.ID == pending.ID && s.State == "RUNNING" && s.Progress != nil
	})
	leak := time.Now()
	if err := e.p.Inject(plant.FaultGasLeak, ""); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-watch:
	case <-time.After(2 * time.Minute):
		t.Fatal("submit --watch did not end")
	}
	fin := decodeFinal(t, r)
	tf, err := fin.TaskFailed()
	if err != nil || tf.ExecutionSummary == nil {
		t.Fatalf("final %s: %v\n%s", fin.Type, err, r.stdout)
	}
	t.Logf("task_failed %s: %s; risk_events %q", tf.ErrorCode, tf.ErrorMessage, tf.ExecutionSummary.RiskEvents)
	found := false
	for _, ev := range tf.ExecutionSummary.RiskEvents {
		at, rest, _ := strings.Cut(ev, " ")
		if !strings.HasPrefix(rest, "trip_gas_leak_detected: ") && !strings.HasPrefix(rest, "latched: ") {
			continue
		}
		ts, derr := wire.ParseTimestamp(at)
		if derr != nil || ts.Before(leak.Truncate(time.Millisecond)) || ts.After(fin.Timestamp) {
			t.Fatalf("risk event %q: time %v (%v) not between the leak %v and the final message %v", ev, ts, derr, leak, fin.Timestamp)
		}
		found = found || strings.HasPrefix(rest, "trip_gas_leak_detected: ")
	}
	if !found {
		out := e.mustCLI("audit", "replay", pending.ID, "--operator", "olga").stdout
		t.Fatalf("no trip_gas_leak_detected among the risk events %q\naudit:\n%s", tf.ExecutionSummary.RiskEvents, out)
	}
	if err := e.p.Clear(plant.FaultGasLeak, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
}

// TestExpectedOutputRefusedThroughBroker: the seed's task with an
// expected_output its capability cannot meet (a schema that does not
// compile; a required property the output never declares) is refused at
// submit: the caller gets task_rejected invalid_input naming the place,
// and no session is created.
func TestExpectedOutputRefusedThroughBroker(t *testing.T) {
	t.Parallel()
	b := newBrokerEnv(t)
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	c := b.client(nil)
	defer c.Close()
	for _, tc := range []struct{ name, schema, want string }{
		{"does not compile", `{"type":"objekt"}`, "/expected_output/schema"},
		{"never produced", `{"type":"object","required":["layer_count","bandgap_ev"]}`, `"bandgap_ev" is never produced`},
	} {
		ts := seedSubmit(t)
		ts.CallerID = b.callerID
		ts.ExpectedOutput.Schema = json.RawMessage(tc.schema)
		task, err := c.Submit(context.Background(), ts)
		if err != nil {
			t.Fatal(err)
		}
		msgs := collect(t, task, hangGuard)
		rj, err := msgs[len(msgs)-1].TaskRejected()
		if err != nil || rj.ReasonCode != wire.ReasonInvalidInput || !strings.Contains(rj.ReasonMessage, tc.want) {
			t.Fatalf("%s: %s %+v (%v), want task_rejected invalid_input naming %s", tc.name, msgs[len(msgs)-1].Type, rj, err, tc.want)
		}
		t.Logf("%s: %s: %s", tc.name, rj.ReasonCode, rj.ReasonMessage)
	}
	if ss := b.sessionsJSON(); len(ss) != 0 {
		t.Fatalf("sessions after the refusals: %+v", ss)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}
