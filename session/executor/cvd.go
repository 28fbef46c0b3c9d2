package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/session/analysis"
	"github.com/hcp-edge/hcp-edge/session/capability"
	"github.com/hcp-edge/hcp-edge/session/lifecycle"
)

// CVDName is the capability the CVD executor serves.
const CVDName = "cvd-material-synthesis"

// CVDOpts are the recipe's own parameters: what the caller does not choose.
// Durations are process time.
type CVDOpts struct {
	H2SFlowSCCM         float64       // H2S during growth (default 3 sccm)
	CarrierFlowSCCM     float64       // carrier gas when the inputs name none (default 100 sccm)
	RampRate            float64       // wanted heating rate, °C/min, clamped to the envelope (default 20)
	DefaultTemperatureC float64       // growth temperature without a temperature_range (default 725)
	DefaultGrowth       time.Duration // growth hold without growth_duration (default 15 min)
	BasePressurePa      float64       // pump-down target (default 5 Pa)
	PumpDownTimeout     time.Duration // default 30 min
	LeakHold            time.Duration // isolation time of the leak check (default 2 min)
	MaxLeakRatePaPerMin float64       // leak-check pass threshold (default 10 Pa/min)
	PurgeTime           time.Duration // Ar purge before heating and after growth (default 5 min)
	SettleBandC         float64       // |PV − setpoint| that ends the ramp (default 5 °C)
	VentMarginC         float64       // cool this far below the envelope's vent limit (default 5 °C)
	VentPressurePa      float64       // venting ends at this pressure (default 90 kPa)
	DefaultIntegration  time.Duration // Raman integration without raman.integration_seconds (default 5 s)
}

// DefaultCVDOpts returns the defaults above.
//
// The H2S flow and the default growth time are calibrated on the simulated
// rig (firmware-sim/plant: one layer takes 600 s at 725 °C with 5 sccm, rate
// ∝ flow × Arrhenius): 3 sccm for 15 min at 725 °C give about 0.9 layer, a
// monolayer; at the seed's window edges (700 and 750 °C) 0.63 and 1.27
// layers, both read as a monolayer. A real rig needs its own calibration.
func DefaultCVDOpts() CVDOpts {
	return CVDOpts{H2SFlowSCCM: 3, CarrierFlowSCCM: 100, RampRate: 20, DefaultTemperatureC: 725,
		DefaultGrowth: 15 * time.Minute, BasePressurePa: 5, PumpDownTimeout: 30 * time.Minute,
		LeakHold: 2 * time.Minute, MaxLeakRatePaPerMin: 10, PurgeTime: 5 * time.Minute, SettleBandC: 5,
		VentMarginC: 5, VentPressurePa: 90000, DefaultIntegration: 5 * time.Second}
}

// CVD is the executor of cvd-material-synthesis.
type CVD struct {
	capab *capability.Capability
	opts  CVDOpts
}

var _ Executor = (*CVD)(nil)

// NewCVD returns the executor; capab is the declaration whose output schema
// the outputs must satisfy. Zero fields of opts take their defaults.
func NewCVD(capab *capability.Capability, opts CVDOpts) (*CVD, error) {
	if capab == nil || capab.Name != CVDName {
		return nil, fmt.Errorf("executor: NewCVD needs the %s declaration", CVDName)
	}
	def := DefaultCVDOpts()
	for _, f := range []struct{ v, d *float64 }{{&opts.H2SFlowSCCM, &def.H2SFlowSCCM}, {&opts.CarrierFlowSCCM, &def.CarrierFlowSCCM},
		{&opts.RampRate, &def.RampRate}, {&opts.DefaultTemperatureC, &def.DefaultTemperatureC},
		{&opts.BasePressurePa, &def.BasePressurePa}, {&opts.MaxLeakRatePaPerMin, &def.MaxLeakRatePaPerMin},
		{&opts.SettleBandC, &def.SettleBandC}, {&opts.VentMarginC, &def.VentMarginC}, {&opts.VentPressurePa, &def.VentPressurePa}} {
		if !(*f.v > 0) {
			*f.v = *f.d
		}
	}
	for _, f := range []struct{ v, d *time.Duration }{{&opts.DefaultGrowth, &def.DefaultGrowth}, {&opts.PumpDownTimeout, &def.PumpDownTimeout},
		{&opts.LeakHold, &def.LeakHold}, {&opts.PurgeTime, &def.PurgeTime}, {&opts.DefaultIntegration, &def.DefaultIntegration}} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return &CVD{capab: capab, opts: opts}, nil
}

// Capability returns CVDName.
func (c *CVD) Capability() string { return CVDName }

// cvdInputs are the capability's inputs.
type cvdInputs struct {
	TargetMaterial   string `json:"target_material"`
	Substrate        string `json:"substrate"`
	TemperatureRange *struct {
		Min  float64 `json:"min"`
		Max  float64 `json:"max"`
		Unit string  `json:"unit"`
	} `json:"temperature_range"`
	TargetLayers   int    `json:"target_layers"`
	GrowthDuration string `json:"growth_duration"`
	CarrierGas     *struct {
		Gas  string  `json:"gas"`
		Flow float64 `json:"flow_sccm"`
	} `json:"carrier_gas"`
	Raman *struct {
		IntegrationSeconds float64 `json:"integration_seconds"`
		ExcitationNM       float64 `json:"excitation_nm"`
	} `json:"raman"`
}

