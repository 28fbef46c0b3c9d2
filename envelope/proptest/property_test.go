package proptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/device"
	"hcp-edge/device/devicetest"
	"hcp-edge/drivers/alicat"
	"hcp-edge/drivers/gpio"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/raman"
	"hcp-edge/drivers/regmap/regmaptest"
	"hcp-edge/drivers/simgpio"
	"hcp-edge/drivers/tpg"
	"hcp-edge/envelope"
	"hcp-edge/envelope/internal/rawkey"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
)

// hangGuard bounds a whole sequence; a guard against hangs, not a
// performance assertion.
const hangGuard = 5 * time.Minute

// Instrument timeouts: short, so that silent-device faults cost little.
const (
	ioTimeout   = 120 * time.Millisecond
	readTimeout = 300 * time.Millisecond
)

type allowAll struct{}

func (allowAll) Authorize(context.Context, string, envelope.Action) (envelope.Grant, error) {
	return envelope.Grant{SessionID: "proptest"}, nil
}

func (allowAll) Authenticate(context.Context, string) (envelope.Grant, error) {
	return envelope.Grant{SessionID: "proptest"}, nil
}

type countAudit struct {
	mu sync.Mutex
	n  map[envelope.Decision]int
}

func (a *countAudit) Record(_ context.Context, e envelope.Entry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n[e.Decision]++
	return nil
}

// bench is one simulated rig with every driver on it and an interlock.
type bench struct {
	t   testing.TB
	r   *rig.Rig
	p   *plant.Plant
	env *envelope.Envelope
	il  *envelope.Interlock
}

func cleanupClose(t testing.TB, c interface{ Close() error }) { t.Cleanup(func() { _ = c.Close() }) }

func newBench(t testing.TB, ctx context.Context, yamlBytes []byte) *bench {
	t.Helper()
	r, err := rig.Start(ctx, rig.Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: 1,
		StartSerial: rig.SerialInstruments})
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("rig close: %v", err)
		}
	})
	fatal := func(what string, err error) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	mo := modbus.DefaultOpts()
	mo.Address, mo.Timeout, mo.Retries = r.ModbusAddr().String(), ioTimeout, 1
	bus, err := modbus.New(mo)
	fatal("modbus", err)
	cleanupClose(t, bus)
	fc, err := regmaptest.SimFurnace(bus)
	fatal("furnace", err)
	cleanupClose(t, fc)
	dm, err := regmaptest.SimModule(bus)
	fatal("dio", err)

	rg := envelope.Rig{Furnace: fc, Flows: map[string]device.FlowController{},
		Switches: map[string]device.Switch{}, Inputs: map[string]device.DigitalInput{}}
	for _, g := range []struct {
		gas  string
		unit byte
		fs   float64
	}{{"Ar", 'A', 500}, {"H2", 'B', 200}, {"H2S", 'C', 50}} {
		o := alicat.DefaultOpts()
		o.Profile = regmaptest.MustProfile(regmaptest.SimMFCProfile)
		o.Name, o.UnitID, o.Gas, o.FullScale, o.Timeout = "mfc-"+strings.ToLower(g.gas), g.unit, g.gas, device.SCCM(g.fs), ioTimeout
		m, err := alicat.Open(filepath.Join(r.Dir(), o.Name), o)
		fatal(o.Name, err)
		cleanupClose(t, m)
		rg.Flows[g.gas] = m
	}
	go_ := tpg.DefaultOpts()
	go_.Profile = regmaptest.MustProfile(regmaptest.SimGaugeProfile)
	go_.Timeout = ioTimeout
	gauge, err := tpg.Open(filepath.Join(r.Dir(), "gauge"), go_)
	fatal("gauge", err)
	cleanupClose(t, gauge)
	rg.Gauge = gauge
	ro := raman.DefaultOpts()
	ro.TimeScale, ro.Transfer, ro.Timeout = 1, 500*time.Millisecond, ioTimeout
	sp, err := raman.Open(filepath.Join(r.Dir(), "raman"), ro)
	fatal("raman", err)
	cleanupClose(t, sp)
	rg.Spectrometer = sp

	for _, sw := range dm.Switches() {
		rg.Switches[sw.String()] = sw
	}
	for _, name := range []string{"door_closed", "exhaust_ok", "pump_running"} {
		in, err := dm.Input(name)
		fatal(name, err)
		rg.Inputs[name] = in
	}
	so := simgpio.DefaultOpts()
	so.Socket, so.Timeout, so.MaxPoll = r.ControlPath(), time.Second, 200*time.Millisecond
	gc, err := simgpio.New(so)
	fatal("simgpio", err)
	cleanupClose(t, gc)
	oo := gpio.DefaultOutputOpts("relay")
	oo.IOTimeout = time.Second
	relay, err := gpio.NewOutput(gc.Pin(simgpio.Relay), gc.Pin(simgpio.RelayFB), oo)
	fatal("relay", err)
	rg.Switches["relay"] = relay
	for _, in := range []struct {
		name, pin string
		activeLow bool
	}{{"estop_pressed", simgpio.EStop, true}, {"leak_detected", simgpio.Leak, true}, {"relay_fb", simgpio.RelayFB, false}} {
		o := gpio.DefaultInputOpts(in.name)
		o.ActiveLow, o.Debounce, o.ReadTimeout = in.activeLow, 0, readTimeout
		gi, err := gpio.NewInput(gc.Pin(in.pin), o)
		fatal(in.name, err)
		cleanupClose(t, gi)
		rg.Inputs[in.name] = gi
	}

	cfg, err := envelope.LoadYAML(bytes.NewReader(yamlBytes))
	fatal("envelope config", err)
	env, err := envelope.Compile(cfg, simrig.Spec())
	fatal("envelope", err)
	io := envelope.DefaultInterlockOpts()
	io.ReadTimeout, io.WriteTimeout, io.HaltTimeout = readTimeout, time.Second, time.Second
	il, err := envelope.NewInterlock(env, rg, allowAll{}, &countAudit{n: map[envelope.Decision]int{}}, io)
	fatal("interlock", err)
	return &bench{t: t, r: r, p: r.Plant(), env: env, il: il}
}

