package audit

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
)

var monday = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// entrySet builds entries in chain order with the details their producers
// write.
type entrySet struct {
	t   testing.TB
	out []Entry
}

func (s *entrySet) add(at time.Time, sid string, k Kind, detail any) {
	s.t.Helper()
	var d string
	switch v := detail.(type) {
	case string:
		d = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			s.t.Fatal(err)
		}
		d = string(b)
	}
	s.out = append(s.out, Entry{Seq: uint64(len(s.out) + 1), At: at, SessionID: sid, Kind: k, Detail: d})
}

func (s *entrySet) interlock(at time.Time, e envelope.Entry) {
	e.At = at
	k := KindInterlock
	if e.Decision == envelope.DecisionAccepted || e.Decision == envelope.DecisionExecuted || e.Decision == envelope.DecisionFailed {
		k = KindToolCall
	}
	s.add(at, e.SessionID, k, e)
}

func control(op, outcome, operator string, u uint32, extra map[string]any) map[string]any {
	m := map[string]any{"op": op, "outcome": outcome, "operator": operator, "uid": u, "gid": u, "user": operator}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

const envV = "sha256:0123456789abcdef"

// twoDays is Monday and Tuesday of a rig's week, with every section of
// the report.
func twoDays(t testing.TB) []Entry {
	s := &entrySet{t: t}
	at := func(day, h, m int) time.Time {
		return monday.AddDate(0, 0, day).Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
	}
	limit := 1100.0
	// Monday: the agent starts (its writes), a leak check, an R3 synthesis
	// approved by two people, refusals, a trip, an e-stop and the reset.
	s.add(at(0, 6, 0), "", KindControl, map[string]any{"op": "init", "outcome": "done", "instrument": "eurotherm-3216@1",
		"channel": "instrument_mode", "value": 1, "non_volatile": true, "target": "x"})
	s.add(at(0, 6, 0), "", KindControl, map[string]any{"op": "init", "outcome": "done", "instrument": "eurotherm-3216@1",
		"channel": "heater", "value": 0, "non_volatile": false})
	s.add(at(0, 7, 0), "L1", KindGate, map[string]any{"outcome": "accepted", "capability": "leak-check", "version": "1.0.0"})
	s.add(at(0, 7, 0), "L1", KindTransition, map[string]any{"from": "PENDING", "to": "RUNNING"})
	s.add(at(0, 7, 30), "L1", KindTransition, map[string]any{"from": "RUNNING", "to": "COMPLETED"})
	s.add(at(0, 8, 0), "S1", KindGate, map[string]any{"outcome": "accepted", "capability": "cvd-material-synthesis", "risk_level": "R3"})
	s.add(at(0, 8, 1), "S1", KindApproval, map[string]any{"decision": "approval_signed", "operator": "olga", "uid": 1001, "user": "olga",
		"signature": 1, "required": 2, "risk_level": "R3"})
	s.add(at(0, 8, 2), "S1", KindApproval, map[string]any{"decision": "approval_signed", "operator": "ben", "uid": 1002, "user": "ben",
		"signature": 2, "required": 2, "risk_level": "R3"})
	a := envelope.SetpointAction(device.Celsius(1150))
	for i := range 2 {
		s.interlock(at(0, 9, i), envelope.Entry{SessionID: "S1", Action: &a, Decision: envelope.DecisionRefused, Rule: envelope.RuleMax,
			Reason: "envelope: furnace.setpoint: max (value 1150 celsius, limit 1100 celsius)", Envelope: envV,
			Readings: []envelope.Reading{{Channel: "furnace.setpoint", Value: 1150, Limit: &limit, Unit: "celsius"},
				{Channel: "furnace.temperature", Value: 873.15, Unit: "K"}}})
	}
	h := envelope.HeaterAction(true)
	s.interlock(at(0, 9, 5), envelope.Entry{SessionID: "S1", Action: &h, Decision: envelope.DecisionAccepted, Envelope: envV})
	s.interlock(at(0, 9, 5), envelope.Entry{SessionID: "S1", Action: &h, Decision: envelope.DecisionExecuted, Envelope: envV})
	read := at(0, 10, 0)
	s.interlock(read.Add(42*time.Millisecond), envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripOverTemperature,
		Rule: "immediate_shutdown", Reason: "over_temperature on furnace.temperature: 1105 celsius", Envelope: envV,
		Readings: []envelope.Reading{{Channel: "furnace.temperature", Value: 1105, Limit: &limit, Unit: "celsius", At: read}}})
	s.add(at(0, 10, 5), "", KindControl, control("estop", "done", "olga", 1001, nil))
	s.add(at(0, 10, 30), "", KindControl, control("reset", "done", "olga", 1001, nil))
	s.add(at(0, 10, 31), "", KindControl, control("arm", "done", "olga", 1001, nil))
	// Tuesday: the e-stop button, a refused approval, a question and its
	// answer, a kind the report does not know, a T4 session's refusal, and
	// a refusal written before entries carried versions and readings.
	pressed := at(1, 11, 0)
	s.interlock(pressed.Add(15*time.Millisecond), envelope.Entry{Decision: envelope.DecisionTripped, Trip: envelope.TripEStop,
		Rule: "safe_state", Reason: "estop on input.estop_pressed: pressed", Envelope: envV,
		Readings: []envelope.Reading{{Channel: "input.estop_pressed", Value: 1, At: pressed}}})
	s.add(at(1, 12, 0), "S2", KindControl, control("approve", "refused", "mallory", 1003,
		map[string]any{"role_needed": "approver", "error": "not an approver"}))
	s.add(at(1, 13, 0), "S2", Kind("question_asked"), map[string]any{"checkpoint": "cp-1", "question": "WO3 boat loaded in zone 1?"})
	s.add(at(1, 13, 2), "S2", Kind("question_answered"), map[string]any{"checkpoint": "cp-1", "answer": true, "operator": "olga", "user": "olga"})
	s.add(at(1, 14, 0), "", Kind("frobnicate"), map[string]any{"x": 1})
	s.interlock(at(1, 15, 0), envelope.Entry{SessionID: "S4", Action: &a, Decision: envelope.DecisionRefused, Rule: envelope.RuleMax,
		Reason: "envelope: furnace.setpoint: max (value 1150 celsius, limit 1100 celsius)", Envelope: envV,
		Readings: []envelope.Reading{{Channel: "furnace.setpoint", Value: 1150, Limit: &limit, Unit: "celsius"}}})
	s.add(at(1, 16, 0), "S1", KindInterlock, // as written before this change: no envelope, no readings
		`{"at":"2026-12-01T16:00:00Z","session_id":"S1","action":{"kind":"heater","on":true},"decision":"refused","rule":"heater_requires_vacuum_or_inert_flow","reason":"envelope: furnace.heater: heater_requires_vacuum_or_inert_flow"}`)
	return s.out
}

