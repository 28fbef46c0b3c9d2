package hilbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/device"
	"hcp-edge/device/catalog"
	"hcp-edge/drivers/alicat"
	"hcp-edge/drivers/gpio"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/raman"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/regmap/regmaptest"
	"hcp-edge/drivers/simgpio"
	"hcp-edge/drivers/tpg"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
)

// Defaults of Opts.
const (
	// DefaultWait bounds New's wait for the monitor's first full read and
	// for the armed relay's feedback: a guard against hangs.
	DefaultWait = 20 * time.Second
	// DefaultPoll is how often New looks at the monitor while it waits.
	DefaultPoll = 10 * time.Millisecond
)

// Opts says what differs between benches. TimeScale and Authorizer are
// required; every other zero value has the meaning its comment gives.
type Opts struct {
	// TimeScale is the simulator's time scale (sim seconds per wall second),
	// also the Raman driver's.
	TimeScale float64
	// Authorizer is the interlock's token check. The Invoker needs an
	// envelope.ToolAuthorizer.
	Authorizer envelope.Authorizer
	// Envelope is the interlock's envelope; nil: Envelope(t), the
	// envelope/testdata one.
	Envelope *envelope.Envelope
	// Serial starts the serial instruments; nil: rig.SerialInstruments. The
	// bench opens the MFCs, the gauge and the spectrometer at the paths
	// rig.SerialInstruments serves.
	Serial rig.SerialStarter
	// Audit returns the auditor the interlock records into, given the
	// bench's in-memory record (Bench.Audit); it puts a counter in front of
	// it or a durable log before it. nil: the record alone.
	Audit func(record envelope.Auditor) envelope.Auditor
	// Monitor is the monitor's options; nil: envelope.DefaultMonitorOpts().
	Monitor *envelope.MonitorOpts
	// Devices, when set, is given the device set the drivers make before
	// the interlock is built, and may replace an instrument in it by one
	// that wraps it (a test that observes what the interlock and the
	// monitor read). Bench.Furnace stays the driver. nil: the drivers as
	// they are.
	Devices func(*envelope.Rig)
	// Invoker, when set, builds Bench.Invoker (the tool pipeline over the
	// built-in catalog) with these options; nil: no Invoker.
	Invoker *envelope.InvokerOpts
	// Materials are the analysis's materials (session/analysis
	// MaterialNames, which the test hands down as the agent does): the
	// enums of raman.analyze's schemas in the Invoker's catalog. Without
	// them a material is any short name (catalog.Builtin).
	Materials []string
	// Arm is the operator who arms the interlock once the monitor has read
	// every instrument; New then waits for the relay feedback to read
	// energised. "": the bench is left unarmed.
	Arm string
	// Lifetime bounds Bench.Ctx (the monitor's and the GPIO inputs'
	// context); 0: it lives until the test's cleanup.
	Lifetime time.Duration
	// Wait and Poll: New's hang guard and poll period (0: DefaultWait,
	// DefaultPoll).
	Wait, Poll time.Duration
}

// Bench is the simulated rig with every driver, the interlock over them,
// its monitor and optionally the Invoker. The fields are set by New and
// must not be reassigned.
type Bench struct {
	Rig       *rig.Rig
	Plant     *plant.Plant       // Rig.Plant(): the simulator's truth, its write log and its faults
	Furnace   *regmap.Controller // the furnace driver, also held by the interlock
	Interlock *envelope.Interlock
	Invoker   *envelope.Invoker // the tool pipeline, as production builds it; nil without Opts.Invoker
	Monitor   *envelope.Monitor
	Audit     *Audit // every entry the interlock recorded
	// Ctx is the bench's context: cancelled at cleanup (or after
	// Opts.Lifetime).
	Ctx context.Context
}

