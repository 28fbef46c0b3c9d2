package hil

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/alicat"
	"github.com/hcp-edge/hcp-edge/drivers/dio"
	"github.com/hcp-edge/hcp-edge/drivers/furnace"
	"github.com/hcp-edge/hcp-edge/drivers/gpio"
	"github.com/hcp-edge/hcp-edge/drivers/modbus"
	"github.com/hcp-edge/hcp-edge/drivers/raman"
	"github.com/hcp-edge/hcp-edge/drivers/simgpio"
	"github.com/hcp-edge/hcp-edge/drivers/tpg"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/envelope/internal/rawkey"
	"github.com/hcp-edge/hcp-edge/firmware-sim/plant"
	"github.com/hcp-edge/hcp-edge/firmware-sim/rig"
	"github.com/hcp-edge/hcp-edge/session/audit"
)

// hangGuard bounds every wait of these tests; it is a guard against hangs, not
// a performance assertion.
const hangGuard = 20 * time.Second

// simScale is the simulator's time scale of the trip tests (sim seconds per
// wall second): fast enough to heat the furnace in a fraction of a second.
// Comms timings (polls, watchdog, comms timeout) are wall clock whatever it is.
const simScale = 3000

// allowAll is an Authorizer that allows everything as session "hil".
type allowAll struct{}

func (allowAll) Authorize(context.Context, string, envelope.Action) (envelope.Grant, error) {
	return envelope.Grant{SessionID: "hil"}, nil
}

func (allowAll) Authenticate(context.Context, string) (envelope.Grant, error) {
	return envelope.Grant{SessionID: "hil"}, nil
}

// teeAudit appends every entry to a hash-chained audit log in a bbolt file and
// keeps a copy in memory for the assertions.
type teeAudit struct {
	log audit.Interlock
	mu  sync.Mutex
	all []envelope.Entry
}

func (a *teeAudit) Record(ctx context.Context, e envelope.Entry) error {
	if err := a.log.Record(ctx, e); err != nil {
		return err
	}
	a.mu.Lock()
	a.all = append(a.all, e)
	a.mu.Unlock()
	return nil
}

func (a *teeAudit) entries(d envelope.Decision) []envelope.Entry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []envelope.Entry
	for _, e := range a.all {
		if e.Decision == d {
			out = append(out, e)
		}
	}
	return out
}

func (a *teeAudit) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.all)
}

// bench is one in-process rig with every driver, the interlock over them and
// its monitor.
type bench struct {
	t     testing.TB
	r     *rig.Rig
	p     *plant.Plant
	il    *envelope.Interlock
	m     *Monitor
	audit *teeAudit
	log   *audit.Log
	ctx   context.Context
	fc    *furnace.Controller
}

// Monitor is envelope.Monitor (named here for brevity).
type Monitor = envelope.Monitor