func withheldT4(sid string) bool { return sid == "S4" }

func TestReportPerDay(t *testing.T) {
	r := Build(twoDays(t), ReportOpts{Since: monday, Until: monday.AddDate(0, 0, 2), Withheld: withheldT4})
	if len(r.Periods) != 2 || r.Period != PeriodDay || r.Entries != 23 {
		t.Fatalf("periods %d, period %s, entries %d", len(r.Periods), r.Period, r.Entries)
	}
	mon, tue := r.Periods[0], r.Periods[1]
	want := Totals{Trips: 1, EStops: 1, Refusals: 2, Approvals: 2, Overrides: 2, LeakChecks: 1, NVWrites: 1}
	if mon.Totals != want {
		t.Fatalf("Monday %+v, want %+v", mon.Totals, want)
	}
	want = Totals{EStops: 1, Refusals: 3, Questions: 2, Other: 1}
	if tue.Totals != want {
		t.Fatalf("Tuesday %+v, want %+v", tue.Totals, want)
	}
	if r.Totals.Trips != 1 || r.Totals.EStops != 2 || r.Totals.Refusals != 5 || r.Totals.Other != 1 {
		t.Fatalf("totals %+v", r.Totals)
	}
	if len(r.Envelopes) != 1 || r.Envelopes[0] != envV {
		t.Fatalf("envelopes %v", r.Envelopes)
	}

	trip := mon.Trips[0]
	if trip.Trip != "over_temperature" || trip.Procedure != "immediate_shutdown" || trip.Reading == nil || trip.Reading.Value != 1105 ||
		trip.ReactionMS != 42 || trip.Envelope != envV {
		t.Fatalf("trip %+v", trip)
	}
	if e := mon.EStops[0]; e.Via != "control socket" || e.Who != "olga" || e.UID == nil || *e.UID != 1001 {
		t.Fatalf("Monday's e-stop %+v", e)
	}
	if e := tue.EStops[0]; e.Via != "e-stop input" || e.ReactionMS != 15 {
		t.Fatalf("Tuesday's e-stop %+v", e)
	}
	if len(mon.Refusals) != 1 || mon.Refusals[0].Rule != "max" || mon.Refusals[0].Count != 2 || len(mon.Refusals[0].Readings) != 2 {
		t.Fatalf("Monday's refusals %+v", mon.Refusals)
	}
	rules := map[string]RuleCount{}
	for _, c := range tue.Refusals {
		rules[c.Rule] = c
	}
	if c := rules["max"]; c.Count != 1 || !c.Withheld || c.Reason != "" || c.Readings != nil {
		t.Fatalf("the T4 session's refusal shows its detail: %+v", c)
	}
	if c := rules["heater_requires_vacuum_or_inert_flow"]; c.Count != 1 || c.Readings != nil || c.Reason == "" {
		t.Fatalf("the old entry's refusal %+v", c)
	}
	if c := rules["control/approve (needs approver)"]; c.Count != 1 {
		t.Fatalf("the refused approval: %+v", tue.Refusals)
	}
	if len(mon.Approvers) != 2 || mon.Approvals[1].Who != "ben" || mon.Approvals[1].Signature != "2 of 2" || mon.Approvals[0].RiskLevel != "R3" {
		t.Fatalf("approvals %+v, approvers %+v", mon.Approvals, mon.Approvers)
	}
	if lc := mon.LeakChecks[0]; lc.SessionID != "L1" || lc.Outcome != "COMPLETED" {
		t.Fatalf("leak check %+v", lc)
	}
	if w := mon.NVWrites[0]; w.Channel != "instrument_mode" || w.Instrument != "eurotherm-3216@1" {
		t.Fatalf("non-volatile write %+v", w)
	}
	if len(mon.Overrides) != 2 || mon.Overrides[0].Op != "reset" || mon.Overrides[1].Op != "arm" {
		t.Fatalf("overrides %+v", mon.Overrides)
	}
	q := tue.Questions
	if q[0].Question != "WO3 boat loaded in zone 1?" || q[0].Checkpoint != "cp-1" || q[1].Answer != "true" || q[1].Who != "olga" {
		t.Fatalf("questions %+v", q)
	}
	if tue.Other[0] != (Count{Name: "frobnicate", Count: 1}) {
		t.Fatalf("other %+v", tue.Other)
	}
}