// cvdPlan is the recipe's parameters and its progress: the resumable state.
type cvdPlan struct {
	Version        int              `json:"version"`
	Next           int              `json:"next"`
	GrowthC        float64          `json:"growth_c"`
	RangeC         [2]float64       `json:"range_c"`
	GrowthTime     time.Duration    `json:"growth_ns"`
	H2SFlow        float64          `json:"h2s_sccm"`
	Carrier        string           `json:"carrier"`
	CarrierFlow    float64          `json:"carrier_sccm"`
	RampRate       float64          `json:"ramp_c_per_min"`
	Integration    time.Duration    `json:"integration_ns"`
	TargetLayers   int              `json:"target_layers"`
	GrowHeld       time.Duration    `json:"grow_held_ns"`
	LeakRatePaMin  float64          `json:"leak_rate_pa_per_min"`
	Rows           []LogRow         `json:"rows"`
	Spectrum       *device.Spectrum `json:"spectrum,omitempty"`
	Analysis       *analysis.Result `json:"analysis,omitempty"`
	Warnings       []string         `json:"warnings,omitempty"`
	ThresholdConf  float64          `json:"confidence_threshold,omitempty"`
	ExpectedOutput *ExpectedOutput  `json:"expected_output,omitempty"`
}

// cvdRecipe is one planned synthesis.
type cvdRecipe struct {
	proc
	c     *CVD
	plan  cvdPlan
	steps []Step
	names rigNames
}

// rigNames are the outputs the recipe drives, from the envelope.
type rigNames struct {
	vent, gate, pump, scrubber string
	valve                      map[string]string // gas → line valve
}

func namesOf(env *envelope.Envelope) rigNames {
	n := rigNames{vent: "vent_valve", gate: "gate_valve", pump: "pump", scrubber: "scrubber", valve: map[string]string{}}
	if v := env.Config().Vent; v != nil {
		if v.Valve != "" {
			n.vent = v.Valve
		}
		if v.GateValve != "" {
			n.gate = v.GateValve
		}
	}
	for _, g := range env.Spec().Gases {
		n.valve[g.Gas] = g.Valve
	}
	return n
}

func inputErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// Plan turns the task into a recipe. Limits of the envelope are applied when
// the recipe runs (Run reads them from the rig's envelope); Plan checks the
// inputs alone. Its error classifies as input_error.
func (c *CVD) Plan(t Task) (Recipe, error) {
	var in cvdInputs
	if err := json.Unmarshal(t.Inputs, &in); err != nil {
		return nil, inputErr("inputs: %v", err)
	}
	if in.TargetMaterial != "MoS2" {
		return nil, inputErr("target_material %q: this rig's recipe and Raman analysis cover MoS2 only", in.TargetMaterial)
	}
	p := cvdPlan{Version: 1, GrowthC: c.opts.DefaultTemperatureC, RangeC: [2]float64{c.opts.DefaultTemperatureC, c.opts.DefaultTemperatureC},
		GrowthTime: c.opts.DefaultGrowth, H2SFlow: c.opts.H2SFlowSCCM, Carrier: "Ar", CarrierFlow: c.opts.CarrierFlowSCCM,
		RampRate: c.opts.RampRate, Integration: c.opts.DefaultIntegration, TargetLayers: 1,
		ThresholdConf: t.ConfidenceThreshold, ExpectedOutput: t.ExpectedOutput}
	if tr := in.TemperatureRange; tr != nil {
		unit := tr.Unit
		if unit == "" {
			unit = "celsius"
		}
		lo, err1 := device.TemperatureIn(tr.Min, unit)
		hi, err2 := device.TemperatureIn(tr.Max, unit)
		if err := errors.Join(err1, err2); err != nil {
			return nil, inputErr("temperature_range: %v", err)
		}
		if !device.Finite(float64(lo)) || !device.Finite(float64(hi)) || lo > hi {
			return nil, inputErr("temperature_range: min %v above max %v", tr.Min, tr.Max)
		}
		p.RangeC = [2]float64{lo.Celsius(), hi.Celsius()}
		p.GrowthC = (p.RangeC[0] + p.RangeC[1]) / 2
	}
	if in.TargetLayers > 0 {
		p.TargetLayers = in.TargetLayers
	}
	if in.GrowthDuration != "" {
		d, err := capability.ParseDuration(in.GrowthDuration)
		if err != nil || d <= 0 {
			return nil, inputErr("growth_duration %q: %v", in.GrowthDuration, err)
		}
		p.GrowthTime = d
	}
	if cg := in.CarrierGas; cg != nil {
		p.Carrier, p.CarrierFlow = cg.Gas, cg.Flow
	}
	if r := in.Raman; r != nil && r.IntegrationSeconds > 0 {
		// Whole milliseconds: the resolution of spectrometer.acquire, whose
		// input the acquisition becomes (0.3 s must not become 299.999999 ms).
		p.Integration = time.Duration(math.Round(r.IntegrationSeconds*1000)) * time.Millisecond
	}
	return c.recipe(p), nil
}

// Resume rebuilds a recipe from a checkpoint's state.
func (c *CVD) Resume(_ Task, state []byte) (Recipe, int, error) {
	var p cvdPlan
	if err := json.Unmarshal(state, &p); err != nil || p.Version != 1 {
		return nil, 0, fmt.Errorf("executor: %s: checkpoint state unreadable (version %d): %v", CVDName, p.Version, err)
	}
	r := c.recipe(p)
	return r, p.Next, nil
}

// Step indices of the synthesis recipe.
const (
	cvdPreflight = iota
	cvdPumpDown
	cvdLeakCheck
	cvdPurge
	cvdRamp
	cvdGrow
	cvdCool
	cvdVent
	cvdMeasure
	cvdAnalyse
)

