package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/capability"
)

// Capability names of the small executors.
const (
	RigStatusName = "rig-status"
	LeakCheckName = "leak-check"
)

// RigStatus is the executor of rig-status (R1): one snapshot of the
// readings, nothing moved.
type RigStatus struct{ capab *capability.Capability }

var _ Executor = (*RigStatus)(nil)

// NewRigStatus returns the executor of the rig-status declaration.
func NewRigStatus(capab *capability.Capability) (*RigStatus, error) {
	if capab == nil || capab.Name != RigStatusName {
		return nil, fmt.Errorf("executor: NewRigStatus needs the %s declaration", RigStatusName)
	}
	return &RigStatus{capab: capab}, nil
}

// Capability returns RigStatusName.
func (s *RigStatus) Capability() string { return RigStatusName }

// Plan parses the include list.
func (s *RigStatus) Plan(t Task) (Recipe, error) {
	var in struct {
		Include []string `json:"include"`
	}
	if len(t.Inputs) > 0 {
		if err := json.Unmarshal(t.Inputs, &in); err != nil {
			return nil, inputErr("inputs: %v", err)
		}
	}
	return &statusRecipe{capab: s.capab, include: in.Include, exp: t.ExpectedOutput}, nil
}

// Resume plans again: a snapshot has nothing to resume.
func (s *RigStatus) Resume(t Task, _ []byte) (Recipe, int, error) {
	r, err := s.Plan(t)
	return r, 0, err
}

// zoneStatus is a zone's controller as rig-status reports it (a null
// temperature on a sensor break).
func zoneStatus(f device.FurnaceStatus) map[string]any {
	var t any
	if f.Alarms&device.AlarmSensorBreak == 0 && device.Finite(float64(f.ProcessValue)) {
		t = round3(f.ProcessValue.Celsius())
	}
	return map[string]any{"temperature_c": t, "setpoint_c": round3(f.Setpoint.Celsius()),
		"ramp_rate_c_per_min": float64(f.RampRate), "heater_enabled": f.HeaterEnabled}
}

type statusRecipe struct {
	capab   *capability.Capability
	include []string
	exp     *ExpectedOutput
	out     map[string]any
}

func (r *statusRecipe) Steps() []Step {
	return []Step{{Name: "snapshot", Stage: "snapshot", Description: "read every instrument once", Estimate: time.Second}}
}

func (r *statusRecipe) want(part string) bool {
	return len(r.include) == 0 || slices.Contains(r.include, part)
}

func (r *statusRecipe) Run(ctx context.Context, i int, env *Env) error {
	if i != 0 {
		return fmt.Errorf("executor: %s has no step %d", RigStatusName, i)
	}
	rd := env.Rig.Readings(ctx)
	env2 := env.Rig.Envelope()
	fresh := func(at time.Time) bool {
		return !at.IsZero() && rd.At.Sub(at) <= env2.MaxReadingAge() && at.Sub(rd.At) <= env2.MaxReadingAge()
	}
	stale := []string{}
	out := map[string]any{"taken_at": rd.At.UTC().Format(time.RFC3339Nano)}
	if r.want("furnace") {
		if f := rd.Furnace; fresh(f.At) {
			out["furnace"] = zoneStatus(f)
		} else {
			stale = append(stale, "furnace")
		}
		if zs := logZones(env2); zs != nil { // a rig of several: every zone's by name
			zones := map[string]any{}
			for _, z := range zs {
				if f, _ := env2.ZoneReading(rd, z); fresh(f.At) {
					zones[z] = zoneStatus(f)
				} else {
					stale = append(stale, z)
				}
			}
			out["zones"] = zones
		}
	}
	if r.want("pressure") {
		p := rd.Pressure
		if fresh(p.At) {
			var v any
			if pa, ok := pressurePa(rd); ok {
				v = round3(pa)
			}
			out["pressure"] = map[string]any{"value_pa": v, "sensor_status": p.Status.String()}
		} else {
			stale = append(stale, "gauge")
		}
	}
	if r.want("flows") {
		flows := map[string]any{}
		for _, g := range env2.Spec().Gases {
			fs, ok := rd.Flows[g.Gas]
			if !ok || !fresh(fs.At) {
				stale = append(stale, "flow."+g.Gas)
				continue
			}
			flows[g.Gas] = map[string]any{"setpoint_sccm": round3(fs.Setpoint.SCCM()), "actual_sccm": round3(fs.Flow.SCCM())}
		}
		out["flows"] = flows
	}
	levels := func(part, prefix string, names []string, m map[string]envelope.Level) {
		if !r.want(part) {
			return
		}
		got := map[string]any{}
		for _, n := range names {
			l, ok := m[n]
			if !ok || !fresh(l.At) {
				stale = append(stale, prefix+n)
				continue
			}
			got[n] = l.On
		}
		out[part] = got
	}
	var sw []string
	for _, s := range env2.Spec().Switches {
		sw = append(sw, s.Name)
	}
	levels("switches", "switch.", sw, rd.Switches)
	levels("inputs", "input.", env2.Spec().Inputs, rd.Inputs)
	if r.want("interlock") {
		latched, why := env.Rig.Latched()
		il := map[string]any{"latched": latched}
		if why != "" {
			il["reason"] = why
		}
		out["interlock"] = il
	}
	if len(stale) > 0 {
		out["stale"] = stale
	}
	r.out = out
	return nil
}

