package executor

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/device/catalog"
	"github.com/hcp-edge/hcp-edge/drivers/alicat"
	"github.com/hcp-edge/hcp-edge/drivers/dio"
	"github.com/hcp-edge/hcp-edge/drivers/furnace"
	"github.com/hcp-edge/hcp-edge/drivers/gpio"
	"github.com/hcp-edge/hcp-edge/drivers/modbus"
	"github.com/hcp-edge/hcp-edge/drivers/raman"
	"github.com/hcp-edge/hcp-edge/drivers/simgpio"
	"github.com/hcp-edge/hcp-edge/drivers/tpg"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/firmware-sim/plant"
	"github.com/hcp-edge/hcp-edge/firmware-sim/rig"
)

// allowAll is the test Authorizer (tokens are session/token's business).
type allowAll struct{}

func (allowAll) Authorize(context.Context, string, envelope.Action) (envelope.Grant, error) {
	return envelope.Grant{SessionID: "e2e"}, nil
}

func (allowAll) Authenticate(context.Context, string) (envelope.Grant, error) {
	return envelope.Grant{SessionID: "e2e"}, nil
}

// AuthorizeTool grants every catalog permission (the shipped tokens'
// scopes are proven in cmd/hcp-edge's TestShippedCapabilities).
func (allowAll) AuthorizeTool(context.Context, string, catalog.Tool) (envelope.ToolGrant, error) {
	return envelope.ToolGrant{SessionID: "e2e", Permissions: []catalog.Permission{catalog.PermissionRead,
		catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas}}, nil
}

// memAudit keeps audit entries in memory.
type memAudit struct {
	mu  sync.Mutex
	all []envelope.Entry
}

func (a *memAudit) Record(_ context.Context, e envelope.Entry) error {
	a.mu.Lock()
	a.all = append(a.all, e)
	a.mu.Unlock()
	return nil
}

// trippedCommsLoss reports whether the monitor tripped for comms loss.
func (b *simBench) trippedCommsLoss() bool {
	b.audit.mu.Lock()
	defer b.audit.mu.Unlock()
	for _, e := range b.audit.all {
		if e.Decision == envelope.DecisionTripped && e.Trip == envelope.TripCommsLoss {
			return true
		}
	}
	return false
}

// refusals returns the refused entries.
func (a *memAudit) refusals() []envelope.Entry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []envelope.Entry
	for _, e := range a.all {
		if e.Decision == envelope.DecisionRefused {
			out = append(out, e)
		}
	}
	return out
}

// simBench is the whole simulated rig in-process: firmware-sim, every
// driver, the interlock (envelope/testdata) and its monitor, armed.
type simBench struct {
	r     *rig.Rig
	p     *plant.Plant
	il    *envelope.Interlock
	iv    *envelope.Invoker // the tool pipeline, as production builds it
	m     *envelope.Monitor
	audit *memAudit
}

// rig is the production Rig of the bench: every action a tool call
// through the Invoker, readings from the monitor.
func (b *simBench) rig() Rig { return ToolRig(b.iv, b.m) }

func loadEnvelope(t testing.TB) *envelope.Envelope {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "envelope", "testdata", "envelope.yaml"))
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

func newSimBench(t *testing.T, scale float64) *simBench {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
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
	bus := func() *modbus.Bus {
		o := modbus.DefaultOpts()
		// The drivers' own timeouts, as the agent ships them.
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
		o.Name, o.UnitID, o.Gas, o.FullScale = g.dev, g.id, g.gas, device.SCCM(g.fs) // the driver's timeout, as shipped
		mfc, err := alicat.Open(filepath.Join(r.Dir(), g.dev), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mfc.Close() })
		er.Flows[g.gas] = mfc
	}
	gopts := tpg.DefaultOpts()
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
	b := &simBench{r: r, p: r.Plant(), audit: &memAudit{}}
	b.il, err = envelope.NewInterlock(loadEnvelope(t), er, allowAll{}, b.audit, envelope.DefaultInterlockOpts())
	if err != nil {
		t.Fatal(err)
	}
	tools, err := catalog.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rates, _ := NewScaledClock(e2eScale) // the tools' rate limits run on the plant's time
	if b.iv, err = envelope.NewInvoker(b.il, tools, envelope.InvokerOpts{RateClock: rates.Now}); err != nil {
		t.Fatal(err)
	}
	b.m, err = envelope.NewMonitor(b.il, envelope.DefaultMonitorOpts())
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
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := b.m.Status()
		ok := len(st.Healthy) > 0
		for _, h := range st.Healthy {
			ok = ok && h
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("monitor never read every instrument")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.il.Arm(ctx, "e2e-operator"); err != nil {
		t.Fatalf("arm: %v", err)
	}
	// The relay feedback input is read by the monitor: wait for it.
	for !b.m.Readings().Inputs["relay_fb"].On {
		if time.Now().After(deadline) {
			t.Fatal("relay feedback never read energised")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return b
}