// op is one tracked operation: the write-log range it produced and the plant
// around it.
type op struct {
	what      string
	from, to  uint64 // write-log sequence numbers (from, to]
	pre, post plant.Snapshot
	action    *envelope.Action
	err       error
}

type tally struct {
	mu       sync.Mutex
	actions  int
	executed int
	refused  map[string]int // by rule or error class
	faults   int
	trips    int
	writes   int
}

func (ty *tally) add(f func(*tally)) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	f(ty)
}

// run does f and records its writes with the plant before and after.
func (b *bench) run(what string, a *envelope.Action, f func() error) op {
	o := op{what: what, action: a, pre: b.p.Snapshot()}
	o.from, _ = b.p.WriteLogStats()
	o.err = f()
	o.to, _ = b.p.WriteLogStats()
	o.post = b.p.Snapshot()
	return o
}

// randomAction draws an action; many leave the envelope or break an
// interlock on purpose.
func randomAction(rng *rand.Rand) envelope.Action {
	switches := []string{"pump", "gate_valve", "ar_valve", "h2_valve", "h2s_valve", "vent_valve", "scrubber", "relay"}
	gases := map[string]float64{"Ar": 500, "H2": 100, "H2S": 20}
	odd := func(v float64) float64 { // sometimes not a number at all
		switch rng.IntN(60) {
		case 0:
			return math.NaN()
		case 1:
			return math.Inf(1)
		}
		return v
	}
	switch rng.IntN(12) {
	case 0, 1:
		return envelope.SetpointAction(device.Celsius(odd(-100 + 1400*rng.Float64())))
	case 2:
		return envelope.RampRateAction(device.KelvinPerMinute(odd(-5 + 40*rng.Float64())))
	case 3:
		return envelope.HeaterAction(rng.IntN(3) > 0)
	case 4, 5, 6:
		gas := []string{"Ar", "H2", "H2S"}[rng.IntN(3)]
		var f float64
		switch rng.IntN(4) {
		case 0:
			f = 0
		case 1:
			f = 0.02 * rng.Float64() // small enough for a rate limit
		default:
			f = 1.3 * gases[gas] * rng.Float64()
		}
		if gas == "Ar" && rng.IntN(2) == 0 {
			f = 50 + 100*rng.Float64() // inert flow for the heater interlock
		}
		return envelope.FlowAction(gas, device.SCCM(odd(f)))
	case 7, 8, 9, 10:
		return envelope.SwitchAction(switches[rng.IntN(len(switches))], rng.IntN(2) == 0)
	default:
		ms := []float64{0, 5, 10, 25, 40, 31000, 60000}[rng.IntN(7)]
		return envelope.AcquireAction(time.Duration(odd(ms) * float64(time.Millisecond)))
	}
}

// randomFault picks a fault of configs/rig-protocols.md and its target.
func randomFault(rng *rand.Rand) (name, target string) {
	faults := []string{plant.FaultTCOpen, plant.FaultTCFrozen, plant.FaultSilent, plant.FaultCorrupt,
		plant.FaultMFCStuckOpen, plant.FaultGasLeak, plant.FaultVacuumLoss, plant.FaultDoorOpen, plant.FaultEstop}
	name = faults[rng.IntN(len(faults))]
	switch name {
	case plant.FaultSilent, plant.FaultCorrupt:
		target = plant.Devices[rng.IntN(len(plant.Devices))]
	case plant.FaultMFCStuckOpen:
		target = []string{"ar", "h2", "h2s"}[rng.IntN(3)]
	}
	return name, target
}

