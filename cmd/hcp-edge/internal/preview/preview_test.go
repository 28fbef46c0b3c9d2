package preview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/envelope"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
)

const seedInputs = `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":750,"unit":"celsius"}}`

func simConfig(t testing.TB) rigconfig.File {
	t.Helper()
	f, err := rigconfig.Parse(bytes.NewReader(configs.SimYAML))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func builtin(t testing.TB, name string) executor.Executor {
	x, _ := builtinCap(t, name)
	return x
}

func builtinCap(t testing.TB, name string) (executor.Executor, *capability.Capability) {
	t.Helper()
	reg, err := capability.LoadDir(filepath.Join("..", "..", "..", "..", "configs", "capabilities"))
	if err != nil {
		t.Fatal(err)
	}
	x, c, err := Builtin(reg, name)
	if err != nil {
		t.Fatal(err)
	}
	return x, c
}

func previewMoS2(t testing.TB, inputs, dir string) *Prediction {
	t.Helper()
	p, err := Run(context.Background(), builtin(t, executor.CVDName),
		executor.Task{SessionID: "preview-test", Inputs: json.RawMessage(inputs)},
		Opts{Config: simConfig(t), ArtifactDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPreviewMoS2 previews the seed synthesis: it completes, about one
// layer of MoS2, every step timed, gas on the lines it uses, the heater's
// energy, margins to the limits, no refusal, no trip, and the process
// profile written.
func TestPreviewMoS2(t *testing.T) {
	dir := t.TempDir()
	p := previewMoS2(t, seedInputs, dir)
	if !p.Completed {
		t.Fatalf("failed: %+v", p.Failure)
	}
	t.Logf("process %v in %v wall (%.0f×); layers %.3f %s; gas %v scc; heater %.0f full-power s",
		p.ProcessTime, time.Duration(p.WallTime), p.SpeedUp, p.Product.Layers, p.Product.Material, p.GasSCC, p.HeaterFullPowerS)
	if p.Product.Material != "MoS2" || p.Product.Layers < 0.8 || p.Product.Layers > 1.2 {
		t.Errorf("product %+v, want about one layer of MoS2", p.Product)
	}
	if lc := p.Outputs["layer_count"]; lc != 1 {
		t.Errorf("layer_count %v, want 1", lc)
	}
	for _, s := range p.Steps {
		if !s.Ran {
			t.Errorf("step %s did not run", s.Name)
		}
	}
	phase := map[string]time.Duration{}
	for _, ph := range p.Phases {
		phase[ph.Name] = time.Duration(ph.Duration)
	}
	if g := phase["material_growth"]; g < 14*time.Minute || g > 16*time.Minute {
		t.Errorf("growth %v, want the recipe's 15 min", g)
	}
	if h := phase["heating"]; h < 30*time.Minute {
		t.Errorf("heating %v: 700 °C at 20 °C/min takes more than 30 min", h)
	}
	if p.GasSCC["Ar"] <= 0 || p.GasSCC["H2S"] <= 0 || p.HeaterFullPowerS <= 0 {
		t.Errorf("usage: gas %v, heater %v", p.GasSCC, p.HeaterFullPowerS)
	}
	if len(p.Refusals) != 0 || len(p.Trips) != 0 {
		t.Errorf("refusals %+v, trips %+v", p.Refusals, p.Trips)
	}
	seen := map[string]bool{}
	for _, m := range p.Margins {
		seen[m.Channel+" "+m.Limit] = true
		if m.Headroom < 0 {
			t.Errorf("margin beyond its limit: %+v", m)
		}
	}
	for _, k := range []string{"furnace.temperature max", "furnace.setpoint max", "flow.H2S max", "chamber.pressure max"} {
		if !seen[k] {
			t.Errorf("no margin for %s in %+v", k, p.Margins)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "process_profile.svg")); err != nil {
		t.Errorf("process profile: %v", err)
	}
}

// TestPreviewShowsRefusal: on a rig whose envelope admits H2S only below
// 0.5 mbar, the seed synthesis passes (100 sccm of Ar holds the chamber
// near 0.36 mbar) but a carrier flow of 200 sccm, which the capability
// accepts, raises the chamber above it: the interlock refuses the H2S flow
// mid-run, after pump-down, purge and ramp. The preview shows the
// refusal, the step, the failure, and that nothing grew.
func TestPreviewShowsRefusal(t *testing.T) {
	cfg := simConfig(t)
	gi := cfg.Envelope.Interlocks.Gases["H2S"]
	gi.MaxPressure = envelope.Quantity{Value: 0.5, Unit: "mbar"}
	cfg.Envelope.Interlocks.Gases["H2S"] = gi
	x := builtin(t, executor.CVDName)
	run := func(inputs string) *Prediction {
		p, err := Run(context.Background(), x, executor.Task{Inputs: json.RawMessage(inputs)}, Opts{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := run(seedInputs); !p.Completed || len(p.Refusals) != 0 {
		t.Fatalf("the seed synthesis under 0.5 mbar: failure %+v, refusals %+v", p.Failure, p.Refusals)
	}
	p := run(`{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":750,"unit":"celsius"},"carrier_gas":{"gas":"Ar","flow_sccm":200}}`)
	if p.Completed || p.Failure == nil || len(p.Refusals) == 0 {
		t.Fatalf("completed: refusals %+v, warnings %v", p.Refusals, p.Warnings)
	}
	r := p.Refusals[0]
	t.Logf("refused at %v in %s: %s (%s): %s; failure %+v", r.At, r.Step, r.Action, r.Rule, r.Reason, p.Failure)
	if r.Step != "grow" || !strings.Contains(r.Action, "flow.H2S") {
		t.Errorf("refusal %+v, want the H2S flow in grow", r)
	}
	if p.Failure.Code != string(executor.CodeSafetyViolation) || p.Failure.Step != "grow" {
		t.Errorf("failure %+v", p.Failure)
	}
	if p.Product.Layers != 0 {
		t.Errorf("product %+v: nothing grows without H2S", p.Product)
	}
	if len(p.Artifacts) != 0 {
		t.Errorf("artifacts %v of a preview without an artifact directory", p.Artifacts)
	}
}

// TestPreviewShowsTrip: on a rig whose over_temperature trip is at 730 °C,
// the seed synthesis (725 °C) overshoots it in the growth: the preview runs
// the trip rule as the monitor would, the interlock latches and halts, and
// the run fails in grow.
func TestPreviewShowsTrip(t *testing.T) {
	cfg := simConfig(t)
	q := cfg.Envelope.Parameters[envelope.ChannelTemperature]
	low := 730.0
	q.Max = &low
	cfg.Envelope.Parameters[envelope.ChannelTemperature] = q
	p, err := Run(context.Background(), builtin(t, executor.CVDName), executor.Task{Inputs: json.RawMessage(seedInputs)}, Opts{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if p.Completed || len(p.Trips) != 1 || p.Trips[0].Trip != "over_temperature" {
		t.Fatalf("completed %v, trips %+v, failure %+v", p.Completed, p.Trips, p.Failure)
	}
	t.Logf("trip %+v; failure %+v", p.Trips[0], p.Failure)
	if s := p.Trips[0].Step; s != "ramp" && s != "grow" {
		t.Errorf("tripped in %s, want near the growth temperature", s)
	}
}

// TestPreviewWallCap: a preview past its wall-time cap stops and says so.
func TestPreviewWallCap(t *testing.T) {
	p, err := Run(context.Background(), builtin(t, executor.CVDName), executor.Task{Inputs: json.RawMessage(seedInputs)},
		Opts{Config: simConfig(t), WallLimit: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if p.Completed || p.Failure == nil || !strings.Contains(p.Failure.Message, "wall-time cap") {
		t.Fatalf("completed %v, failure %+v", p.Completed, p.Failure)
	}
	t.Logf("stopped: %+v", p.Failure)
}

// TestPreviewBadInput: inputs the capability's schema refuses, or the
// executor refuses to plan, are an ErrInput error naming the field; nothing
// runs.
func TestPreviewBadInput(t *testing.T) {
	x, c := builtinCap(t, executor.CVDName)
	for _, tc := range []struct{ name, inputs, want string }{
		{"schema", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":2000,"max":2100,"unit":"celsius"}}`, "temperature_range"},
		{"plan", `{"target_material":"WS2","substrate":"SiO2/Si"}`, "target_material"},
		{"not json", `{"target_material":`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), x, executor.Task{Inputs: json.RawMessage(tc.inputs)},
				Opts{Config: simConfig(t), Capability: c})
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInput naming %q", err, tc.want)
			}
		})
	}
}

// TestPreviewOtherExecutors: the leak check and the rig status preview too.
func TestPreviewOtherExecutors(t *testing.T) {
	for _, name := range []string{executor.LeakCheckName, executor.RigStatusName} {
		t.Run(name, func(t *testing.T) {
			x, c := builtinCap(t, name)
			p, err := Run(context.Background(), x, executor.Task{Inputs: json.RawMessage(`{}`)}, Opts{Config: simConfig(t), Capability: c})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: completed %v in %v, steps %+v, failure %+v", name, p.Completed, p.ProcessTime, p.Steps, p.Failure)
			if !p.Completed || len(p.Refusals) != 0 {
				t.Fatalf("%+v", p)
			}
		})
	}
}

// BenchmarkPreviewMoS2 previews the seed synthesis and reports its speed-up
// over real time (process time / wall time): at least 1,000×.
func BenchmarkPreviewMoS2(b *testing.B) {
	x := builtin(b, executor.CVDName)
	cfg := simConfig(b)
	var process, wall time.Duration
	for b.Loop() {
		start := time.Now()
		p, err := Run(context.Background(), x, executor.Task{Inputs: json.RawMessage(seedInputs)}, Opts{Config: cfg})
		if err != nil || !p.Completed {
			b.Fatalf("%v %+v", err, p)
		}
		wall += time.Since(start)
		process += time.Duration(p.ProcessTime)
	}
	ratio := float64(process) / float64(wall)
	b.ReportMetric(ratio, "x_realtime")
	if ratio < 1000 {
		b.Errorf("speed-up %.0f×, want ≥ 1000×", ratio)
	}
}