func (c *CVD) recipe(p cvdPlan) *cvdRecipe {
	heat := time.Duration(math.Max(p.GrowthC-25, 0) / math.Max(p.RampRate, 0.5) * float64(time.Minute))
	r := &cvdRecipe{c: c, plan: p}
	r.rows, r.logged = p.Rows, len(p.Rows)
	r.warns = p.Warnings
	r.steps = []Step{
		{"preflight", "preparation", "check the interlock, inputs and outputs; scrubber on, reactive gases off", 0},
		{"pump_down", "vacuum", fmt.Sprintf("pump the chamber below %g Pa", c.opts.BasePressurePa), 3 * time.Minute},
		{"leak_check", "vacuum", fmt.Sprintf("isolate for %v; rate of rise below %g Pa/min", c.opts.LeakHold, c.opts.MaxLeakRatePaPerMin), c.opts.LeakHold + 2*time.Minute},
		{"purge", "purge", fmt.Sprintf("%s at %g sccm for %v", p.Carrier, p.CarrierFlow, c.opts.PurgeTime), c.opts.PurgeTime},
		{"ramp", "heating", fmt.Sprintf("ramp to %.1f °C (rate within the envelope)", p.GrowthC), heat},
		{"grow", "material_growth", fmt.Sprintf("hold %.1f °C with %g sccm H2S for %v", p.GrowthC, p.H2SFlow, p.GrowthTime), p.GrowthTime},
		{"cool", "cooling", "H2S off, purge, heater off, cool below the vent limit", c.opts.PurgeTime + 40*time.Minute},
		{"vent", "venting", "isolate the pump and vent to atmosphere", 2 * time.Minute},
		{"measure", "characterization", fmt.Sprintf("acquire a Raman spectrum (%v)", p.Integration), p.Integration},
		{"analyse", "analysis", "fit E2g and A1g, peak distance, layer count", time.Second},
	}
	return r
}

func (r *cvdRecipe) Steps() []Step { return r.steps }

func (r *cvdRecipe) State() ([]byte, error) {
	p := r.plan
	p.Rows, p.Warnings = r.rows, r.warns
	return json.Marshal(p)
}

// journalState is State without the rows, and the rows from index from on.
func (r *cvdRecipe) journalState(from int) ([]byte, json.RawMessage, int, error) {
	p := r.plan
	p.Rows, p.Warnings = nil, r.warns
	return r.journalOf(p, from)
}

// Run executes step i.
func (r *cvdRecipe) Run(ctx context.Context, i int, env *Env) error {
	if err := env.defaults(); err != nil {
		return err
	}
	r.begin(env)
	r.names = namesOf(env.Rig.Envelope())
	from := r.elapsed() // the rows of this step, for its profiles
	var err error
	switch i {
	case cvdPreflight:
		err = r.preflight(ctx)
	case cvdPumpDown:
		err = r.pumpDown(ctx, "pump_down")
	case cvdLeakCheck:
		err = r.leakCheck(ctx)
	case cvdPurge:
		err = r.purge(ctx)
	case cvdRamp:
		err = r.ramp(ctx)
	case cvdGrow:
		err = r.grow(ctx)
	case cvdCool:
		err = r.cool(ctx)
	case cvdVent:
		err = r.vent(ctx)
	case cvdMeasure:
		err = r.measure(ctx)
	case cvdAnalyse:
		err = r.analyse(ctx)
	default:
		err = fmt.Errorf("executor: %s has no step %d", CVDName, i)
	}
	if err != nil {
		return err
	}
	r.plan.Next = i + 1
	switch i {
	case cvdRamp, cvdGrow, cvdCool, cvdPumpDown:
		return r.profiles(ctx, r.steps[i].Name, from)
	}
	return nil
}

// param returns the envelope parameter of a channel.
func param(env *envelope.Envelope, ch string) (envelope.Parameter, bool) {
	p, ok := env.Config().Parameters[ch]
	return p, ok
}