// typedRefusal reports whether err is one of the documented typed errors of
// Apply and names its class.
func typedRefusal(err error) (string, bool) {
	var v *envelope.Violation
	if errors.As(err, &v) {
		return string(v.Rule), true
	}
	for _, s := range []error{envelope.ErrUnauthorized, envelope.ErrAudit, device.ErrTimeout, device.ErrChecksum,
		device.ErrFrame, device.ErrRejected, device.ErrSensor, device.ErrReadback, device.ErrOutOfRange, device.ErrClosed} {
		if errors.Is(err, s) {
			return "device/" + strings.TrimPrefix(strings.SplitN(s.Error(), ":", 2)[1], " "), true
		}
	}
	return "", false
}

// expectedWrite is the write-log entry an executed action must have left.
func expectedWrite(a envelope.Action) (device, channel string, value, tol float64) {
	b := func(on bool) float64 {
		if on {
			return 1
		}
		return 0
	}
	switch a.Kind {
	case envelope.ActSetpoint:
		return "furnace", "setpoint", math.Round(a.Temperature.Celsius() * 10), 0.5
	case envelope.ActRampRate:
		return "furnace", "ramp_rate", math.Round(float64(a.Rate) * 10), 0.5
	case envelope.ActHeater:
		return "furnace", "heater_enable", b(a.On), 0
	case envelope.ActFlow:
		return "mfc-" + strings.ToLower(a.Target), "setpoint", float64(a.Flow), 0.01
	case envelope.ActSwitch:
		return "dio", "coil:" + a.Target, b(a.On), 0
	case envelope.ActAcquire:
		return "raman", "acquire", float64(a.Integration.Milliseconds()), 0.5
	}
	return "", "", 0, 0
}

// sequence runs one random sequence on a fresh rig and checks the invariants.
func sequence(t *testing.T, seed uint64, n int, lim limits, yamlBytes []byte, ty *tally) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 0x70726f70))
	b := newBench(t, ctx, yamlBytes)
	start, _ := b.p.WriteLogStats()
	var ops []op
	do := func(what string, a *envelope.Action, f func() error) op {
		o := b.run(what, a, f)
		ops = append(ops, o)
		return o
	}
	// A monitor stand-in: what envelope.Monitor does when a trip condition
	// holds, done synchronously between actions so the oracle can attribute
	// every write.
	checkTrips := func() {
		var r envelope.Readings
		do("monitor poll", nil, func() error { r = b.il.View().Readings(ctx); return nil })
		if evs := b.env.EvaluateTrips(r); len(evs) > 0 {
			if latched, _ := b.il.Latched(); !latched {
				ty.add(func(ty *tally) { ty.trips++ })
			}
			do("trip "+string(evs[0].Trip), nil, func() error { return b.il.Trip(ctx, evs[0]) })
		}
	}
	arm := func() {
		do("arm", nil, func() error { return b.il.Arm(ctx, "proptest") })
	}
	// Most sequences start from a rig made ready: scrubber on, pumped down,
	// relay energised.
	if rng.IntN(4) > 0 {
		for _, a := range []envelope.Action{envelope.SwitchAction("scrubber", true),
			envelope.SwitchAction("pump", true), envelope.SwitchAction("gate_valve", true)} {
			do("prepare", &a, func() error { _, err := b.il.ApplyKeyed(rawkey.Key{}, ctx, "token", a); return err })
		}
		b.p.Step(time.Duration(60+rng.IntN(120)) * time.Second)
		arm()
	}

	var faults [][2]string
	for i := 0; i < n; i++ {
		perturbed := false
		if rng.IntN(8) == 0 {
			b.p.Step(time.Duration(rng.IntN(90_000)) * time.Millisecond)
			perturbed = true
		}
		if rng.IntN(12) == 0 {
			name, target := randomFault(rng)
			if err := b.p.Inject(name, target); err != nil {
				t.Fatalf("inject %s %s: %v", name, target, err)
			}
			faults = append(faults, [2]string{name, target})
			ty.add(func(ty *tally) { ty.faults++ })
			perturbed = true
		}
		if len(faults) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(faults))
			if err := b.p.Clear(faults[k][0], faults[k][1]); err != nil {
				t.Fatalf("clear %v: %v", faults[k], err)
			}
			faults = append(faults[:k], faults[k+1:]...)
			perturbed = true
		}
		// The monitor does not always poll before the next action: Apply
		// must hold the envelope on its own.
		if perturbed && rng.IntN(4) > 0 {
			checkTrips()
		}
		if latched, _ := b.il.Latched(); latched && rng.IntN(4) == 0 {
			do("reset", nil, func() error { return b.il.Reset(ctx, "proptest") })
			if rng.IntN(2) == 0 {
				arm()
			}
		}

		a := randomAction(rng)
		o := do(a.String(), &a, func() error { _, err := b.il.ApplyKeyed(rawkey.Key{}, ctx, "token", a); return err })
		ty.add(func(ty *tally) { ty.actions++ })
		if o.err == nil {
			ty.add(func(ty *tally) { ty.executed++ })
			continue
		}
		class, ok := typedRefusal(o.err)
		if !ok {
			t.Errorf("seed %d action %d %v: untyped error %v", seed, i, a, o.err)
		}
		ty.add(func(ty *tally) { ty.refused[class]++ })
	}

	// Invariants over the whole write log.
	writes := b.p.Writes(start)
	if _, dropped := b.p.WriteLogStats(); dropped > 0 {
		t.Fatalf("the write log dropped %d entries", dropped)
	}
	ty.add(func(ty *tally) { ty.writes += len(writes) })
	wi := 0
	for _, o := range ops {
		var mine []plant.Write
		for wi < len(writes) && writes[wi].Seq <= o.to {
			if writes[wi].Seq <= o.from {
				t.Errorf("seed %d: write %+v outside every tracked operation", seed, writes[wi])
			} else {
				mine = append(mine, writes[wi])
			}
			wi++
		}
		for _, w := range mine {
			if why := lim.judge(w, o.pre, o.post); why != "" {
				t.Errorf("seed %d: %s: the firmware received %s/%s = %g (accepted %v), outside the envelope: %s",
					seed, o.what, w.Device, w.Channel, w.Value, w.Accepted, why)
			}
		}
		if o.action != nil && o.err == nil {
			dev, ch, v, tol := expectedWrite(*o.action)
			found := false
			for _, w := range mine {
				if w.Device == dev && w.Channel == ch && math.Abs(w.Value-v) <= tol && w.Accepted {
					found = true
				}
			}
			if !found {
				t.Errorf("seed %d: %s executed but the log holds no accepted %s/%s = %g: %+v", seed, o.what, dev, ch, v, mine)
			}
		}
	}
	for ; wi < len(writes); wi++ {
		t.Errorf("seed %d: write %+v after the last tracked operation", seed, writes[wi])
	}
}