// New starts the bench for t and returns it once it is ready; it fails the
// test when it cannot. Everything it starts is stopped by t.Cleanup.
func New(t testing.TB, o Opts) *Bench {
	t.Helper()
	if !(o.TimeScale > 0) || o.Authorizer == nil {
		t.Fatalf("hilbench: a time scale > 0 and an Authorizer are required (%v, %v)", o.TimeScale, o.Authorizer)
	}
	if o.Serial == nil {
		o.Serial = rig.SerialInstruments
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Envelope == nil {
		o.Envelope = Envelope(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if o.Lifetime > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, o.Lifetime)
		t.Cleanup(stop)
	}
	r, err := rig.Start(context.Background(), rig.Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: o.TimeScale,
		StartSerial: o.Serial})
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("rig close: %v", err)
		}
	})
	b := &Bench{Rig: r, Plant: r.Plant(), Audit: &Audit{}, Ctx: ctx}
	er := b.openDrivers(t, ctx, o.TimeScale)
	if o.Devices != nil {
		o.Devices(&er)
	}
	var auditor envelope.Auditor = b.Audit
	if o.Audit != nil {
		auditor = o.Audit(b.Audit)
	}
	iopts := envelope.DefaultInterlockOpts()
	iopts.TimeScale = o.TimeScale // rates of change and purges on the plant's time, as the agent's
	b.Interlock, err = envelope.NewInterlock(o.Envelope, er, o.Authorizer, auditor, iopts)
	if err != nil {
		t.Fatal(err)
	}
	if o.Invoker != nil {
		tools, err := catalog.Builtin(o.Envelope.Spec().Lines(), o.Materials...)
		if err != nil {
			t.Fatal(err)
		}
		if b.Invoker, err = envelope.NewInvoker(b.Interlock, tools, *o.Invoker); err != nil {
			t.Fatal(err)
		}
	}
	mopts := envelope.DefaultMonitorOpts()
	if o.Monitor != nil {
		mopts = *o.Monitor
	}
	b.Monitor, err = envelope.NewMonitor(b.Interlock, mopts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Monitor.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Monitor.Close(); err != nil {
			t.Errorf("monitor close: %v", err)
		}
	})
	deadline := time.Now().Add(o.Wait)
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("hilbench: timed out waiting for %s", what)
			}
			time.Sleep(o.Poll)
		}
	}
	wait("the monitor to read every instrument", func() bool {
		st := b.Monitor.Status()
		for _, ok := range st.Healthy {
			if !ok {
				return false
			}
		}
		return len(st.Healthy) > 0
	})
	if o.Arm == "" {
		return b
	}
	b.ArmAs(t, o.Arm, deadline, o.Poll)
	return b
}

// ArmAs arms the interlock as operator would at the rig, and waits for
// the relay feedback to read energised, until deadline. On a loaded machine
// an instrument may go unread for longer than the comms-loss window (after
// the start, or after a stall latched the interlock), and the interlock
// refuses to arm (the trip condition holds) or the monitor latches before
// the relay reads back: the operator waits for every instrument to read
// again, resets a latch and arms again. Any other failure fails the test.
func (b *Bench) ArmAs(t testing.TB, operator string, deadline time.Time, poll time.Duration) {
	t.Helper()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("hilbench: timed out waiting for %s", what)
			}
			time.Sleep(poll)
		}
	}
	for try := 1; ; try++ {
		if latched, _ := b.Interlock.Latched(); latched {
			if err := b.Interlock.Reset(b.Ctx, operator); err != nil && time.Now().After(deadline) {
				t.Fatalf("reset: %v", err)
			}
		}
		err := b.Interlock.Arm(b.Ctx, operator)
		if err == nil {
			// The relay feedback input is read by the monitor: wait for it,
			// or for a latch that dropped it again.
			wait("the relay feedback to read energised", func() bool {
				latched, _ := b.Interlock.Latched()
				return latched || b.Monitor.Readings().Inputs["relay_fb"].On
			})
			if latched, _ := b.Interlock.Latched(); !latched {
				return
			}
		}
		if err != nil && !errors.Is(err, envelope.ErrViolation) || time.Now().After(deadline) {
			t.Fatalf("arm (try %d): %v", try, err)
		}
		t.Logf("hilbench: arm try %d: %v; the operator resets and arms again", try, err)
		time.Sleep(100 * time.Millisecond)
		wait("the monitor to read every instrument again", func() bool {
			for _, ok := range b.Monitor.Status().Healthy {
				if !ok {
					return false
				}
			}
			return true
		})
	}
}