func (r *cvdRecipe) preflight(ctx context.Context) error {
	rd, err := r.read(ctx, "preflight", true)
	if err != nil {
		return err
	}
	env := r.env.Rig.Envelope()
	if _, ok := r.names.valve[r.plan.Carrier]; !ok {
		return inputErr("carrier_gas %q: the rig has no %s line", r.plan.Carrier, r.plan.Carrier)
	}
	if _, ok := r.names.valve["H2S"]; !ok {
		return fmt.Errorf("%w: the rig has no H2S line", ErrNotReady)
	}
	// The growth temperature: inside the requested range, and inside the
	// envelope's setpoint limits; if no such temperature exists, refuse.
	if sp, ok := param(env, envelope.ChannelSetpoint); ok && sp.Max != nil {
		hi, err := device.TemperatureIn(*sp.Max, sp.Unit)
		if err == nil && r.plan.GrowthC > hi.Celsius() {
			if r.plan.RangeC[0] > hi.Celsius() {
				return &envelope.Violation{Rule: envelope.RuleMax, Channel: envelope.ChannelSetpoint, Limit: hi.Celsius(),
					Value: r.plan.RangeC[0], Unit: "celsius", Reason: "the whole requested temperature_range lies above the envelope's setpoint maximum"}
			}
			r.warn(ctx, "temperature_clamped", fmt.Sprintf("growth temperature %.1f °C clamped to the envelope's maximum %.1f °C", r.plan.GrowthC, hi.Celsius()), nil)
			r.plan.GrowthC = hi.Celsius()
		}
	}
	if fp, ok := param(env, envelope.FlowChannel("H2S")); ok && fp.Max != nil {
		if mx, err := device.FlowIn(*fp.Max, fp.Unit); err == nil && r.plan.H2SFlow > mx.SCCM() {
			r.warn(ctx, "flow_clamped", fmt.Sprintf("H2S flow %g sccm clamped to the envelope's %g sccm", r.plan.H2SFlow, mx.SCCM()), nil)
			r.plan.H2SFlow = mx.SCCM()
		}
	}
	if fp, ok := param(env, envelope.FlowChannel(r.plan.Carrier)); ok && fp.Max != nil {
		if mx, err := device.FlowIn(*fp.Max, fp.Unit); err == nil && r.plan.CarrierFlow > mx.SCCM() {
			return &envelope.Violation{Rule: envelope.RuleMax, Channel: envelope.FlowChannel(r.plan.Carrier), Limit: mx.SCCM(),
				Value: r.plan.CarrierFlow, Unit: "sccm", Reason: "carrier flow above the envelope's maximum"}
		}
	}
	if rp, ok := param(env, envelope.ChannelRampRate); ok {
		if rp.Max != nil {
			if mx, err := rateIn(*rp.Max, rp.Unit); err == nil && r.plan.RampRate > mx {
				r.plan.RampRate = mx
			}
		}
		if rp.Min != nil {
			if mn, err := rateIn(*rp.Min, rp.Unit); err == nil && r.plan.RampRate < mn {
				r.plan.RampRate = mn
			}
		}
	}
	if ip, ok := param(env, envelope.ChannelIntegration); ok && ip.Max != nil {
		if mx, err := durationIn(*ip.Max, ip.Unit); err == nil && r.plan.Integration > mx {
			r.warn(ctx, "integration_clamped", fmt.Sprintf("Raman integration %v clamped to the envelope's %v", r.plan.Integration, mx), nil)
			r.plan.Integration = mx
		}
	}
	if err := readyFresh(rd, env.MaxReadingAge()); err != nil {
		return err
	}
	r.log(ctx, "info", "recipe parameters", map[string]any{"growth_temperature_c": r.plan.GrowthC, "growth_seconds": r.plan.GrowthTime.Seconds(),
		"h2s_sccm": r.plan.H2SFlow, "carrier": r.plan.Carrier, "carrier_sccm": r.plan.CarrierFlow, "ramp_c_per_min": r.plan.RampRate,
		"integration_ms": r.plan.Integration.Milliseconds()})
	// Reactive gases off, vent closed, scrubber on: all safe actions.
	var acts []envelope.Action
	for _, g := range []string{"H2S", "H2"} {
		if v, ok := r.names.valve[g]; ok {
			acts = append(acts, envelope.FlowAction(g, 0), envelope.SwitchAction(v, false))
		}
	}
	acts = append(acts, envelope.SwitchAction(r.names.vent, false), envelope.SwitchAction(r.names.scrubber, true))
	return r.applyAll(ctx, acts...)
}

// Ready checks the safety inputs of a snapshot as a physical recipe's
// preflight does: e-stop released, no leak, door closed, the interlock
// relay energised (where the rig reports them), each read within maxAge
// of the snapshot (0: any reading at all). The error wraps ErrNotReady and
// names the input. The engine asks it, with the envelope's
// max_reading_age, when it recovers a physical session at start: the agent
// starts with the relay de-energised, and a session must not resume on
// an old reading of the e-stop or the leak detector.
func Ready(rd envelope.Readings, maxAge time.Duration) error { return readyFresh(rd, maxAge) }

// readyFresh is ready with every input read within maxAge of the readings
// (0: any reading at all), as a preflight judges the rig by.
func readyFresh(rd envelope.Readings, maxAge time.Duration) error {
	for name, want := range map[string]bool{"estop_pressed": false, "leak_detected": false, "door_closed": true, "relay_fb": true} {
		l, ok := rd.Inputs[name]
		if !ok {
			continue
		}
		if l.At.IsZero() {
			return fmt.Errorf("%w: input %s not read", ErrNotReady, name)
		}
		if age := rd.At.Sub(l.At); maxAge > 0 && age > maxAge {
			return fmt.Errorf("%w: %w", ErrNotReady, &ReadingError{Reading: "input " + name,
				Reason: fmt.Sprintf("stale: read %v before the preflight (limit %v)", age.Round(time.Millisecond), maxAge)})
		}
		if l.On != want {
			return fmt.Errorf("%w: input %s is %v (the operator must arm the rig / clear it)", ErrNotReady, name, l.On)
		}
	}
	return nil
}

func rateIn(v float64, unit string) (float64, error) {
	switch unit {
	case "celsius_per_minute", "kelvin_per_minute":
		return v, nil
	case "celsius_per_second", "kelvin_per_second":
		return v * 60, nil
	}
	return 0, fmt.Errorf("unknown rate unit %q", unit)
}