func loadEnvelope(t testing.TB) *envelope.Envelope {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := envelope.LoadYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(cfg, envelope.SimRigSpec())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// newBench starts the rig at time scale scale, builds every driver on it, the
// interlock (testdata envelope, allow-all authorizer, audit log in a bbolt
// file) and a started monitor with mopts.
func newBench(t testing.TB, scale float64, mopts envelope.MonitorOpts) *bench {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	r, err := rig.Start(context.Background(), rig.Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: scale,
		StartSerial: rig.SerialInstruments})
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("rig close: %v", err)
		}
	})
	b := &bench{t: t, r: r, p: r.Plant(), ctx: ctx}
	bus := func() *modbus.Bus {
		o := modbus.DefaultOpts()
		// The drivers' own timeouts, as the agent ships them (not shorter: a
		// bench that times out sooner than the product trips on a busy
		// machine where the product would not).
		o.Transport, o.Address, o.Retries = modbus.TransportTCP, r.ModbusAddr().String(), 1
		mb, err := modbus.New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mb.Close() })
		return mb
	}
	fc, err := furnace.New(bus(), furnace.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.Close() })
	b.fc = fc
	mod, err := dio.New(bus(), dio.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	er := envelope.Rig{Furnace: fc, Flows: map[string]device.FlowController{}, Switches: map[string]device.Switch{},
		Inputs: map[string]device.DigitalInput{}}
	for _, name := range []string{"pump", "gate_valve", "ar_valve", "h2_valve", "h2s_valve", "vent_valve", "scrubber"} {
		sw, err := mod.Switch(name)
		if err != nil {
			t.Fatal(err)
		}
		er.Switches[name] = sw
	}
	for _, name := range []string{"door_closed", "exhaust_ok", "pump_running"} {
		in, err := mod.Input(name)
		if err != nil {
			t.Fatal(err)
		}
		er.Inputs[name] = in
	}
	for _, g := range []struct {
		gas, dev string
		id       byte
		fs       float64
	}{{"Ar", "mfc-ar", 'A', 500}, {"H2", "mfc-h2", 'B', 200}, {"H2S", "mfc-h2s", 'C', 50}} {
		o := alicat.DefaultOpts()
		o.Name, o.UnitID, o.Gas, o.FullScale = g.dev, g.id, g.gas, device.SCCM(g.fs)
		mfc, err := alicat.Open(filepath.Join(r.Dir(), g.dev), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mfc.Close() })
		er.Flows[g.gas] = mfc
	}
	go_ := tpg.DefaultOpts()
	gauge, err := tpg.Open(filepath.Join(r.Dir(), "gauge"), go_)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gauge.Close() })
	er.Gauge = gauge
	ro := raman.DefaultOpts()
	ro.TimeScale = scale
	sp, err := raman.Open(filepath.Join(r.Dir(), "raman"), ro)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sp.Close() })
	er.Spectrometer = sp

	so := simgpio.DefaultOpts()
	so.Socket, so.Timeout, so.MaxPoll = r.ControlPath(), 2*time.Second, 200*time.Millisecond
	gc, err := simgpio.New(so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gc.Close() })
	ro_ := gpio.DefaultOutputOpts("relay")
	relay, err := gpio.NewOutput(gc.Pin(simgpio.Relay), gc.Pin(simgpio.RelayFB), ro_)
	if err != nil {
		t.Fatal(err)
	}
	er.Switches["relay"] = relay
	for _, in := range []struct {
		name, pin string
		activeLow bool
	}{{"estop_pressed", simgpio.EStop, true}, {"leak_detected", simgpio.Leak, true}, {"relay_fb", simgpio.RelayFB, false}} {
		o := gpio.DefaultInputOpts(in.name)
		o.ActiveLow = in.activeLow
		gi, err := gpio.NewInput(gc.Pin(in.pin), o)
		if err != nil {
			t.Fatal(err)
		}
		if err := gi.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = gi.Close() })
		er.Inputs[in.name] = gi
	}

	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	lg, err := audit.Open(db, audit.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	b.log = lg
	b.audit = &teeAudit{log: audit.Interlock{Log: lg}}
	b.il, err = envelope.NewInterlock(loadEnvelope(t), er, allowAll{}, b.audit, envelope.DefaultInterlockOpts())
	if err != nil {
		t.Fatal(err)
	}
	b.m, err = envelope.NewMonitor(b.il, mopts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.m.Close(); err != nil {
			t.Errorf("monitor close: %v", err)
		}
	})
	b.waitFor("every instrument read", func() bool {
		st := b.m.Status()
		for _, ok := range st.Healthy {
			if !ok {
				return false
			}
		}
		return len(st.Healthy) > 0
	})
	return b
}

// waitFor polls cond until it holds or the hang guard runs out.
func (b *bench) waitFor(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// apply runs a through the interlock and fails the test on an error.
// apply runs a setup action, which must be accepted. A refusal for a stale
// reading (the interlock's own fresh read of an instrument missed its
// timeout on a busy machine: it refuses rather than guesses), or a write the
// device did not answer in time (device.ErrTimeout), is tried again once the
// monitor has read every instrument anew, within the hang guard; any other
// refusal fails the test at once. The actions a test is about go
// through refused or the trip checks, never through this retry.
func (b *bench) apply(a envelope.Action) {
	b.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		_, err := b.il.ApplyKeyed(rawkey.Key{}, b.ctx, "token", a)
		var v *envelope.Violation
		if err == nil {
			return
		}
		stale := errors.As(err, &v) && v.Rule == envelope.RuleStale
		if !stale && !errors.Is(err, device.ErrTimeout) || time.Now().After(deadline) {
			b.t.Fatalf("apply %v: %v", a, err)
		}
		b.t.Logf("apply %v: %v: again after fresh readings", a, err)
		since := time.Now()
		live := freshParts(b.m.Readings(), since.Add(-b.il.View().Envelope().MaxReadingAge()))
		b.waitFor("fresh readings", func() bool { return len(freshParts(b.m.Readings(), since)) >= len(live) })
	}
}