func (r *statusRecipe) Finish(ctx context.Context, env *Env) (*Result, error) {
	if r.out == nil {
		return nil, fmt.Errorf("%w: no snapshot", ErrResult)
	}
	if err := validateOutputs(r.capab, r.out, r.exp); err != nil {
		return nil, err
	}
	return &Result{Outputs: r.out}, nil
}

func (r *statusRecipe) State() ([]byte, error)                    { return []byte(`{}`), nil }
func (r *statusRecipe) Partial(*Env) (map[string]any, []Artifact) { return map[string]any{}, nil }
func (r *statusRecipe) Cleanup(context.Context, *Env) error       { return nil }

// LeakCheck is the executor of leak-check (R2): pump down, isolate, measure
// the rate of rise, pass or fail against a threshold.
type LeakCheck struct{ capab *capability.Capability }

var _ Executor = (*LeakCheck)(nil)

// NewLeakCheck returns the executor of the leak-check declaration.
func NewLeakCheck(capab *capability.Capability) (*LeakCheck, error) {
	if capab == nil || capab.Name != LeakCheckName {
		return nil, fmt.Errorf("executor: NewLeakCheck needs the %s declaration", LeakCheckName)
	}
	return &LeakCheck{capab: capab}, nil
}

// Capability returns LeakCheckName.
func (l *LeakCheck) Capability() string { return LeakCheckName }

type leakPlan struct {
	BasePa      float64       `json:"base_pressure_pa"`
	Timeout     time.Duration `json:"pump_down_timeout_ns"`
	Hold        time.Duration `json:"hold_ns"`
	MaxRate     float64       `json:"max_rate_of_rise_pa_per_min"`
	Next        int           `json:"next"`
	PumpDownS   float64       `json:"pump_down_seconds"`
	Rate        float64       `json:"rate"`
	P0, P1      float64
	Measured    bool
	Rows        []LogRow        `json:"rows"`
	ExpectedOut *ExpectedOutput `json:"expected_output,omitempty"`
	// Samples are the gauge readings of the hold, for the plot.
	Samples []pressureSample `json:"samples,omitempty"`
}

// Plan reads the inputs with the declaration's defaults.
func (l *LeakCheck) Plan(t Task) (Recipe, error) {
	in := struct {
		Base    *float64 `json:"base_pressure_pa"`
		Timeout *int     `json:"pump_down_timeout_seconds"`
		Hold    *int     `json:"hold_seconds"`
		MaxRate *float64 `json:"max_rate_of_rise_pa_per_min"`
	}{}
	if len(t.Inputs) > 0 {
		if err := json.Unmarshal(t.Inputs, &in); err != nil {
			return nil, inputErr("inputs: %v", err)
		}
	}
	p := leakPlan{BasePa: 5, Timeout: 900 * time.Second, Hold: 300 * time.Second, MaxRate: 1, ExpectedOut: t.ExpectedOutput}
	if in.Base != nil {
		p.BasePa = *in.Base
	}
	if in.Timeout != nil {
		p.Timeout = time.Duration(*in.Timeout) * time.Second
	}
	if in.Hold != nil {
		p.Hold = time.Duration(*in.Hold) * time.Second
	}
	if in.MaxRate != nil {
		p.MaxRate = *in.MaxRate
	}
	if !(p.BasePa > 0) || p.Timeout <= 0 || p.Hold <= 0 || !(p.MaxRate > 0) {
		return nil, inputErr("leak-check inputs must be positive")
	}
	return &leakRecipe{capab: l.capab, plan: p}, nil
}

// Resume restarts from the last completed step.
func (l *LeakCheck) Resume(_ Task, state []byte) (Recipe, int, error) {
	var p leakPlan
	if err := json.Unmarshal(state, &p); err != nil {
		return nil, 0, fmt.Errorf("executor: %s: checkpoint state unreadable: %v", LeakCheckName, err)
	}
	r := &leakRecipe{capab: l.capab, plan: p}
	r.rows, r.logged = p.Rows, len(p.Rows)
	return r, p.Next, nil
}

type leakRecipe struct {
	proc
	capab *capability.Capability
	plan  leakPlan
}

func (r *leakRecipe) Steps() []Step {
	return []Step{
		{Name: "preflight", Stage: "preparation", Description: "gases off, vent closed", Estimate: 0},
		{Name: "pump_down", Stage: "vacuum", Description: fmt.Sprintf("pump below %g Pa", r.plan.BasePa), Estimate: 3 * time.Minute},
		{Name: "rate_of_rise", Stage: "leak_check", Description: fmt.Sprintf("isolate for %v", r.plan.Hold), Estimate: r.plan.Hold},
		{Name: "restore", Stage: "leak_check", Description: "reopen the pump", Estimate: 0},
	}
}