// TestRandomActionsStayInsideEnvelope is the property test: random action
// sequences under random conditions and faults against the simulated rig;
// the simulator's write log never holds a value outside the envelope, every
// refusal is typed, and every executed action is in the log.
//
// HCP_PROPTEST_SEED=n replays a run; HCP_PROPTEST_SEQUENCES and
// HCP_PROPTEST_ACTIONS change its size.
func TestRandomActionsStayInsideEnvelope(t *testing.T) {
	lim, yamlBytes := loadLimits(t)
	// 12 sequences by default (1,200 actions, ~15 s: a run here refused
	// under 16 distinct rules and injected ~90 faults), 40 under `make soak`
	// (HCP_SOAK=1); -short runs 6 of 60.
	seqs := devicetest.Runs(t, "HCP_PROPTEST_SEQUENCES", 6, 12, 40)
	n := 100
	if testing.Short() {
		n = 60
	}
	if s := os.Getenv("HCP_PROPTEST_ACTIONS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("HCP_PROPTEST_ACTIONS=%q", s)
		}
		n = v
	}
	seed := rand.Uint64() >> 12
	if s := os.Getenv("HCP_PROPTEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HCP_PROPTEST_SEED=%q", s)
		}
		seed = v
	}
	t.Logf("seed %d (replay with HCP_PROPTEST_SEED=%d): %d sequences of %d actions", seed, seed, seqs, n)
	ty := &tally{refused: map[string]int{}}
	began := time.Now()
	for i := range seqs {
		s := seed + uint64(i)
		t.Run(fmt.Sprintf("seq%02d", i), func(t *testing.T) { sequence(t, s, n, lim, yamlBytes, ty) })
		if t.Failed() {
			break
		}
	}
	classes := make([]string, 0, len(ty.refused))
	for c, k := range ty.refused {
		classes = append(classes, fmt.Sprintf("%s=%d", c, k))
	}
	sort.Strings(classes)
	t.Logf("%d actions in %v: %d executed, refused or failed: %s; %d faults injected, %d trips; %d writes judged",
		ty.actions, time.Since(began).Round(time.Millisecond), ty.executed, strings.Join(classes, " "), ty.faults, ty.trips, ty.writes)
}