// freshParts names the parts of r read after since (a silent instrument's
// part never is: the retry waits for the live ones only).
func freshParts(r envelope.Readings, since time.Time) []string {
	var parts []string
	add := func(name string, at time.Time) {
		if at.After(since) {
			parts = append(parts, name)
		}
	}
	add("furnace", r.Furnace.At)
	add("gauge", r.Pressure.At)
	for gas, f := range r.Flows {
		add("flow."+gas, f.At)
	}
	for name, l := range r.Switches {
		add("switch."+name, l.At)
	}
	for name, l := range r.Inputs {
		add("input."+name, l.At)
	}
	return parts
}

// refused checks that a is refused with a typed error while latched, and that
// nothing reached the firmware.
func (b *bench) refused(a envelope.Action) {
	b.t.Helper()
	mark := b.mark()
	_, err := b.il.ApplyKeyed(rawkey.Key{}, b.ctx, "token", a)
	var v *envelope.Violation
	if !errors.As(err, &v) || v.Rule != envelope.RuleLatched || !errors.Is(err, envelope.ErrViolation) {
		b.t.Fatalf("apply %v while latched: %v, want a latched violation", a, err)
	}
	// The monitor may re-assert the procedure's safe outputs meanwhile (and kick
	// the watchdog); anything else reaching the firmware came from the refused
	// action.
	for _, w := range b.p.Writes(mark) {
		if !safeDirectionWrite(w) {
			b.t.Fatalf("a refused action reached the firmware: %+v", w)
		}
	}
}

// safeDirectionWrite reports whether w drives an output towards its safe state
// (or only kicks the watchdog): what a trip procedure and its re-assertion write.
func safeDirectionWrite(w plant.Write) bool {
	switch {
	case w.Channel == "watchdog_kick":
		return true
	case w.Device == "furnace" && w.Channel == "heater_enable":
		return w.Value == 0
	case strings.HasPrefix(w.Device, "mfc-") && w.Channel == "hold":
		return w.Value == 1
	case strings.HasPrefix(w.Device, "mfc-") && w.Channel == "setpoint":
		return w.Value == 0
	case w.Device == "gpio" && w.Channel == "relay":
		return w.Value == 0
	case w.Device == "dio" && w.Channel == "coil:scrubber":
		return w.Value == 1
	case w.Device == "dio" && strings.HasPrefix(w.Channel, "coil:"):
		return w.Value == 0
	case w.Device == "raman" && w.Channel == "stop":
		return true
	}
	return false
}

// pumpDown opens the chamber to the running pump and waits for the monitor to
// read it below 1 mbar.
func (b *bench) pumpDown() {
	b.t.Helper()
	b.apply(envelope.SwitchAction("pump", true))
	b.apply(envelope.SwitchAction("gate_valve", true))
	b.waitFor("vacuum", func() bool {
		p := b.m.Readings().Pressure
		return p.Status == device.GaugeOK && p.Pressure < 0.5*device.Millibar
	})
}

// arm energises the interlock relay.
func (b *bench) arm() {
	b.t.Helper()
	if err := b.il.Arm(b.ctx, "hil-operator"); err != nil {
		b.t.Fatalf("arm: %v", err)
	}
	if !b.p.Relay() {
		b.t.Fatal("armed, but the plant's relay is off")
	}
}

// heat sets the furnace setpoint and enables the heater (under vacuum).
func (b *bench) heat(c float64) {
	b.t.Helper()
	b.apply(envelope.SetpointAction(device.Celsius(c)))
	b.apply(envelope.HeaterAction(true))
}

func (b *bench) mark() uint64 {
	seq, _ := b.p.WriteLogStats()
	return seq
}