// openDrivers opens every driver on the rig, each closed at cleanup, and
// returns the device set; the GPIO inputs run until ctx ends or cleanup.
func (b *Bench) openDrivers(t testing.TB, ctx context.Context, scale float64) envelope.Rig {
	t.Helper()
	r := b.Rig
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
	fc, err := regmaptest.SimFurnace(bus())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.Close() })
	b.Furnace = fc
	mod, err := regmaptest.SimModule(bus())
	if err != nil {
		t.Fatal(err)
	}
	er := envelope.Rig{Furnace: fc, Flows: map[string]device.FlowController{}, Switches: map[string]device.Switch{},
		Inputs: map[string]device.DigitalInput{}}
	for _, name := range regmaptest.SimOutputs() {
		sw, err := mod.Switch(name)
		if err != nil {
			t.Fatal(err)
		}
		er.Switches[name] = sw
	}
	for _, name := range regmaptest.SimInputs() {
		in, err := mod.Input(name)
		if err != nil {
			t.Fatal(err)
		}
		er.Inputs[name] = in
	}
	for _, g := range regmaptest.SimMFCs() {
		o := alicat.DefaultOpts() // the driver's timeout, as shipped
		o.Profile = regmaptest.MustProfile(regmaptest.SimMFCProfile)
		o.Name, o.UnitID, o.Gas, o.FullScale = g.Name, g.UnitID, g.Gas, device.SCCM(g.FullScale)
		mfc, err := alicat.Open(filepath.Join(r.Dir(), g.Name), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mfc.Close() })
		er.Flows[g.Gas] = mfc
	}
	gopts := tpg.DefaultOpts()
	gopts.Profile = regmaptest.MustProfile(regmaptest.SimGaugeProfile)
	gauge, err := tpg.Open(filepath.Join(r.Dir(), "gauge"), gopts)
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
	relay, err := gpio.NewOutput(gc.Pin(simgpio.Relay), gc.Pin(simgpio.RelayFB), gpio.DefaultOutputOpts("relay"))
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
	return er
}

// Envelope returns envelope/testdata/envelope.yaml compiled against
// simrig.Spec(), found from the test's working directory (a package
// directory of this module) upward.
func Envelope(t testing.TB) *envelope.Envelope {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "envelope", "testdata", "envelope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := envelope.LoadYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(cfg, simrig.Spec())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// moduleRoot is the nearest directory at or above the working directory
// that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("hilbench: no go.mod above the working directory")
		}
		dir = up
	}
}

// Audit is an envelope.Auditor that keeps every entry in memory, in the
// order recorded; safe for concurrent use.
type Audit struct {
	mu  sync.Mutex
	all []envelope.Entry
}

// Record keeps e.
func (a *Audit) Record(_ context.Context, e envelope.Entry) error {
	a.mu.Lock()
	a.all = append(a.all, e)
	a.mu.Unlock()
	return nil
}

// All returns a copy of every entry kept.
func (a *Audit) All() []envelope.Entry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]envelope.Entry(nil), a.all...)
}

// Len is the number of entries kept.
func (a *Audit) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.all)
}

// Entries returns the entries with decision d.
func (a *Audit) Entries(d envelope.Decision) []envelope.Entry {
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

// Count is the number of entries with decision d.
func (a *Audit) Count(d envelope.Decision) int { return len(a.Entries(d)) }

// Tripped reports whether the monitor recorded a trip for trip.
func (a *Audit) Tripped(trip envelope.Trip) bool {
	for _, e := range a.Entries(envelope.DecisionTripped) {
		if e.Trip == trip {
			return true
		}
	}
	return false
}

// AllowAll is an envelope.Authorizer that authorises every action as
// session Session. It is not an envelope.ToolAuthorizer: it grants no tool
// permission, so an Invoker over it needs a test to say which permissions
// its token carries.
type AllowAll struct {
	Session string
}

// Authorize grants a.
func (x AllowAll) Authorize(context.Context, string, envelope.Action) (envelope.Grant, error) {
	return envelope.Grant{SessionID: x.Session}, nil
}

// Authenticate accepts any token.
func (x AllowAll) Authenticate(context.Context, string) (envelope.Grant, error) {
	return envelope.Grant{SessionID: x.Session}, nil
}

// SeedExposure is the reactive-gas exposure (sccm·s) the seed task's
// shipped recipe (the capability executor.CVDName, configs/recipes/) plans
// by default: 3 sccm for 15 min, about 0.9 layer at 725 °C; 1.27 layers
// still reads as one.
const SeedExposure = 3 * 900.0

// ExposureRatio is the reactive gas the plant received over plannedSCCMs,
// what the recipe plans (SeedExposure for the seed task's defaults).
func ExposureRatio(snap plant.Snapshot, plannedSCCMs float64) float64 {
	return snap.ReactiveExposureSCCMs() / plannedSCCMs
}

// Overgrown reports a CVD run that a loaded machine made unfaithful: more
// than 1.3× the planned reactive gas and more than 1.3 layers grown. At a
// simulator time scale of hundreds, a stall of a second between the growth
// hold's end and the reactive line's valve closing is minutes of plant
// time. A run within 1.3× of its plan that does not make a monolayer is
// not overgrown: its failure is the recipe's, not the machine's. The one
// rule of the engine's, the executor's and package main's simulated seed
// task tests.
func Overgrown(snap plant.Snapshot, plannedSCCMs float64) bool {
	return ExposureRatio(snap, plannedSCCMs) > 1.3 && snap.Layers > 1.3
}