func TestReportPerWeekAndWindow(t *testing.T) {
	es := twoDays(t)
	r := Build(es, ReportOpts{Since: monday.Add(12 * time.Hour), Until: monday.AddDate(0, 0, 3), Period: PeriodWeek})
	if len(r.Periods) != 1 || !r.Periods[0].Start.Equal(monday) || !r.Periods[0].End.Equal(monday.AddDate(0, 0, 7)) {
		t.Fatalf("periods %+v", r.Periods)
	}
	if r.Totals.Trips != 0 || r.Totals.EStops != 1 || r.Totals.NVWrites != 0 || r.Totals.Questions != 2 {
		t.Fatalf("Monday noon on: %+v", r.Totals)
	}
	// A zone east of UTC: Monday 00:30 there is Sunday in UTC.
	loc := time.FixedZone("UTC+2", 2*3600)
	r = Build(es, ReportOpts{Location: loc})
	if r.Since.IsZero() || len(r.Periods) != 2 || r.Periods[0].Start.In(loc).Hour() != 0 {
		t.Fatalf("from the entries, in %s: %+v", loc, r.Periods)
	}
	if r := Build(nil, ReportOpts{}); r.Entries != 0 || len(r.Periods) != 0 {
		t.Fatalf("nothing: %+v", r)
	}
}