func durationIn(v float64, unit string) (time.Duration, error) {
	switch unit {
	case "ms":
		return time.Duration(v * float64(time.Millisecond)), nil
	case "s":
		return time.Duration(v * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("unknown duration unit %q", unit)
}

func pressurePa(rd envelope.Readings) (float64, bool) {
	p := rd.Pressure
	if p.At.IsZero() || !device.Finite(float64(p.Pressure)) {
		return 0, false
	}
	switch p.Status {
	case device.GaugeOK, device.GaugeUnderrange, device.GaugeOverrange:
		return p.Pressure.Pascal(), true
	}
	return 0, false
}

func (r *cvdRecipe) pumpDown(ctx context.Context, stage string) error {
	return pumpDown(ctx, &r.proc, r.names, stage, r.c.opts.BasePressurePa, r.c.opts.PumpDownTimeout)
}

// pumpDown closes the vent, starts the pump, opens the gate valve and waits
// for the base pressure on a gauge reading taken after the gate opened.
func pumpDown(ctx context.Context, p *proc, n rigNames, stage string, basePa float64, timeout time.Duration) error {
	if err := p.applyAll(ctx, envelope.SwitchAction(n.vent, false), envelope.SwitchAction(n.pump, true)); err != nil {
		return err
	}
	gate, err := p.apply(ctx, envelope.SwitchAction(n.gate, true))
	if err != nil {
		return err
	}
	f := p.fresh("gauge (pump-down)", gate.At, gaugeAt)
	_, err = p.waitFresh(ctx, stage, fmt.Sprintf("chamber below %g Pa", basePa), f, timeout, func(rd envelope.Readings) (bool, error) {
		pa, ok := pressurePa(rd)
		return ok && rd.Pressure.Status != device.GaugeOverrange && pa <= basePa, nil
	})
	return err
}

// gaugeAt is when a gauge reading can have been measured at the earliest:
// "taken after" an action is judged by the request, not the reply.
func gaugeAt(rd envelope.Readings) time.Time   { return rd.Pressure.Requested() }
func furnaceAt(rd envelope.Readings) time.Time { return rd.Furnace.At }

// leakMeasure is one rate-of-rise measurement: two gauge readings, both
// taken after the isolation valve closed, with their own timestamps.
type leakMeasure struct {
	Rate     float64       // Pa/min of process time
	P0, P1   float64       // Pa
	T0, T1   time.Time     // p0's reply and p1's request (the instruments' clock): the shortest interval
	Interval time.Duration // T1 − T0 in process time
}

// leakRate isolates the chamber and measures its rate of rise over hold.
// p0 is the first gauge reading taken after the gate valve read back
// closed; p1 the first taken at least hold (process time) after p0, by the
// readings' own timestamps, and the rate divides by that interval. A
// reading that does not come in time (stale), is invalid (missing), or is
// not after the one before (out of order) fails the measurement with a
// *ReadingError naming it: it never yields a rate.
func leakRate(ctx context.Context, p *proc, n rigNames, stage string, hold time.Duration) (leakMeasure, error) {
	var m leakMeasure
	iso, err := p.apply(ctx, envelope.SwitchAction(n.gate, false))
	if err != nil {
		return m, err
	}
	const r0, r1 = "gauge p0 (start of the leak-check hold)", "gauge p1 (end of the leak-check hold)"
	// Staleness ends these waits (no fresh reading within the reading age);
	// the process-time bound only has to be longer than that.
	bound := hold + p.env.Clock.Process(2*p.env.Rig.Envelope().MaxReadingAge())
	rd, err := p.waitFresh(ctx, stage, "a gauge reading after the isolation", p.fresh(r0, iso.At, gaugeAt), bound,
		func(envelope.Readings) (bool, error) { return true, nil })
	if err != nil {
		return m, err
	}
	if m.P0, err = leakPressure(rd, r0, true); err != nil {
		return m, err
	}
	m.T0 = rd.Pressure.At
	if err := p.hold(ctx, stage, hold, nil, nil); err != nil {
		return m, err
	}
	// The end of the hold by the readings' own clock: at least hold after p0.
	// Each reading was measured somewhere between its request and its reply;
	// the interval is taken at its shortest — from p0's reply to p1's request
	// — so that a slow reply (a busy host, a slow line) can only overstate
	// the rate, never hide a leak.
	rd, err = p.waitFresh(ctx, stage, "a gauge reading a hold after p0", p.fresh(r1, m.T0, gaugeAt), bound,
		func(rd envelope.Readings) (bool, error) {
			return p.env.Clock.Process(rd.Pressure.Requested().Sub(m.T0)) >= hold, nil
		})
	if err != nil {
		return m, err
	}
	if m.P1, err = leakPressure(rd, r1, false); err != nil {
		return m, err
	}
	m.T1 = rd.Pressure.Requested()
	m.Interval = p.env.Clock.Process(m.T1.Sub(m.T0))
	if !m.T1.After(m.T0) || m.Interval <= 0 {
		return m, &ReadingError{Reading: r1, Since: m.T0, Reason: fmt.Sprintf("out of order: taken at %s, not after p0",
			m.T1.UTC().Format("15:04:05.000"))}
	}
	m.Rate = (m.P1 - m.P0) / m.Interval.Minutes()
	return m, nil
}

// details are the log event's details of a measurement.
func (m leakMeasure) details() map[string]any {
	return map[string]any{"rate_pa_per_min": m.Rate, "p0_pa": m.P0, "p1_pa": m.P1,
		"p0_at": m.T0.UTC().Format(time.RFC3339Nano), "p1_at": m.T1.UTC().Format(time.RFC3339Nano),
		"interval_seconds": m.Interval.Seconds()}
}

// leakPressure is a leak-check pressure in Pa. An invalid reading (sensor
// error, not a number) is refused; so is one above the gauge's range (the
// rate would be a lower bound) and, for p0, one that is not a vacuum. Below
// the range the start pressure counts as 0, so the rate can only be
// overstated.
func leakPressure(rd envelope.Readings, name string, start bool) (float64, error) {
	pr := rd.Pressure
	pa, ok := pressurePa(rd)
	switch {
	case !ok:
		return 0, &ReadingError{Reading: name, Reason: fmt.Sprintf("invalid (gauge status %v)", pr.Status)}
	case pr.Status == device.GaugeOverrange:
		return 0, &ReadingError{Reading: name, Reason: fmt.Sprintf("above the gauge's range (%g Pa): the rate of rise cannot be measured", pa)}
	case start && pr.Status == device.GaugeUnderrange:
		return 0, nil
	}
	return pa, nil
}

func (r *cvdRecipe) leakCheck(ctx context.Context) error {
	m, err := leakRate(ctx, &r.proc, r.names, "leak_check", r.c.opts.LeakHold)
	if err != nil {
		return err
	}
	r.plan.LeakRatePaMin = m.Rate
	r.log(ctx, "info", "leak check", m.details())
	if m.Rate > r.c.opts.MaxLeakRatePaPerMin {
		return fmt.Errorf("%w: leak check failed: rate of rise %.3g Pa/min above %g Pa/min", ErrCondition, m.Rate, r.c.opts.MaxLeakRatePaPerMin)
	}
	return r.pumpDown(ctx, "leak_check")
}

func (r *cvdRecipe) purge(ctx context.Context) error {
	g := r.plan.Carrier
	if err := r.applyAll(ctx, envelope.FlowAction(g, device.SCCM(r.plan.CarrierFlow)), envelope.SwitchAction(r.names.valve[g], true)); err != nil {
		return err
	}
	return r.hold(ctx, "purge", r.c.opts.PurgeTime, nil, nil)
}

func (r *cvdRecipe) ramp(ctx context.Context) error {
	sp := device.Celsius(r.plan.GrowthC)
	if err := r.applyAll(ctx, envelope.RampRateAction(device.KelvinPerMinute(r.plan.RampRate)), envelope.SetpointAction(sp)); err != nil {
		return err
	}
	on, err := r.apply(ctx, envelope.HeaterAction(true))
	if err != nil {
		return err
	}
	heat := time.Duration(math.Max(r.plan.GrowthC-25, 0) / r.plan.RampRate * float64(time.Minute))
	timeout := heat*3/2 + 30*time.Minute
	band := r.c.opts.SettleBandC
	next := r.env.Clock.Now()
	_, err = r.waitFresh(ctx, "ramp", fmt.Sprintf("furnace within %g °C of %.1f °C", band, r.plan.GrowthC),
		r.fresh("furnace (ramp)", on.At, furnaceAt), timeout,
		func(rd envelope.Readings) (bool, error) {
			f := rd.Furnace
			if !f.HeaterEnabled {
				return false, fmt.Errorf("%w: the furnace dropped its heater during the ramp (alarms %#x)", ErrCondition, uint16(f.Alarms))
			}
			if now := r.env.Clock.Now(); !now.Before(next) {
				next = now.Add(r.env.CheckpointEvery)
				pct := 100 * math.Min(1, math.Max(0, (f.ProcessValue.Celsius()-25)/math.Max(r.plan.GrowthC-25, 1)))
				_ = r.env.Sink.Emit(ctx, lifecycle.EventProgress, Progress{Stage: "heating", Percent: &pct,
					Message: fmt.Sprintf("furnace at %.1f °C, working setpoint %.1f °C", f.ProcessValue.Celsius(), f.WorkingSetpoint.Celsius())})
			}
			return math.Abs(f.ProcessValue.Celsius()-r.plan.GrowthC) <= band &&
				math.Abs(f.WorkingSetpoint.Celsius()-r.plan.GrowthC) < 0.5, nil
		})
	return err
}

func (r *cvdRecipe) grow(ctx context.Context) error {
	v := r.names.valve["H2S"]
	if err := r.applyAll(ctx, envelope.FlowAction("H2S", device.SCCM(r.plan.H2SFlow))); err != nil {
		return err
	}
	open, err := r.apply(ctx, envelope.SwitchAction(v, true))
	if err != nil {
		return err
	}
	held0 := r.plan.GrowHeld
	warned := false
	// The furnace is judged on readings taken after the H2S went in.
	err = r.hold(ctx, "grow", r.plan.GrowthTime-held0, &judged{freshness: r.fresh("furnace (growth)", open.At, furnaceAt),
		check: func(rd envelope.Readings) error {
			f := rd.Furnace
			if !f.HeaterEnabled {
				return fmt.Errorf("%w: the furnace dropped its heater during growth", ErrCondition)
			}
			if dev := math.Abs(f.ProcessValue.Celsius() - r.plan.GrowthC); dev > 3*r.c.opts.SettleBandC && !warned {
				warned = true
				r.warn(ctx, "temperature_deviation", fmt.Sprintf("furnace %.1f °C during growth, %.1f °C from the setpoint", f.ProcessValue.Celsius(), dev), nil)
			}
			return nil
		}}, func(held time.Duration) error {
		r.plan.GrowHeld = held0 + held
		if _, err := checkpoint(ctx, r.env, r, Checkpoint{Step: cvdGrow, StepName: "grow",
			Description: fmt.Sprintf("growth: %v of %v held", r.plan.GrowHeld.Round(time.Second), r.plan.GrowthTime), Resumable: true}); err != nil {
			return err
		}
		pct := 100 * r.plan.GrowHeld.Seconds() / r.plan.GrowthTime.Seconds()
		return r.emit(ctx, lifecycle.EventProgress, Progress{Stage: "material_growth", Percent: &pct,
			Message: fmt.Sprintf("growing: %v of %v", r.plan.GrowHeld.Round(time.Second), r.plan.GrowthTime)})
	})
	if err != nil {
		return err
	}
	r.plan.GrowHeld = r.plan.GrowthTime
	// H2S off: flow to zero, line valve closed (both safe actions).
	return r.applyAll(ctx, envelope.FlowAction("H2S", 0), envelope.SwitchAction(v, false))
}

func (r *cvdRecipe) cool(ctx context.Context) error {
	if err := r.hold(ctx, "cool", r.c.opts.PurgeTime, nil, nil); err != nil { // purge the H2S out
		return err
	}
	off, err := r.apply(ctx, envelope.HeaterAction(false))
	if err != nil {
		return err
	}
	limit := 80.0
	if v := r.env.Rig.Envelope().Config().Vent; v != nil && v.MaxTemperature.Unit != "" {
		if t, err := device.TemperatureIn(v.MaxTemperature.Value, v.MaxTemperature.Unit); err == nil {
			limit = t.Celsius()
		}
	}
	target := limit - r.c.opts.VentMarginC
	if _, err := r.waitFresh(ctx, "cool", fmt.Sprintf("furnace below %.1f °C", target), r.fresh("furnace (cooling)", off.At, furnaceAt), 6*time.Hour,
		func(rd envelope.Readings) (bool, error) {
			f := rd.Furnace
			return f.Alarms&device.AlarmSensorBreak == 0 && device.Finite(float64(f.ProcessValue)) && f.ProcessValue.Celsius() <= target, nil
		}); err != nil {
		return err
	}
	g := r.plan.Carrier
	if err := r.applyAll(ctx, envelope.FlowAction(g, 0)); err != nil {
		return err
	}
	closed, err := r.apply(ctx, envelope.SwitchAction(r.names.valve[g], false))
	if err != nil {
		return err
	}
	return gasesOff(ctx, &r.proc, r.names, "cool", closed.At)
}

// gasesOff waits until the rig's readings, taken after since (the
// interlock's clock), show every gas below the envelope's flow-on threshold
// and every line valve closed. The trip monitor judges venting by its own
// readings; venting before they confirm the gases off would race it.
func gasesOff(ctx context.Context, p *proc, n rigNames, stage string, since time.Time) error {
	env := p.env.Rig.Envelope()
	thr := 1.0
	if q := env.Config().FlowOnThreshold; q.Unit != "" {
		if f, err := device.FlowIn(q.Value, q.Unit); err == nil {
			thr = f.SCCM()
		}
	}
	_, err := p.waitUntil(ctx, stage, "every gas reading off", 10*time.Minute, func(rd envelope.Readings) (bool, error) {
		for _, g := range env.Spec().Gases {
			fs, ok := rd.Flows[g.Gas]
			if !ok || fs.At.Before(since) || !(fs.Flow.SCCM() < thr) {
				return false, nil
			}
			if l, ok := rd.Switches[n.valve[g.Gas]]; !ok || l.At.Before(since) || l.On {
				return false, nil
			}
		}
		return true, nil
	})
	return err
}

func (r *cvdRecipe) vent(ctx context.Context) error {
	n := r.names
	if err := r.applyAll(ctx, envelope.SwitchAction(n.gate, false), envelope.SwitchAction(n.pump, false)); err != nil {
		return err
	}
	vent, err := r.apply(ctx, envelope.SwitchAction(n.vent, true))
	if err != nil {
		return err
	}
	if _, err := r.waitFresh(ctx, "vent", "atmospheric pressure", r.fresh("gauge (venting)", vent.At, gaugeAt), 15*time.Minute, func(rd envelope.Readings) (bool, error) {
		pa, ok := pressurePa(rd)
		return ok && (rd.Pressure.Status == device.GaugeOverrange || pa >= r.c.opts.VentPressurePa), nil
	}); err != nil {
		return err
	}
	return r.applyAll(ctx, envelope.SwitchAction(n.vent, false))
}

func (r *cvdRecipe) measure(ctx context.Context) error {
	res, err := r.apply(ctx, envelope.AcquireAction(r.plan.Integration))
	if err != nil {
		return err
	}
	if res.Spectrum == nil {
		return fmt.Errorf("%w: the spectrometer returned no spectrum", device.ErrFrame)
	}
	r.plan.Spectrum = res.Spectrum
	return nil
}

func (r *cvdRecipe) analyse(ctx context.Context) error {
	if r.plan.Spectrum == nil {
		return fmt.Errorf("%w: no spectrum to analyse", ErrResult)
	}
	a, err := analysis.Analyze(*r.plan.Spectrum)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrResult, err)
	}
	r.plan.Analysis = &a
	if err := r.emit(ctx, lifecycle.EventIntermediateResult, IntermediateResult{ResultType: "raman_analysis", Data: a}); err != nil {
		return err
	}
	if !a.Found {
		return fmt.Errorf("%w: %s", ErrResult, a.Reason)
	}
	if a.LayerCount == 0 {
		return fmt.Errorf("%w: %s", ErrResult, a.Reason)
	}
	if a.LayerCount != r.plan.TargetLayers {
		r.warn(ctx, "layer_count_differs", fmt.Sprintf("grew %d layer(s), target %d", a.LayerCount, r.plan.TargetLayers), nil)
	}
	return nil
}

