package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
)

// fakeRig refuses actions on one channel and can be latched.
type fakeRig struct {
	env     *envelope.Envelope
	refuse  string
	latched bool
	applied []envelope.Action
}

func (f *fakeRig) Apply(_ context.Context, _ string, a envelope.Action) (envelope.Result, error) {
	if a.Channel() == f.refuse {
		return envelope.Result{}, &envelope.Violation{Rule: envelope.RuleMax, Channel: a.Channel()}
	}
	f.applied = append(f.applied, a)
	return envelope.Result{Action: a, At: time.Now()}, nil
}

func (f *fakeRig) Readings(context.Context) envelope.Readings {
	now := time.Now()
	r := envelope.Readings{At: now, Pressure: device.PressureReading{Pressure: 1, At: now},
		Furnace: device.FurnaceStatus{ProcessValue: device.Celsius(25), At: now},
		Inputs:  map[string]envelope.Level{"door_closed": {On: true, At: now}, "relay_fb": {On: true, At: now}}}
	return r
}
func (f *fakeRig) Envelope() *envelope.Envelope { return f.env }

// Invoke calls no tool: the fake rig acquires no spectrum to analyse.
func (f *fakeRig) Invoke(_ context.Context, _ string, ref envelope.ToolRef, _ json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("fake rig: no tool %s", ref)
}
func (f *fakeRig) Latched() (bool, string) { return f.latched, "estop" }

