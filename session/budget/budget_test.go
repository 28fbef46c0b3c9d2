package budget

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"sort"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/transport/wire"
)

var t0 = time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func flows(s float64, f map[string]float64) envelope.Readings {
	r := envelope.Readings{At: at(s), Flows: map[string]device.FlowStatus{}}
	for g, v := range f {
		r.Flows[g] = device.FlowStatus{Gas: g, Flow: device.SCCM(v), At: at(s)}
	}
	return r
}

func heater(s, pct float64) envelope.Readings {
	return envelope.Readings{At: at(s), Furnace: device.FurnaceStatus{OutputPower: device.Percent(pct), HeaterEnabled: true, At: at(s)}}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestTrackerIntegratesGasOverIrregularSamples(t *testing.T) {
	tr := NewTracker(Limits{}, State{}, Opts{})
	// 60 sccm for 1 s, then 120 sccm: the interval is charged at the larger
	// rate of its ends (an upper bound), whatever its length.
	tr.Observe(flows(0, map[string]float64{"Ar": 60}))
	tr.Observe(flows(1, map[string]float64{"Ar": 60}))    // 1 s × 60 sccm = 1 scc
	tr.Observe(flows(1.5, map[string]float64{"Ar": 120})) // 0.5 s × 120 = 1 scc
	tr.Observe(flows(4.5, map[string]float64{"Ar": 0}))   // 3 s × 120 = 6 scc
	near(t, "Ar", tr.Usage(at(4.5)).GasVolume["Ar"], 8)
	// Stopped flow adds nothing later.
	near(t, "Ar later", tr.Usage(at(100)).GasVolume["Ar"], 8)
	if tr.Usage(at(4.5)).Estimated {
		t.Error("estimated without a long gap")
	}
}

func TestTrackerScale(t *testing.T) {
	// 300 process seconds per wall second: 1 wall second at 60 sccm is 5 min, 300 scc.
	tr := NewTracker(Limits{}, State{}, Opts{Scale: 300})
	tr.Observe(flows(0, map[string]float64{"H2S": 60}))
	tr.Observe(flows(1, map[string]float64{"H2S": 60}))
	near(t, "H2S", tr.Usage(at(1)).GasVolume["H2S"], 300)
}

func TestTrackerHeaterEnergy(t *testing.T) {
	tr := NewTracker(Limits{HeaterEnergy: 10}, State{}, Opts{})
	tr.Observe(heater(0, 50))
	tr.Observe(heater(2, 100)) // 2 s × 100 % = 2 full-power seconds
	tr.Observe(heater(4, 25))  // 2 s × 100 %
	near(t, "energy", tr.Usage(at(4)).HeaterEnergy, 4)
	// Output out of range is clamped to 0..100 %.
	tr.Observe(heater(5, 250))
	near(t, "energy clamped", tr.Usage(at(5)).HeaterEnergy, 5)
	if err := tr.Check(at(5)); err != nil {
		t.Fatal(err)
	}
	tr.Observe(heater(11, 100))
	err := tr.Check(at(11))
	var ex *ExceededError
	if !errors.As(err, &ex) || !errors.Is(err, ErrExceeded) || ex.Budget != HeaterEnergy || ex.Limit != 10 || ex.Used != 11 {
		t.Fatalf("Check = %v", err)
	}
}

// TestTrackerHeaterEnergyEveryZone: on a rig of several heated zones every
// zone's heater is charged (the zones after the first by name), each from
// its own samples; a checkpoint carries each zone's last sample, so a
// resumed session charges the interval since as the first one would have.
func TestTrackerHeaterEnergyEveryZone(t *testing.T) {
	zones := func(s, first, other float64) envelope.Readings {
		r := heater(s, first)
		r.Zones = map[string]device.FurnaceStatus{"upstream": {OutputPower: device.Percent(other), HeaterEnabled: true, At: at(s)}}
		return r
	}
	tr := NewTracker(Limits{HeaterEnergy: 7}, State{}, Opts{})
	tr.Observe(zones(0, 100, 50))
	tr.Observe(zones(2, 100, 50)) // 2 s × 100 % + 2 s × 50 % = 3
	near(t, "energy", tr.Usage(at(2)).HeaterEnergy, 3)
	near(t, "energy provisional", tr.Usage(at(3)).HeaterEnergy, 4.5) // the last rates until now
	resumed := NewTracker(Limits{HeaterEnergy: 7}, tr.State(), Opts{})
	resumed.Observe(zones(4, 100, 100)) // 2 s × 100 % + 2 s × 100 % (the larger rate of the ends)
	near(t, "energy resumed", resumed.Usage(at(4)).HeaterEnergy, 7)
	resumed.Observe(zones(5, 0, 100))
	var ex *ExceededError
	if err := resumed.Check(at(5)); !errors.As(err, &ex) || ex.Budget != HeaterEnergy {
		t.Fatalf("Check = %v: the two zones' 9 full-power seconds pass the limit of 7", err)
	}
}

func TestTrackerTiesAndOutOfOrder(t *testing.T) {
	tr := NewTracker(Limits{}, State{}, Opts{})
	tr.Observe(flows(0, map[string]float64{"Ar": 60}))
	tr.Observe(flows(0, map[string]float64{"Ar": 120})) // a tie: the larger rate from here on
	tr.Observe(flows(0, map[string]float64{"Ar": 30}))  // a tie with a lower rate changes nothing
	tr.Observe(flows(1, map[string]float64{"Ar": 0}))
	near(t, "after tie", tr.Usage(at(1)).GasVolume["Ar"], 2)
	tr.Observe(flows(0.5, map[string]float64{"Ar": 6000})) // older than the last: ignored
	near(t, "after older", tr.Usage(at(1)).GasVolume["Ar"], 2)
}

func TestTrackerStaleAndMissingReadings(t *testing.T) {
	tr := NewTracker(Limits{GasVolume: map[string]float64{"H2": 10}}, State{}, Opts{MaxGap: 2 * time.Second})
	tr.Observe(flows(0, map[string]float64{"H2": 60}))
	// No reading since: usage keeps growing at the last rate (1 scc/s).
	near(t, "provisional", tr.Usage(at(3)).GasVolume["H2"], 3)
	if err := tr.Check(at(9)); err != nil {
		t.Fatalf("9 scc: %v", err)
	}
	if err := tr.Check(at(11)); !errors.Is(err, ErrExceeded) {
		t.Fatalf("11 scc with the instrument silent: %v", err)
	}
	// The reading after a long gap charges the gap at the larger rate and
	// marks the usage estimated; it never charges less than the provisional.
	tr2 := NewTracker(Limits{}, State{}, Opts{MaxGap: 2 * time.Second})
	tr2.Observe(flows(0, map[string]float64{"H2": 60}))
	prov := tr2.Usage(at(5)).GasVolume["H2"]
	tr2.Observe(flows(5, map[string]float64{"H2": 0}))
	u := tr2.Usage(at(5))
	if u.GasVolume["H2"] < prov || !u.Estimated {
		t.Fatalf("after gap %+v, provisional %v", u, prov)
	}
	// A zero instant (never read) charges nothing; a channel read first
	// after Start is charged back to Start.
	tr3 := NewTracker(Limits{}, State{}, Opts{Start: at(0)})
	tr3.Observe(envelope.Readings{Flows: map[string]device.FlowStatus{"Ar": {Flow: 600}}})
	tr3.Observe(flows(2, map[string]float64{"Ar": 30}))
	near(t, "from start", tr3.Usage(at(2)).GasVolume["Ar"], 1)
}

func TestTrackerActionsAndOrder(t *testing.T) {
	tr := NewTracker(Limits{Actions: 3, GasVolume: map[string]float64{"H2S": 0}}, State{}, Opts{})
	tr.SetActions(3)
	if err := tr.Check(at(0)); err != nil {
		t.Fatal(err)
	}
	tr.SetActions(2) // never fewer
	tr.SetActions(4)
	var ex *ExceededError
	if err := tr.Check(at(0)); !errors.As(err, &ex) || ex.Budget != Actions || ex.Used != 4 {
		t.Fatalf("Check = %v", err)
	}
	// Latched: the first overrun stays the answer.
	tr.Observe(flows(0, map[string]float64{"H2S": 5}))
	tr.Observe(flows(1, map[string]float64{"H2S": 5}))
	if err := tr.Check(at(1)); !errors.As(err, &ex) || ex.Budget != Actions {
		t.Fatalf("Check = %v", err)
	}
	// A gas with a zero budget may not flow at all.
	tr2 := NewTracker(Limits{GasVolume: map[string]float64{"H2S": 0}}, State{}, Opts{})
	tr2.Observe(flows(0, map[string]float64{"H2S": 0, "Ar": 100}))
	if err := tr2.Check(at(1)); err != nil {
		t.Fatal(err)
	}
	tr2.Observe(flows(1, map[string]float64{"H2S": 0.5}))
	if err := tr2.Check(at(1)); !errors.As(err, &ex) || ex.Gas != "H2S" {
		t.Fatalf("Check = %v", err)
	}
}

func TestTrackerStateResumes(t *testing.T) {
	tr := NewTracker(Limits{}, State{}, Opts{})
	tr.Observe(flows(0, map[string]float64{"Ar": 60}))
	tr.Observe(flows(1, map[string]float64{"Ar": 60}))
	tr.Observe(heater(1, 50))
	tr.SetActions(7)
	b, err := json.Marshal(tr.State())
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	// A recovered session does not get a fresh budget; the outage (1 s to
	// 11 s) is charged at the larger rate of its ends.
	re := NewTracker(Limits{}, st, Opts{})
	re.Observe(flows(11, map[string]float64{"Ar": 0}))
	re.Observe(heater(11, 0))
	u := re.Usage(at(11))
	near(t, "Ar", u.GasVolume["Ar"], 11)
	near(t, "heater", u.HeaterEnergy, 5)
	if u.Actions != 7 || !u.Estimated {
		t.Fatalf("usage %+v", u)
	}
}

func TestLimitsTighter(t *testing.T) {
	policy := Limits{Wall: time.Hour, GasVolume: map[string]float64{"Ar": 1000, "H2S": 50}, HeaterEnergy: 100}
	task := Limits{GasVolume: map[string]float64{"H2S": 500, "H2": 5}, HeaterEnergy: 20, Actions: 9}
	got := policy.Tighter(task)
	if got.Wall != time.Hour || got.HeaterEnergy != 20 || got.Actions != 9 ||
		got.GasVolume["Ar"] != 1000 || got.GasVolume["H2S"] != 50 || got.GasVolume["H2"] != 5 {
		t.Fatalf("%+v", got)
	}
	if policy.GasVolume["H2"] != 0 || len(policy.GasVolume) != 2 {
		t.Fatal("Tighter changed its receiver")
	}
	if !(Limits{}).IsZero() || got.IsZero() {
		t.Fatal("IsZero")
	}
}

func TestParseTask(t *testing.T) {
	for _, tc := range []struct {
		name, payload string
		want          Limits
		bad           bool
	}{
		{name: "none", payload: `{"constraints":{"max_duration":"PT1H"}}`},
		{name: "no constraints", payload: `{}`},
		{name: "all", payload: `{"constraints":{"budgets":{"gas_volume_scc":{"H2S":12.5},"heater_full_power_s":600,"max_actions":40}}}`,
			want: Limits{GasVolume: map[string]float64{"H2S": 12.5}, HeaterEnergy: 600, Actions: 40}},
		{name: "zero gas", payload: `{"constraints":{"budgets":{"gas_volume_scc":{"H2":0}}}}`, want: Limits{GasVolume: map[string]float64{"H2": 0}}},
		{name: "unknown key", payload: `{"constraints":{"budgets":{"gas":{"H2":1}}}}`, bad: true},
		{name: "negative gas", payload: `{"constraints":{"budgets":{"gas_volume_scc":{"H2":-1}}}}`, bad: true},
		{name: "empty gas", payload: `{"constraints":{"budgets":{"gas_volume_scc":{"":1}}}}`, bad: true},
		{name: "zero actions", payload: `{"constraints":{"budgets":{"max_actions":0}}}`, bad: true},
		{name: "fractional actions", payload: `{"constraints":{"budgets":{"max_actions":1.5}}}`, bad: true},
		{name: "zero energy", payload: `{"constraints":{"budgets":{"heater_full_power_s":0}}}`, bad: true},
		{name: "string", payload: `{"constraints":{"budgets":"lots"}}`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTask([]byte(tc.payload))
			if tc.bad {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.HeaterEnergy != tc.want.HeaterEnergy || got.Actions != tc.want.Actions || len(got.GasVolume) != len(tc.want.GasVolume) {
				t.Fatalf("got %+v want %+v", got, tc.want)
			}
			for g, v := range tc.want.GasVolume {
				if w, ok := got.GasVolume[g]; !ok || w != v {
					t.Fatalf("got %+v want %+v", got, tc.want)
				}
			}
		})
	}
}

type nopAudit struct{ fail error }

func (a nopAudit) Record(context.Context, envelope.Entry) error { return a.fail }

func TestActionCounter(t *testing.T) {
	c := NewActionCounter()
	a := c.Auditor(nopAudit{})
	act := &envelope.Action{}
	ctx := context.Background()
	for _, e := range []envelope.Entry{
		{SessionID: "s1", Action: act, Decision: envelope.DecisionAccepted},
		{SessionID: "s1", Action: act, Decision: envelope.DecisionExecuted},
		{SessionID: "s1", Action: act, Decision: envelope.DecisionExecuted, TowardSafe: true},
		{SessionID: "s1", Action: act, Decision: envelope.DecisionRefused},
		{SessionID: "s1", Action: act, Decision: envelope.DecisionFailed},
		{SessionID: "s2", Action: act, Decision: envelope.DecisionExecuted},
		{Action: act, Decision: envelope.DecisionExecuted}, // an operator's, no session
		{SessionID: "s1", Decision: envelope.DecisionExecuted},
	} {
		if err := a.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if c.Executed("s1") != 2 || c.Executed("s2") != 1 || c.Executed("s3") != 0 {
		t.Fatalf("s1 %d s2 %d", c.Executed("s1"), c.Executed("s2"))
	}
	// A record that failed is not counted.
	boom := errors.New("disk full")
	if err := c.Auditor(nopAudit{fail: boom}).Record(ctx, envelope.Entry{SessionID: "s2", Action: act, Decision: envelope.DecisionExecuted}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	c.Forget("s1")
	if c.Executed("s1") != 0 || c.Executed("s2") != 1 {
		t.Fatal("Forget")
	}
}

func TestReport(t *testing.T) {
	tr := NewTracker(Limits{Wall: time.Hour, GasVolume: map[string]float64{"H2S": 10}, Actions: 5}, State{}, Opts{})
	tr.Observe(flows(0, map[string]float64{"Ar": 60}))
	tr.Observe(flows(1, map[string]float64{"Ar": 60}))
	tr.SetWall(90 * time.Second)
	r := tr.Report(at(1))
	b, _ := json.Marshal(r)
	want := `{"items":[{"budget":"wall_time","unit":"s","used":90,"limit":3600},{"budget":"actions","unit":"actions","used":0,"limit":5},` +
		`{"budget":"heater_energy","unit":"full_power_s","used":0},{"budget":"gas_volume","gas":"Ar","unit":"scc","used":1},` +
		`{"budget":"gas_volume","gas":"H2S","unit":"scc","used":0,"limit":10}]}`
	if string(b) != want {
		t.Fatalf("report\n%s\nwant\n%s", b, want)
	}
}

// TestWireBudgetsMatchSpec: wire.Budgets (what a Go caller sets in
// constraints.budgets) and Spec (what the agent parses) are one shape:
// a task the caller builds with every field set parses to the limits it
// asked for, and both types have the same JSON fields.
func TestWireBudgetsMatchSpec(t *testing.T) {
	heater, actions := 1200.0, 40
	ts := wire.TaskSubmit{CallerID: "harness-alpha-001", Capability: "cvd-material-synthesis", Intent: "budgets",
		Inputs: json.RawMessage(`{}`), Constraints: &wire.Constraints{Budgets: &wire.Budgets{
			GasVolumeSCC: map[string]float64{"H2S": 50, "Ar": 0}, HeaterFullPowerS: &heater, MaxActions: &actions}}}
	env, err := wire.NewEnvelope(nil, &ts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := wire.Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	back, err := wire.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseTask(back.Payload)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Spec{GasVolume: map[string]float64{"H2S": 50, "Ar": 0}, HeaterFullPower: &heater, MaxActions: &actions}.Limits()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("parsed %+v, want %+v", l, want)
	}
	tags := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			out = append(out, rt.Field(i).Tag.Get("json"))
		}
		sort.Strings(out)
		return out
	}
	if a, b := tags(wire.Budgets{}), tags(Spec{}); !reflect.DeepEqual(a, b) {
		t.Fatalf("wire.Budgets fields %v, Spec fields %v", a, b)
	}
}