func (r *cvdRecipe) ramanOutput() map[string]any {
	a := r.plan.Analysis
	return map[string]any{
		"e2g_cm1": a.E2g.Position, "a1g_cm1": a.A1g.Position, "e2g_fwhm_cm1": a.E2g.FWHM, "a1g_fwhm_cm1": a.A1g.FWHM,
		"e2g_err_cm1": a.E2g.PositionErr, "a1g_err_cm1": a.A1g.PositionErr,
		"peak_distance": a.Distance, "peak_distance_err": a.DistanceErr, "layer_count": a.LayerCount, "bulk": a.Bulk,
		"confidence": a.Confidence, "fit_residual": a.FitResidual, "r_squared": a.RSquared, "snr": a.SNR,
		"method": "two Lorentzians on a linear baseline, Levenberg–Marquardt; layer bands after Lee et al. 2010",
	}
}

// Finish builds and validates the outputs and writes the artifacts.
func (r *cvdRecipe) Finish(ctx context.Context, env *Env) (*Result, error) {
	if err := env.defaults(); err != nil {
		return nil, err
	}
	r.begin(env)
	a := r.plan.Analysis
	if a == nil || !a.Found {
		return nil, fmt.Errorf("%w: no analysis", ErrResult)
	}
	arts, err := r.artifacts(env, false)
	if err != nil {
		return nil, err
	}
	outputs := map[string]any{
		"peak_distance":      round3(a.Distance),
		"layer_count":        a.LayerCount,
		"confidence":         round3(a.Confidence),
		"growth_temperature": map[string]any{"value": r.plan.GrowthC, "unit": "celsius"},
		"raman_analysis":     r.ramanOutput(),
		"growth_log":         r.rows,
		"spectrum_data":      map[string]any{"raman_shift": r.plan.Spectrum.Shift, "intensity": r.plan.Spectrum.Counts},
	}
	if err := validateOutputs(r.c.capab, outputs, r.plan.ExpectedOutput); err != nil {
		return nil, err
	}
	if th := r.plan.ThresholdConf; th > 0 && a.Confidence < th {
		return nil, fmt.Errorf("%w: confidence %.3f below the caller's confidence_threshold %g", ErrResult, a.Confidence, th)
	}
	return &Result{Outputs: outputs, Artifacts: arts, Warnings: r.warns}, nil
}