func TestReportRenders(t *testing.T) {
	r := Build(twoDays(t), ReportOpts{Since: monday, Until: monday.AddDate(0, 0, 2), Withheld: withheldT4})
	var txt, js, page bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"over_temperature", "furnace.temperature 1105 celsius (limit 1100)", "42.0 ms", "olga", "approvers",
		"instrument_mode", "frobnicate", "[withheld: a T3/T4 session]", envV} {
		if !strings.Contains(txt.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, txt.String())
		}
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Totals != r.Totals || len(back.Periods) != 2 {
		t.Fatalf("JSON round trip: %v %+v", err, back.Totals)
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	if !strings.HasPrefix(h, "<!DOCTYPE html>") || !strings.Contains(h, "<table>") || strings.Contains(h, "<script") ||
		strings.Contains(h, "src=") || strings.Contains(h, "href=") {
		t.Fatalf("not a self-contained page:\n%s", h)
	}
	if !strings.Contains(h, "WO3 boat loaded in zone 1?") || !strings.Contains(h, "furnace.temperature 873.15 K") {
		t.Fatalf("page lacks the question:\n%s", h)
	}
}

func TestReportEscapesHTML(t *testing.T) {
	s := &entrySet{t: t}
	s.add(monday.Add(time.Hour), "", KindControl, control("reset", "done", "<script>alert(1)</script>", 1, nil))
	var page bytes.Buffer
	if err := Build(s.out, ReportOpts{}).WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "<script>") || !strings.Contains(page.String(), "&lt;script&gt;") {
		t.Fatalf("an operator's name reaches the page unescaped:\n%s", page.String())
	}
}

// TestOldChainStillVerifies: the canonical encoding that hashes an entry
// is unchanged (a known answer for an entry written before versions and
// readings), and a chain mixing entries from before and after verifies and
// reports both.
func TestOldChainStillVerifies(t *testing.T) {
	old := Entry{Seq: 7, At: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), SessionID: "S1", Kind: KindInterlock,
		Detail: `{"at":"2026-11-22T08:00:00Z","session_id":"S1","decision":"refused","rule":"max","reason":"envelope: furnace.setpoint: max"}`}
	old.Prev[0] = 1
	if got := hex.EncodeToString(func() []byte { h := Sum(old); return h[:] }()); got != oldEntryHash {
		t.Fatalf("Sum of an old entry = %s, want %s: old chains no longer verify", got, oldEntryHash)
	}

	ctx := context.Background()
	_, l := newLog(t)
	for _, e := range twoDays(t) {
		if _, err := l.Append(ctx, Entry{At: e.At, SessionID: e.SessionID, Kind: validOr(e.Kind), Detail: e.Detail}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := l.Verify(ctx); err != nil || n != 23 {
		t.Fatalf("Verify = %d, %v", n, err)
	}
	es, err := l.Query(ctx, Query{Since: monday})
	if err != nil {
		t.Fatal(err)
	}
	r := Build(es, ReportOpts{Since: monday, Until: monday.AddDate(0, 0, 2)})
	if r.Totals.Refusals != 5 || r.Totals.Trips != 1 {
		t.Fatalf("from the log: %+v", r.Totals)
	}
}

// oldEntryHash is Sum of TestOldChainStillVerifies' entry, computed before
// entries carried the envelope's version and readings.
const oldEntryHash = "63a3b9386ff55c0a0cc5e36b27aaded474651734cb2f1e879c8e8811768779ac"

// validOr maps kinds the log does not accept yet (the fixture's questions
// and unknown kind) to control, so that the fixture can be stored.
func validOr(k Kind) Kind {
	if k.Valid() {
		return k
	}
	return KindControl
}