// written reports whether the firmware received an accepted write of value
// (any value if NaN) on device/channel after seq.
func (b *bench) written(since uint64, dev, channel string, value float64) (plant.Write, bool) {
	for _, w := range b.p.Writes(since) {
		if w.Device == dev && w.Channel == channel && w.Accepted && (math.IsNaN(value) || math.Abs(w.Value-value) < 1e-9) {
			return w, true
		}
	}
	return plant.Write{}, false
}

// expectWrites waits until every (device, channel, value) of want reached the
// firmware after since.
func (b *bench) expectWrites(since uint64, want ...plant.Write) {
	b.t.Helper()
	for _, w := range want {
		b.waitFor(w.Device+" "+w.Channel, func() bool { _, ok := b.written(since, w.Device, w.Channel, w.Value); return ok })
	}
}

// expectNoWrites checks that none of the channels (device/channel pairs)
// received any write after since.
func (b *bench) expectNoWrites(since uint64, channels ...[2]string) {
	b.t.Helper()
	for _, w := range b.p.Writes(since) {
		for _, c := range channels {
			if w.Device == c[0] && w.Channel == c[1] {
				b.t.Fatalf("unexpected write %+v", w)
			}
		}
	}
}

func wr(dev, channel string, v float64) plant.Write {
	return plant.Write{Device: dev, Channel: channel, Value: v}
}

// gasLines are the writes that close every gas line: each MFC held with a
// zero setpoint, each line valve closed.
func gasLines() []plant.Write {
	var out []plant.Write
	for _, d := range []string{"mfc-ar", "mfc-h2", "mfc-h2s"} {
		out = append(out, wr(d, "setpoint", 0))
	}
	for _, v := range []string{"ar_valve", "h2_valve", "h2s_valve"} {
		out = append(out, wr("dio", "coil:"+v, 0))
	}
	return out
}

// expectTripped waits for the trip's audit entry and checks the latch.
func (b *bench) expectTripped(trip envelope.Trip, proc envelope.Procedure) envelope.Entry {
	b.t.Helper()
	var e envelope.Entry
	b.waitFor("audited trip "+string(trip), func() bool {
		for _, x := range b.audit.entries(envelope.DecisionTripped) {
			if x.Trip == trip {
				e = x
				return true
			}
		}
		return false
	})
	if e.Rule != envelope.Rule(proc) {
		b.t.Fatalf("trip %s ran %s, want %s", trip, e.Rule, proc)
	}
	if latched, why := b.il.Latched(); !latched || why == "" {
		b.t.Fatalf("not latched after %s", trip)
	}
	st := b.m.Status()
	if !st.Latched || len(st.Trips) == 0 {
		b.t.Fatalf("status after %s: %+v", trip, st)
	}
	return e
}

// resetRefused checks that Reset refuses (typed, audited) while the
// condition holds.
func (b *bench) resetRefused() {
	b.t.Helper()
	before := len(b.audit.entries(envelope.DecisionRefused))
	err := b.il.Reset(b.ctx, "hil-operator")
	var v *envelope.Violation
	if !errors.As(err, &v) || v.Rule != envelope.RuleLatched {
		b.t.Fatalf("reset while the condition holds: %v", err)
	}
	if latched, _ := b.il.Latched(); !latched {
		b.t.Fatal("a refused reset cleared the latch")
	}
	if len(b.audit.entries(envelope.DecisionRefused)) != before+1 {
		b.t.Fatal("refused reset not audited")
	}
}

// reset clears the latch once the condition is gone and checks the audit log
// chain.
func (b *bench) reset() {
	b.t.Helper()
	if err := b.il.Reset(b.ctx, "hil-operator"); err != nil {
		b.t.Fatalf("reset: %v", err)
	}
	if latched, _ := b.il.Latched(); latched {
		b.t.Fatal("still latched after reset")
	}
	resets := b.audit.entries(envelope.DecisionReset)
	if len(resets) == 0 || resets[len(resets)-1].Operator != "hil-operator" {
		b.t.Fatalf("reset not audited with the operator: %+v", resets)
	}
	n, err := b.log.Verify(b.ctx)
	if err != nil {
		b.t.Fatalf("audit chain: %v", err)
	}
	if int(n) != b.audit.count() {
		b.t.Fatalf("audit log holds %d entries, %d recorded", n, b.audit.count())
	}
}