// validateOutputs checks outputs against the capability's output_schema and
// the caller's expected_output.
func validateOutputs(c *capability.Capability, outputs map[string]any, exp *ExpectedOutput) error {
	raw, err := json.Marshal(outputs)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	if err := c.ValidateOutput(raw); err != nil {
		return fmt.Errorf("%w: capability output_schema: %w", ErrOutputSchema, err)
	}
	// Validate the JSON form, as the caller will see it.
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	return ValidateOutputs(generic, exp)
}

func (r *cvdRecipe) artifacts(env *Env, partial bool) ([]Artifact, error) {
	var arts []Artifact
	if sp := r.plan.Spectrum; sp != nil {
		raw, err := json.Marshal(map[string]any{"raman_shift_cm1": sp.Shift, "intensity_counts": sp.Counts,
			"integration_ms": sp.Integration.Milliseconds(), "acquired_at": sp.At.UTC().Format(time.RFC3339Nano)})
		if err != nil {
			return nil, err
		}
		a, err := writeArtifact(env, "raw_spectrum", "raman_raw.json", "application/json", raw)
		if err != nil {
			return nil, err
		}
		arts = append(arts, a)
	}
	name, file := "growth_log", "growth_log.csv"
	if partial {
		name, file = "partial_growth_log", "growth_log_partial.csv"
	}
	a, err := writeArtifact(env, name, file, "text/csv", growthCSV(r.rows))
	if err != nil {
		return nil, err
	}
	return r.plots(env, append(arts, a), partial) // plots.go
}

