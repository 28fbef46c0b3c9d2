package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hiltest/hilbench"
	"hcp-edge/device"
	"hcp-edge/device/devicetest"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
)

// leakRuns is how many leak checks TestLeakCheckAgainstSimulator runs per
// case: 10 (every verdict and rate still checked on each), 100 under `make
// soak` (HCP_SOAK=1), HCP_LEAK_RUNS when set.
func leakRuns(t *testing.T) int { return devicetest.Runs(t, "HCP_LEAK_RUNS", 10, 10, 100) }

// TestLeakCheckAgainstSimulator runs the leak-check executor against the
// simulated rig (every real driver, the interlock and its monitor, readings
// from the monitor's cache) with a threshold of 10 Pa/min: a tight chamber
// (its own leak, about 3 Pa/min) passes every run; with the simulator's
// chamber-leak fault adding 12 Pa/min (about 1.5 × the threshold) or 40
// Pa/min (base pressure raised to reach; 10 runs), every run fails,
// reporting its measured rate. Each run is a whole leak check (preflight,
// pump-down, the capability's default 300 s hold, restore); the rate comes from two gauge readings taken after the
// isolation, divided by the interval between their own timestamps.
func TestLeakCheckAgainstSimulator(t *testing.T) {
	t.Parallel() // its own simulated rig: runs beside the other whole-recipe tests
	b := newSimBench(t, e2eScale)
	clock, _ := NewScaledClock(e2eScale)
	lc, _ := NewLeakCheck(resolve(t, LeakCheckName))
	runs := leakRuns(t)
	tests := []struct {
		name   string
		leak   string // chamber-leak target, Pa/min; "" for none
		inputs string
		passed bool
		runs   int // 0: leakRuns
	}{
		{"tight chamber passes", "", `{"hold_seconds":300,"max_rate_of_rise_pa_per_min":10}`, true, 0},
		{"leak 1.5x the threshold fails", "12", `{"hold_seconds":300,"max_rate_of_rise_pa_per_min":10}`, false, 0},
		{"leak 4x the threshold fails", "40", `{"base_pressure_pa":20,"hold_seconds":300,"max_rate_of_rise_pa_per_min":10}`, false, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.leak != "" {
				if err := b.Plant.Inject(plant.FaultChamberLeak, tc.leak); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Plant.Clear(plant.FaultChamberLeak, "") })
			}
			runs := runs
			if tc.runs > 0 {
				runs = min(runs, tc.runs)
			}
			lo, hi, sum, wrong, stalled := math.Inf(1), math.Inf(-1), 0.0, 0, 0
			start := time.Now()
			for i := range runs {
				rec, err := lc.Plan(Task{SessionID: "s", Inputs: json.RawMessage(tc.inputs)})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
				env := &Env{Rig: b.rig(), Token: "t", Clock: clock, Sink: &memSink{},
					Checkpoints: &memCkpt{}, SessionID: "s"}
				if i == 0 { // the first run of each case also draws its plot
					env.ArtifactDir = t.TempDir()
				}
				res, err := Execute(ctx, rec, env, 0)
				cancel()
				if err != nil {
					// A stall of the loaded machine longer than the comms-loss
					// window trips the monitor, as it must: the run ends
					// without a verdict (never a wrong one). The operator
					// resets and arms again; such runs are counted apart and
					// may be at most a tenth. Any other trip, or an error
					// without one, is a failure.
					if latched, why := b.Interlock.Latched(); latched && strings.Contains(why, string(envelope.TripCommsLoss)) {
						stalled++
						t.Logf("run %d: ended by a comms_loss trip (%v): reset and armed again", i, err)
						b.ArmAs(t, "e2e-operator", time.Now().Add(hilbench.DefaultWait), hilbench.DefaultPoll)
						continue
					}
					wrong++
					t.Errorf("run %d: %v", i, err)
					if latched, why := b.Interlock.Latched(); latched {
						t.Fatalf("the interlock latched (%s): stopping", why)
					}
					continue
				}
				rate := res.Outputs["rate_of_rise_pa_per_min"].(float64)
				lo, hi, sum = math.Min(lo, rate), math.Max(hi, rate), sum+rate
				if i == 0 {
					checkLeakPlot(t, res, tc.passed, rate, 10)
				}
				if res.Outputs["passed"] != tc.passed {
					wrong++
					t.Errorf("run %d: passed=%v at %.3f Pa/min (outputs %v)", i, res.Outputs["passed"], rate, res.Outputs)
				}
			}
			done := runs - stalled
			t.Logf("%d/%d runs passed=%v (%d ended by a comms_loss trip of the loaded machine); rate of rise min %.3f mean %.3f max %.3f Pa/min; %v per run",
				done-wrong, done, tc.passed, stalled, lo, sum/float64(max(done, 1)), hi, (time.Since(start) / time.Duration(runs)).Round(time.Millisecond))
			if stalled*10 > runs {
				t.Fatalf("%d of %d runs ended by a comms_loss trip: more than a tenth", stalled, runs)
			}
		})
	}
}

