package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/audit"
	"hcp-edge/session/audit/audittest"
	"hcp-edge/session/store"
)

// reportState writes a state file whose audit log holds a Monday of the
// rig: a T1 and a T4 session each refused a setpoint above the limit, an
// over-temperature trip, an e-stop and an approval.
func reportState(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, rigconfig.StateFile), store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	var es []audit.Entry
	add := func(at time.Duration, sid string, k audit.Kind, d any) {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, audit.Entry{At: day.Add(at), SessionID: sid, Kind: k, Detail: string(b)})
	}
	defer func() { // in time order, as the agent appends them
		slices.SortStableFunc(es, func(a, b audit.Entry) int { return a.At.Compare(b.At) })
		for _, e := range es {
			if _, err := st.Audit().Append(context.Background(), e); err != nil {
				t.Fatal(err)
			}
		}
	}()
	limit := 1100.0
	a := envelope.SetpointAction(device.Celsius(1150))
	for _, s := range []struct{ id, class string }{{"s-t1", "T1"}, {"s-t4", "T4"}} {
		add(8*time.Hour, s.id, audit.KindGate, map[string]any{"outcome": "accepted", "capability": "cvd-material-synthesis", "data_classification": s.class})
		add(9*time.Hour, s.id, audit.KindInterlock, envelope.Entry{SessionID: s.id, Action: &a, Decision: envelope.DecisionRefused,
			Rule: envelope.RuleMax, Reason: "envelope: furnace.setpoint: max (value 1150 celsius, limit 1100 celsius)", Envelope: "sha256:00112233aabbccdd",
			Readings: []envelope.Reading{{Channel: "furnace.setpoint", Value: 1150, Limit: &limit, Unit: "celsius"}}})
	}
	h := envelope.HeaterAction(true)
	add(9*time.Hour-10*time.Minute, "s-t1", audit.KindInterlock, envelope.Entry{SessionID: "s-t1", Action: &h, Decision: envelope.DecisionRefused,
		Rule: envelope.RuleHeater, Reason: "envelope: furnace.heater: heater_requires_vacuum_or_inert_flow (value 1013 mbar, limit 10 mbar)",
		Envelope: "sha256:00112233aabbccdd", Readings: []envelope.Reading{{Channel: "furnace.heater", Value: 1013, Limit: ptr(10.0), Unit: "mbar"},
			{Channel: "furnace.temperature", Value: 296.4, Unit: "K"}, {Channel: "chamber.pressure", Value: 101300, Unit: "Pa"}, {Channel: "flow.Ar", Value: 0, Unit: "sccm"}}})
	add(8*time.Hour+time.Minute, "s-t1", audit.KindApproval, map[string]any{"decision": "approval_signed", "operator": "olga", "uid": 1001,
		"user": "olga", "signature": 1, "required": 1})
	read := day.Add(10 * time.Hour)
	add(10*time.Hour+30*time.Millisecond, "", audit.KindInterlock, envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripOverTemperature,
		Rule: "immediate_shutdown", Reason: "over_temperature on furnace.temperature", Envelope: "sha256:00112233aabbccdd",
		Readings: []envelope.Reading{{Channel: "furnace.temperature", Value: 1105, Limit: &limit, Unit: "celsius", At: read}}})
	add(11*time.Hour, "", audit.KindControl, map[string]any{"op": "estop", "outcome": "done", "operator": "ben", "uid": 1002, "user": "ben"})
	// Around them: the agent's start-up write, a leak check, the reset and
	// the arming after the trip; on Tuesday, the e-stop button.
	add(6*time.Hour, "", audit.KindControl, map[string]any{"op": "init", "outcome": "done", "instrument": "eurotherm-3216@1",
		"channel": "instrument_mode", "value": 0, "non_volatile": true})
	add(7*time.Hour, "s-leak", audit.KindGate, map[string]any{"outcome": "accepted", "capability": "leak-check", "data_classification": "T1"})
	add(7*time.Hour, "s-leak", audit.KindTransition, map[string]any{"from": "PENDING", "to": "RUNNING"})
	add(7*time.Hour+25*time.Minute, "s-leak", audit.KindTransition, map[string]any{"from": "RUNNING", "to": "COMPLETED"})
	for i, op := range []string{"reset", "arm"} {
		add(11*time.Hour+time.Duration(10+i)*time.Minute, "", audit.KindControl, map[string]any{"op": op, "outcome": "done", "operator": "ben",
			"uid": 1002, "user": "ben"})
	}
	pressed := day.Add(35 * time.Hour)
	add(35*time.Hour+12*time.Millisecond, "", audit.KindInterlock, envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripEStop,
		Rule: "safe_state", Reason: "estop on input.estop_pressed: pressed", Envelope: "sha256:00112233aabbccdd",
		Readings: []envelope.Reading{{Channel: "input.estop_pressed", Value: 1, At: pressed}}})
	return dir
}