func (r *leakRecipe) Run(ctx context.Context, i int, env *Env) error {
	if err := env.defaults(); err != nil {
		return err
	}
	r.begin(env)
	n := namesOf(env.Rig.Envelope())
	var err error
	switch i {
	case 0:
		var rd envelope.Readings
		if rd, err = r.read(ctx, "preflight", true); err == nil {
			if err = readyFresh(rd, env.Rig.Envelope().Spec().Roles.Door, env.Rig.Envelope().MaxReadingAge()); err == nil {
				err = cleanupReactive(ctx, env, n)
			}
		}
	case 1:
		t0 := env.Clock.Now()
		if err = pumpDown(ctx, &r.proc, n, "pump_down", r.plan.BasePa, r.plan.Timeout); err == nil {
			r.plan.PumpDownS = round3(env.Clock.Now().Sub(t0).Seconds())
		}
	case 2:
		var m leakMeasure
		r.onRead = r.sample("rate_of_rise")
		m, err = leakRate(ctx, &r.proc, n, "rate_of_rise", r.plan.Hold)
		r.onRead = nil
		if err == nil {
			r.plan.Rate, r.plan.P0, r.plan.P1, r.plan.Measured = m.Rate, m.P0, m.P1, true
			r.log(ctx, "info", "rate of rise", m.details())
		}
	case 3:
		err = r.applyAll(ctx, envelope.SwitchAction(n.gate, true))
	default:
		err = fmt.Errorf("executor: %s has no step %d", LeakCheckName, i)
	}
	if err == nil {
		r.plan.Next = i + 1
	}
	return err
}

func (r *leakRecipe) outputs() map[string]any {
	prof := []map[string]any{}
	for _, row := range r.rows {
		if row.PressurePa != nil {
			prof = append(prof, map[string]any{"elapsed_seconds": row.Elapsed, "pressure_pa": *row.PressurePa})
		}
	}
	return map[string]any{"passed": r.plan.Rate <= r.plan.MaxRate, "base_pressure_pa": round3(r.plan.P0),
		"final_pressure_pa": round3(r.plan.P1), "rate_of_rise_pa_per_min": round3(r.plan.Rate),
		"hold_seconds": r.plan.Hold.Seconds(), "pump_down_seconds": r.plan.PumpDownS, "pressure_profile": prof}
}

func (r *leakRecipe) Finish(ctx context.Context, env *Env) (*Result, error) {
	if !r.plan.Measured {
		return nil, fmt.Errorf("%w: no measurement", ErrResult)
	}
	out := r.outputs()
	if err := validateOutputs(r.capab, out, r.plan.ExpectedOut); err != nil {
		return nil, err
	}
	res := &Result{Outputs: out, Warnings: r.warns}
	if env.ArtifactDir != "" { // the engine always gives one
		a, err := writeArtifact(env, leakSVGName, leakSVGFile, svgType,
			leakSVG(r.plan.Samples, r.plan.P0, r.plan.P1, out["rate_of_rise_pa_per_min"].(float64), r.plan.MaxRate, out["passed"] == true))
		if err != nil {
			return nil, err
		}
		res.Artifacts = append(res.Artifacts, a)
	}
	return res, nil
}

// sample returns the read hook that collects the hold's gauge readings (one
// per reading: a cached snapshot read twice counts once).
func (r *leakRecipe) sample(stage string) func(string, envelope.Readings) {
	var last time.Time
	return func(st string, rd envelope.Readings) {
		pa, ok := pressurePa(rd)
		if st != stage || !ok || !rd.Pressure.At.After(last) {
			return
		}
		last = rd.Pressure.At
		r.plan.Samples = append(r.plan.Samples, pressureSample{Elapsed: round3(r.elapsed()), PressurePa: round3(pa)})
		if n := len(r.plan.Samples); n > MaxLogRows { // a very long hold: halve the resolution
			out := r.plan.Samples[:0:0]
			for i, s := range r.plan.Samples {
				if i%2 == 0 || i == n-1 {
					out = append(out, s)
				}
			}
			r.plan.Samples = out
		}
	}
}

func (r *leakRecipe) State() ([]byte, error) {
	p := r.plan
	p.Rows = r.rows
	return json.Marshal(p)
}

// journalState is State without the rows, and the rows from index from on.
func (r *leakRecipe) journalState(from int) ([]byte, json.RawMessage, int, error) {
	p := r.plan
	p.Rows = nil
	return r.journalOf(p, from)
}

func (r *leakRecipe) Partial(*Env) (map[string]any, []Artifact) {
	if r.plan.Measured {
		return r.outputs(), nil
	}
	return map[string]any{"pump_down_seconds": r.plan.PumpDownS}, nil
}

// Cleanup reopens nothing: an isolated or pumped chamber is safe as it is;
// it only makes sure the reactive gases and the heater are off.
func (r *leakRecipe) Cleanup(ctx context.Context, env *Env) error {
	if env == nil || env.Rig == nil {
		return nil
	}
	return cleanupReactive(ctx, env, namesOf(env.Rig.Envelope()))
}