// checkLeakPlot checks a leak check's one artifact: the pressure-rise SVG
// with its verdict and the gauge readings of the hold.
func checkLeakPlot(t *testing.T, res *Result, passed bool, rate, maxRate float64) {
	t.Helper()
	if len(res.Artifacts) != 1 || res.Artifacts[0].Type != svgType {
		t.Fatalf("artifacts %+v", res.Artifacts)
	}
	b, err := os.ReadFile(res.Artifacts[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	doc := readSVG(t, b)
	doc.note(t, "verdict: "+leakVerdict(passed, rate, maxRate))
	doc.has(t, "gauge readings", 2)
}

// mangledRig passes every snapshot of its Rig through mangle, which sees
// the gauge readings as a monitor would serve them.
// It records when the gate valve read back closed (isolated).
type mangledRig struct {
	Rig
	mangle   func(r *envelope.Readings)
	isolated time.Time
}

func (m *mangledRig) Readings(ctx context.Context) envelope.Readings {
	r := m.Rig.Readings(ctx)
	m.mangle(&r)
	return r
}

func (m *mangledRig) Apply(ctx context.Context, tok string, a envelope.Action) (envelope.Result, error) {
	res, err := m.Rig.Apply(ctx, tok, a)
	if err == nil && a == envelope.SwitchAction("gate_valve", false) {
		m.isolated = res.At
	}
	return res, err
}

// TestLeakRateRefusesStaleReadings: the rate of rise is never computed from
// a reading older than the isolation, from a second reading that never
// came or came out of order, or from an invalid one: the measurement fails
// with a *ReadingError naming the reading (execution_error), never a rate.
func TestLeakRateRefusesStaleReadings(t *testing.T) {
	b := newSimBench(t, e2eScale)
	clock, _ := NewScaledClock(e2eScale)
	base := b.rig()
	n := namesOf(base.Envelope())
	// afterFirst serves the first gauge reading requested after the
	// isolation untouched (p0), then passes the next ones through f with
	// that one.
	var mr *mangledRig
	afterFirst := func(f func(r *envelope.Readings, first device.PressureReading)) func(*envelope.Readings) {
		var first *device.PressureReading
		return func(r *envelope.Readings) {
			switch {
			// p0 is the first reading requested after the isolation, as the
			// executor judges it (gaugeAt): a reply to a request sent before
			// it is not p0, however late it came.
			case mr.isolated.IsZero() || !gaugeAt(*r).After(mr.isolated):
			case first == nil:
				p := r.Pressure
				first = &p
			case r.Pressure.At.After(first.At):
				f(r, *first)
			}
		}
	}
	tests := []struct {
		name    string
		mangle  func() func(*envelope.Readings)
		reading string
	}{
		{"gauge silent since before the isolation", func() func(*envelope.Readings) {
			before := base.Readings(context.Background()).Pressure
			return func(r *envelope.Readings) { r.Pressure = before }
		}, "gauge p0"},
		{"gauge silent after the first reading", func() func(*envelope.Readings) {
			return afterFirst(func(r *envelope.Readings, first device.PressureReading) { r.Pressure = first })
		}, "gauge p1"},
		{"second reading stamped before the first", func() func(*envelope.Readings) {
			return afterFirst(func(r *envelope.Readings, first device.PressureReading) {
				r.Pressure.At = first.At.Add(-time.Millisecond)
				r.Pressure.Sent = r.Pressure.At.Add(-time.Millisecond)
			})
		}, "gauge p1"},
		{"second reading invalid", func() func(*envelope.Readings) {
			return afterFirst(func(r *envelope.Readings, _ device.PressureReading) { r.Pressure.Status = device.GaugeSensorError })
		}, "gauge p1"},
		{"second reading above the gauge's range", func() func(*envelope.Readings) {
			return afterFirst(func(r *envelope.Readings, _ device.PressureReading) { r.Pressure.Status = device.GaugeOverrange })
		}, "gauge p1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pumped := &proc{}
			penv := &Env{Rig: base, Clock: clock, Sink: &memSink{}, Checkpoints: &memCkpt{}}
			if err := penv.defaults(); err != nil {
				t.Fatal(err)
			}
			pumped.begin(penv)
			if err := pumpDown(context.Background(), pumped, n, "t", 20, 30*time.Minute); err != nil {
				t.Fatal(err)
			}
			// The p1 cases need p0 served: when the unmangled gauge itself
			// gave no fresh p0 in time (a loaded machine), that measurement
			// failed as it must but proved nothing of p1; it is tried again.
			var m leakMeasure
			var err error
			var re *ReadingError
			for try := 1; ; try++ {
				p := &proc{}
				mr = &mangledRig{Rig: base}
				mr.mangle = tc.mangle()
				env := &Env{Rig: mr, Clock: clock, Sink: &memSink{}, Checkpoints: &memCkpt{}}
				if err := env.defaults(); err != nil {
					t.Fatal(err)
				}
				p.begin(env)
				m, err = leakRate(context.Background(), p, n, "t", time.Minute)
				if try < 3 && tc.reading == "gauge p1" && errors.As(err, &re) && strings.HasPrefix(re.Reading, "gauge p0") {
					t.Logf("try %d: %v (p0 not served; again)", try, err)
					continue
				}
				break
			}
			if !errors.Is(err, ErrStale) || !errors.As(err, &re) || !strings.HasPrefix(re.Reading, tc.reading) {
				t.Fatalf("measurement %+v, err %v; want a *ReadingError of %s", m, err, tc.reading)
			}
			t.Logf("%v", err)
			if c := Classify(context.Background(), fmt.Errorf("x: %w", err)); c != CodeExecution {
				t.Fatalf("classified %s", c)
			}
		})
	}
	// A slow reply cannot hide a leak: every reply after p0 arrives 2 s late
	// (a busy host; at this time scale, 2 s of wall time is 20 min of
	// process time). The interval runs from p0's reply to p1's request, the
	// shortest the readings allow, so the tight chamber's rate (3 Pa/min)
	// is measured as it is, not diluted over the delay.
	t.Run("slow replies after p0", func(t *testing.T) {
		pumped := &proc{}
		penv := &Env{Rig: base, Clock: clock, Sink: &memSink{}, Checkpoints: &memCkpt{}}
		if err := penv.defaults(); err != nil {
			t.Fatal(err)
		}
		pumped.begin(penv)
		if err := pumpDown(context.Background(), pumped, n, "t", 20, 30*time.Minute); err != nil {
			t.Fatal(err)
		}
		mr = &mangledRig{Rig: base}
		mr.mangle = afterFirst(func(r *envelope.Readings, _ device.PressureReading) {
			r.Pressure.At = r.Pressure.At.Add(2 * time.Second)
		})
		env := &Env{Rig: mr, Clock: clock, Sink: &memSink{}, Checkpoints: &memCkpt{}}
		if err := env.defaults(); err != nil {
			t.Fatal(err)
		}
		p := &proc{}
		p.begin(env)
		m, err := leakRate(context.Background(), p, n, "t", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("measurement %+v", m)
		if m.Rate < 2 || m.Interval > 3*time.Minute {
			t.Fatalf("rate %.3f Pa/min over %v: the late replies stretched the interval", m.Rate, m.Interval)
		}
	})
}

// TestFreshnessJudge: a reading counts only when taken after the action and
// no older than the reading age; a run of looks without one fails once it
// lasts longer than the reading age, however far apart the looks are.
func TestFreshnessJudge(t *testing.T) {
	act := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	const age = 2 * time.Second
	look := func(now, read time.Duration) envelope.Readings {
		return envelope.Readings{At: act.Add(now), Pressure: device.PressureReading{At: act.Add(read)}}
	}
	tests := []struct {
		name  string
		looks []envelope.Readings
		fresh []bool // per look; after the last, failed says whether it failed
		fails bool
	}{
		{"new reading", []envelope.Readings{look(100*time.Millisecond, 50*time.Millisecond)}, []bool{true}, false},
		{"reading from before the action", []envelope.Readings{look(100*time.Millisecond, -time.Millisecond)}, []bool{false}, false},
		{"reading as old as the action", []envelope.Readings{look(time.Second, 0)}, []bool{false}, false},
		{"stale for longer than the age", []envelope.Readings{look(10*time.Millisecond, -time.Second), look(time.Second, -time.Second),
			look(2100*time.Millisecond, -time.Second)}, []bool{false, false, false}, true},
		{"after the action but too old", []envelope.Readings{look(3*time.Second, 500*time.Millisecond), look(5500*time.Millisecond, 500*time.Millisecond)},
			[]bool{false, false}, true},
		{"one stale look 5 s after a fresh one", []envelope.Readings{look(time.Second, 900*time.Millisecond), look(6*time.Second, 3*time.Second)},
			[]bool{true, false}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &freshness{reading: "gauge", since: act, at: gaugeAt, maxAge: age}
			var err error
			for i, r := range tt.looks {
				var fresh bool
				fresh, err = f.judge(r)
				if i < len(tt.looks)-1 && err != nil {
					t.Fatalf("look %d failed: %v", i, err)
				}
				if fresh != tt.fresh[i] {
					t.Fatalf("look %d fresh %v", i, fresh)
				}
			}
			var re *ReadingError
			if tt.fails != (err != nil) || (err != nil && (!errors.As(err, &re) || re.Reading != "gauge" || !errors.Is(err, ErrStale))) {
				t.Fatalf("err %v, want failure %v", err, tt.fails)
			}
		})
	}
}