func ptr(v float64) *float64 { return &v }

func TestAuditReportFormats(t *testing.T) {
	dir := reportState(t)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Audit(context.Background(), append([]string{"report", "--state-dir", dir, "--since", "2026-11-30T00:00:00Z",
			"--until", "2026-12-01T00:00:00Z"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := run()
	if code != ExitOK {
		t.Fatalf("text: exit %d\n%s%s", code, out, errs)
	}
	for _, s := range []string{"1 trip, 1 e-stop, 3 refusals, 1 approval", "over_temperature", "furnace.temperature 1105 celsius (limit 1100)",
		"30.0 ms", "control socket", "ben", "olga", "sha256:00112233aabbccdd", "furnace.heater 1013 mbar (limit 10); +3 in the snapshot"} {
		if !strings.Contains(out, s) {
			t.Errorf("text lacks %q:\n%s", s, out)
		}
	}

	code, out, errs = run("--format", "json")
	if code != ExitOK {
		t.Fatalf("json: exit %d\n%s%s", code, out, errs)
	}
	var r audit.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	// Periods start at local midnight: one or two days hold the UTC day.
	if r.Totals.Trips != 1 || r.Totals.EStops != 1 || r.Totals.Refusals != 3 || r.Totals.Approvals != 1 || len(r.Periods) < 1 || len(r.Periods) > 2 {
		t.Fatalf("json totals %+v, %d periods", r.Totals, len(r.Periods))
	}
	// The T4 session's refusal is the newest of rule max: counted, its
	// reason and readings withheld.
	p := r.Periods[0]
	if len(p.Refusals) == 0 { // a zone west of UTC: Monday's morning is the second period
		p = r.Periods[len(r.Periods)-1]
	}
	if len(p.Refusals) == 0 || p.Refusals[0].Rule != "max" || p.Refusals[0].Count != 2 || !p.Refusals[0].Withheld ||
		p.Refusals[0].Reason != "" || p.Refusals[0].Readings != nil {
		t.Fatalf("refusals %+v", p.Refusals)
	}
	if code, out2, _ := run("--json"); code != ExitOK || out2 != out {
		t.Fatalf("--json is not --format json: exit %d", code)
	}

	code, out, errs = run("--format", "html", "--period", "week")
	if code != ExitOK || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "week of") || !strings.Contains(out, "over_temperature") {
		t.Fatalf("html: exit %d\n%s%s", code, out, errs)
	}

	for _, bad := range [][]string{{"--format", "pdf"}, {"--period", "month"}, {"--since", "soonish"}, {"--until", "2026-11-29"}, {"extra"}} {
		if code, _, errs := run(bad...); code != ExitUsage || !strings.Contains(errs, "hcp-edge audit report") {
			t.Errorf("%v: exit %d, %s", bad, code, errs)
		}
	}
}

// BenchmarkAuditReportWeek is the whole command, `hcp-edge audit report
// --since 7d` on a state file (the daemon down), over a week of the kill
// test's traffic (audittest.Week: some 170,000 entries): open the file,
// read the window, classify its sessions, build and print the report.
func BenchmarkAuditReportWeek(b *testing.B) {
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, rigconfig.StateFile), store.DefaultOpts())
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	es := audittest.Week(start, 40, 300)
	for rest := es; len(rest) > 0; {
		n := min(len(rest), 5000)
		if err := st.Update(context.Background(), func(w *store.Tx) error {
			for _, e := range rest[:n] {
				if _, err := w.Audit(context.Background(), e); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	args := []string{"report", "--state-dir", dir, "--since", start.Format(time.RFC3339), "--until", start.AddDate(0, 0, 7).Format(time.RFC3339)}
	b.ResetTimer()
	for b.Loop() {
		var out, errb bytes.Buffer
		if code := Audit(context.Background(), args, &out, &errb); code != ExitOK || !strings.Contains(out.String(), "7 trips") {
			b.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
		}
	}
	b.ReportMetric(float64(len(es)), "entries")
}
