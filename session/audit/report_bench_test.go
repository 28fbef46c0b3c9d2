package audit

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/envelope"
)

// weekChain is a week of the kill test's traffic, around the clock: per
// day, sessions alternating leak-check and MoS2 synthesis (gate decision,
// approval, transitions, each action's accepted and executed tool calls),
// the agent SIGKILLed and restarted several times (its start-up writes,
// the operator's approve, arm and resume), refusals, and one trip. It
// returns the entries as they would be appended, and their count.
func weekChain(tb testing.TB, sessionsPerDay, actionsPerSession int) []Entry {
	s := &entrySet{t: tb}
	limit := 1100.0
	for day := range 7 {
		t0 := monday.AddDate(0, 0, day)
		step := 24 * time.Hour / time.Duration(sessionsPerDay+1)
		for i := range sessionsPerDay {
			at := t0.Add(time.Duration(i) * step)
			tick := func() time.Time { at = at.Add(50 * time.Millisecond); return at }
			sid := fmt.Sprintf("s-%d-%03d", day, i)
			capab := "leak-check"
			if i%2 == 1 {
				capab = "cvd-material-synthesis"
			}
			if i%3 == 0 { // a kill and a restart
				s.add(tick(), "", KindControl, map[string]any{"op": "init", "outcome": "done", "instrument": "eurotherm-3216@1",
					"channel": "instrument_mode", "value": 0, "non_volatile": i%9 == 0})
				s.add(tick(), "", KindControl, control("arm", "done", "olga", 1001, nil))
			}
			s.add(tick(), sid, KindGate, map[string]any{"message_id": sid, "caller_id": "harness-alpha-001", "capability": capab,
				"version": "1.0.0", "outcome": "accepted", "risk_level": "R3", "data_classification": "T1"})
			s.add(tick(), sid, KindTransition, map[string]any{"to": "PENDING", "trigger": "submit"})
			s.add(tick(), sid, KindApproval, map[string]any{"decision": "approval_signed", "operator": "olga", "uid": 1001, "user": "olga",
				"signature": 1, "required": 1, "risk_level": "R3", "meaning": "approved for execution"})
			s.add(tick(), sid, KindTransition, map[string]any{"from": "PENDING", "to": "RUNNING", "trigger": "approve"})
			for j := range actionsPerSession {
				a := envelope.SetpointAction(device.Celsius(float64(20 + j%800)))
				if j%7 == 3 {
					a = envelope.FlowAction("Ar", device.Flow(j%100))
				}
				s.interlock(tick(), envelope.Entry{SessionID: sid, Action: &a, Decision: envelope.DecisionAccepted, Envelope: envV})
				s.interlock(tick(), envelope.Entry{SessionID: sid, Action: &a, Decision: envelope.DecisionExecuted, Envelope: envV})
				if j%97 == 50 {
					s.interlock(tick(), envelope.Entry{SessionID: sid, Action: &a, Decision: envelope.DecisionRefused, Rule: envelope.RuleRate,
						Reason: "envelope: furnace.setpoint: max_rate_of_change", Envelope: envV,
						Readings: []envelope.Reading{{Channel: "furnace.setpoint", Value: 30, Limit: &limit, Unit: "celsius/min"},
							{Channel: "furnace.temperature", Value: 873.15, Unit: "K", At: at}, {Channel: "chamber.pressure", Value: 50, Unit: "Pa", At: at}}})
				}
			}
			s.add(tick(), sid, KindTransition, map[string]any{"from": "RUNNING", "to": "COMPLETED", "trigger": "done"})
		}
		read := t0.Add(23 * time.Hour)
		s.interlock(read.Add(40*time.Millisecond), envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripOverTemperature,
			Rule: "immediate_shutdown", Reason: "over_temperature", Envelope: envV,
			Readings: []envelope.Reading{{Channel: "furnace.temperature", Value: 1105, Limit: &limit, Unit: "celsius", At: read}}})
		s.add(read.Add(time.Minute), "", KindControl, control("reset", "done", "olga", 1001, nil))
	}
	return s.out
}

// weekLog stores es in a fresh log, in a few large transactions.
func weekLog(b *testing.B, es []Entry) *Log {
	db, err := bolt.Open(b.TempDir()+"/audit.db", 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	l, err := Open(db, Opts{})
	if err != nil {
		b.Fatal(err)
	}
	for len(es) > 0 {
		n := min(len(es), 5000)
		if err := db.Update(func(tx *bolt.Tx) error {
			for _, e := range es[:n] {
				e.Seq = 0
				if _, err := AppendTx(tx, e); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		es = es[n:]
	}
	return l
}

// BenchmarkReportWeek is `audit report --since 7d` over a week of the kill
// test's traffic (about 40 sessions a day, 300 actions each: some 170,000
// entries): the window read from the log through the time index, each
// entry checked against its hash, summarised by day and printed.
func BenchmarkReportWeek(b *testing.B) {
	es := weekChain(b, 40, 300)
	l := weekLog(b, es)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		got, err := l.Query(ctx, Query{Since: monday, Until: monday.AddDate(0, 0, 7)})
		if err != nil || len(got) != len(es) {
			b.Fatalf("%d of %d entries, %v", len(got), len(es), err)
		}
		r := Build(got, ReportOpts{Since: monday, Until: monday.AddDate(0, 0, 7)})
		if err := r.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(es)), "entries")
}

// BenchmarkReportBuild is Build alone over the same week.
func BenchmarkReportBuild(b *testing.B) {
	es := weekChain(b, 40, 300)
	b.ResetTimer()
	for b.Loop() {
		Build(es, ReportOpts{Since: monday, Until: monday.AddDate(0, 0, 7)})
	}
	b.ReportMetric(float64(len(es)), "entries")
}