func TestFailureCodes(t *testing.T) {
	env := loadEnvelope(t)
	tests := []struct {
		name   string
		rig    *fakeRig
		inputs string
		code   Code
		step   string
	}{
		{"refused vent valve", &fakeRig{env: env, refuse: "switch.vent_valve"}, `{"target_material":"MoS2","substrate":"SiO2/Si"}`, CodeSafetyViolation, "preflight"},
		{"latched", &fakeRig{env: env, latched: true}, `{"target_material":"MoS2","substrate":"SiO2/Si"}`, CodeSafetyViolation, "preflight"},
		// The recipe offers Ar only: N2 is refused by its input_schema at Plan.
		{"no N2 line", &fakeRig{env: env}, `{"target_material":"MoS2","substrate":"SiO2/Si","carrier_gas":{"gas":"N2","flow_sccm":150}}`, CodeInput, "plan"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cvd := shippedExecutor(t, CVDName)
			rec, err := cvd.Plan(Task{Inputs: json.RawMessage(tc.inputs)})
			if tc.step == "plan" {
				if Classify(context.Background(), err) != tc.code {
					t.Fatalf("plan: %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			clock, _ := NewScaledClock(1e5)
			_, err = Execute(context.Background(), rec, &Env{Rig: tc.rig, Clock: clock, Sink: &memSink{}, Checkpoints: &memCkpt{},
				ArtifactDir: t.TempDir()}, 0)
			var f *Failure
			if !errors.As(err, &f) || f.Code != tc.code || f.Step != tc.step {
				t.Fatalf("err %v, want %s at %s", err, tc.code, tc.step)
			}
			// The partial growth log, and the profile so far once there is one.
			if _, arts := rec.Partial(&Env{ArtifactDir: t.TempDir()}); len(arts) < 1 || arts[0].Name != "partial_growth_log" ||
				(len(arts) == 2) != (len(rec.(*recipeRun).rows) >= 2) || (len(arts) == 2 && arts[1].Type != svgType) {
				t.Fatalf("partial artifacts %+v", arts)
			}
		})
	}
}

func TestPlanInputs(t *testing.T) {
	cvd := shippedExecutor(t, CVDName)
	tests := []struct {
		name   string
		inputs string
		ok     bool
		growC  float64
	}{
		{"seed", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":750,"unit":"celsius"}}`, true, 725},
		{"narrow window", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":730,"max":740}}`, true, 735},
		{"kelvin not offered", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":973.15,"max":1023.15,"unit":"kelvin"}}`, false, 0},
		{"low above high", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":740,"max":720}}`, false, 0},
		{"WS2 unsupported", `{"target_material":"WS2","substrate":"SiO2/Si"}`, false, 0},
		{"bad duration", `{"target_material":"MoS2","substrate":"SiO2/Si","growth_duration":"P1Y"}`, false, 0},
		{"min above max", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":800,"max":700}}`, false, 0},
		{"not JSON", `{`, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := cvd.Plan(Task{Inputs: json.RawMessage(tc.inputs)})
			if (err == nil) != tc.ok {
				t.Fatalf("err %v", err)
			}
			if err != nil {
				if Classify(context.Background(), err) != CodeInput {
					t.Fatalf("%v classifies as %s", err, Classify(context.Background(), err))
				}
				return
			}
			if g := rec.(*recipeRun).st.Plan.Phases[4].Ramp.TemperatureC; fmt.Sprintf("%.3f", g) != fmt.Sprintf("%.3f", tc.growC) {
				t.Fatalf("growth %v", g)
			}
			st, _ := rec.State()
			rec2, next, err := cvd.Resume(Task{}, st)
			if err != nil || next != 0 || len(rec2.Steps()) != 10 {
				t.Fatalf("resume: %v %d", err, next)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	expired, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want Code
	}{
		{"violation", context.Background(), fmt.Errorf("x: %w", &envelope.Violation{Rule: envelope.RuleMax}), CodeSafetyViolation},
		{"unauthorized", context.Background(), envelope.ErrUnauthorized, CodeSafetyViolation},
		{"device timeout", context.Background(), device.ErrTimeout, CodeExecution},
		{"closed", context.Background(), device.ErrClosed, CodeResourceUnavailable},
		{"not ready", context.Background(), ErrNotReady, CodeResourceUnavailable},
		{"max_duration", expired, context.DeadlineExceeded, CodeTimeout},
		{"audit", context.Background(), envelope.ErrAudit, CodeInternal},
		{"input", context.Background(), ErrInput, CodeInput},
		{"result", context.Background(), ErrResult, CodeExecution},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.ctx, tc.err); got != tc.want {
				t.Fatalf("%s, want %s", got, tc.want)
			}
		})
	}
}

func TestScaledClock(t *testing.T) {
	c, err := NewScaledClock(1000)
	if err != nil {
		t.Fatal(err)
	}
	t0 := c.Now()
	if err := c.Sleep(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if el := c.Now().Sub(t0); el < 10*time.Second {
		t.Fatalf("slept %v of process time", el)
	}
	select {
	case <-c.After(5 * time.Second):
	case <-time.After(5 * time.Second):
		t.Fatal("After never fired")
	}
	if _, err := NewScaledClock(0); err == nil {
		t.Fatal("scale 0 accepted")
	}
}

func TestSmallExecutorsSim(t *testing.T) {
	if testing.Short() {
		t.Skip("against the simulator")
	}
	b := newSimBench(t, e2eScale)
	clock, _ := NewScaledClock(e2eScale)
	run := func(ex Executor, inputs string) (*Result, error) {
		rec, err := ex.Plan(Task{SessionID: "s", Inputs: json.RawMessage(inputs)})
		if err != nil {
			return nil, err
		}
		return Execute(context.Background(), rec, &Env{Rig: b.rig(), Token: "t", Clock: clock, Sink: &memSink{},
			Checkpoints: &memCkpt{}, ArtifactDir: t.TempDir(), SessionID: "s"}, 0)
	}
	st, _ := NewRigStatus(resolve(t, RigStatusName))
	res, err := run(st, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["interlock"].(map[string]any)["latched"] != false || res.Outputs["stale"] != nil {
		t.Fatalf("status %+v", res.Outputs)
	}
}

// ruleTimeout makes staleRig fail with device.ErrTimeout instead of a
// refusal.
const ruleTimeout envelope.Rule = "test: write timeout"

// staleRig refuses every action for a stale reading (or times out, with
// ruleTimeout) until it has done so stale times, then executes.
type staleRig struct {
	fakeRig
	stale, tries int
	rule         envelope.Rule
}

func (s *staleRig) Apply(ctx context.Context, tok string, a envelope.Action) (envelope.Result, error) {
	s.tries++
	if s.tries <= s.stale && s.rule == ruleTimeout {
		return envelope.Result{}, fmt.Errorf("mfc-ar: poll: %w", device.ErrTimeout)
	}
	if s.tries <= s.stale {
		return envelope.Result{}, &envelope.Violation{Rule: s.rule, Channel: a.Channel(), Reason: "no fresh reading"}
	}
	return s.fakeRig.Apply(ctx, tok, a)
}

// TestApplyRetriesStaleAndTimeouts: a refusal for a stale reading is final
// (the interlock has already waited within its bound for a fresh snapshot:
// envelope/freshwait.go), as is any other refusal; a write the instrument
// did not answer in time is tried again, at most timeoutTries times in all.
func TestApplyRetriesStaleAndTimeouts(t *testing.T) {
	env := loadEnvelope(t)
	clock, _ := NewScaledClock(1e5)
	for _, tc := range []struct {
		name     string
		stale    int
		rule     envelope.Rule
		tries    int
		executed bool
		wantRule envelope.Rule
	}{
		{"a stale refusal is final", 1, envelope.RuleStale, 1, false, envelope.RuleStale},
		{"a limit is not retried", 1, envelope.RuleMax, 1, false, envelope.RuleMax},
		{"one write timeout", 1, ruleTimeout, 2, true, ""},
		{"the instrument stays silent", 10, ruleTimeout, timeoutTries, false, ruleTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := &staleRig{fakeRig: fakeRig{env: env}, stale: tc.stale, rule: tc.rule}
			sink := &memSink{}
			p := &proc{env: &Env{Rig: rig, Clock: clock, Sink: sink, Checkpoints: &memCkpt{}, Logger: slog.New(slog.DiscardHandler)}}
			_, err := p.apply(context.Background(), envelope.FlowAction("Ar", device.SCCM(10)))
			if rig.tries != tc.tries || (len(rig.applied) == 1) != tc.executed {
				t.Fatalf("tries %d (want %d), executed %v (want %v)", rig.tries, tc.tries, len(rig.applied) == 1, tc.executed)
			}
			var v *envelope.Violation
			if tc.wantRule == ruleTimeout {
				if !errors.Is(err, device.ErrTimeout) {
					t.Fatalf("err %v, want the timeout", err)
				}
				return
			}
			if tc.wantRule == "" && err != nil || tc.wantRule != "" && (!errors.As(err, &v) || v.Rule != tc.wantRule) {
				t.Fatalf("err %v, want rule %q", err, tc.wantRule)
			}
		})
	}
}

// TestReadyJudgesAge: the recovery check refuses a rig whose safety
// inputs say "ready" from a reading older than max_reading_age (a session
// must not resume on an old e-stop or leak-detector level), and accepts
// the same levels read recently.
func TestReadyJudgesAge(t *testing.T) {
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	levels := func(at time.Time) envelope.Readings {
		return envelope.Readings{At: now, Inputs: map[string]envelope.Level{
			"estop_pressed": {On: false, At: at}, "leak_detected": {On: false, At: at},
			"door_closed": {On: true, At: at}, "relay_fb": {On: true, At: at}}}
	}
	if err := readyFresh(levels(now.Add(-100*time.Millisecond)), "door_closed", 2*time.Second); err != nil {
		t.Fatalf("fresh and ready: %v", err)
	}
	err := readyFresh(levels(now.Add(-10*time.Second)), "door_closed", 2*time.Second)
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("levels read 10 s ago with a 2 s limit: %v, want ErrNotReady", err)
	}
	t.Logf("refused: %v", err)
	rd := levels(now)
	rd.Inputs["relay_fb"] = envelope.Level{On: false, At: now}
	if err := readyFresh(rd, "door_closed", 2*time.Second); !errors.Is(err, ErrNotReady) {
		t.Fatalf("relay de-energised: %v, want ErrNotReady", err)
	}
}