// Partial returns what the run produced before it failed.
func (r *cvdRecipe) Partial(env *Env) (map[string]any, []Artifact) {
	out := map[string]any{"growth_log": map[string]any{"entries_before_failure": len(r.rows)}}
	if r.plan.Analysis != nil && r.plan.Analysis.Found {
		out["raman_analysis"] = r.ramanOutput()
		out["peak_distance"] = round3(r.plan.Analysis.Distance)
		out["layer_count"] = r.plan.Analysis.LayerCount
		out["confidence"] = round3(r.plan.Analysis.Confidence)
	} else if r.plan.Analysis != nil {
		out["raman_analysis"] = map[string]any{"found": false, "reason": r.plan.Analysis.Reason}
	}
	if r.plan.LeakRatePaMin != 0 {
		out["leak_rate_pa_per_min"] = r.plan.LeakRatePaMin
	}
	var arts []Artifact
	if env != nil && env.ArtifactDir != "" {
		arts, _ = r.artifacts(env, true)
	}
	return out, arts
}

// Cleanup drives the reactive gases off and the heater off (safe actions
// only, which pass even while latched), lets the carrier flush the
// reactive gas out for a purge, then closes the carrier too: its flow and
// its line valve. The pump stays as it is: a pumped chamber is the right
// place to cool, and a carrier left flowing after the session ended would
// run the cylinder empty with nobody owning the rig.
func (r *cvdRecipe) Cleanup(ctx context.Context, env *Env) error {
	if env == nil || env.Rig == nil {
		return nil
	}
	n := namesOf(env.Rig.Envelope())
	purge := DefaultCVDOpts().PurgeTime
	if r.c != nil && r.c.opts.PurgeTime > 0 {
		purge = r.c.opts.PurgeTime
	}
	return errors.Join(cleanupReactive(ctx, env, n), closeCarriers(ctx, env, n, purge))
}

// closeCarriers purges with whatever carrier flows for purge of process
// time — at most half of what is left of ctx's deadline, so the closing
// writes always have time — then sets every non-reactive gas's flow to 0
// and closes its line valve, each with apply's retries, every one tried.
func closeCarriers(ctx context.Context, env *Env, n rigNames, purge time.Duration) error {
	if dl, ok := ctx.Deadline(); ok {
		purge = min(purge, env.Clock.Process(time.Until(dl)/2))
	}
	if purge > 0 {
		_ = env.Clock.Sleep(ctx, purge) // cut short only by ctx
	}
	reactive := env.Rig.Envelope().Config().ReactiveGases
	p := &proc{env: env}
	var errs []error
	for _, g := range env.Rig.Envelope().Spec().Gases {
		if slices.Contains(reactive, g.Gas) {
			continue
		}
		acts := []envelope.Action{envelope.FlowAction(g.Gas, 0)}
		if v, ok := n.valve[g.Gas]; ok && v != "" {
			acts = append(acts, envelope.SwitchAction(v, false))
		}
		for _, a := range acts {
			if _, err := p.apply(ctx, a); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func cleanupReactive(ctx context.Context, env *Env, n rigNames) error {
	acts := []envelope.Action{envelope.HeaterAction(false)}
	for _, g := range env.Rig.Envelope().Config().ReactiveGases {
		acts = append(acts, envelope.FlowAction(g, 0))
		if v, ok := n.valve[g]; ok {
			acts = append(acts, envelope.SwitchAction(v, false))
		}
	}
	// Every action is tried (an error does not stop the others), each with
	// apply's retries: a cleanup write the instrument did not answer in
	// time must not leave a gas line open.
	p := &proc{env: env}
	var errs []error
	for _, a := range acts {
		if _, err := p.apply(ctx, a); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
