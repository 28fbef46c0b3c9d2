package hil

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/alicat"
	"hcp-edge/drivers/gpio"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/raman"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/regmap/regmaptest"
	"hcp-edge/drivers/simgpio"
	"hcp-edge/drivers/tpg"
	"hcp-edge/firmware-sim/control"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
)

// hangGuard bounds every wait of these tests; it is a guard against hangs, not
// a performance assertion.
const hangGuard = 20 * time.Second

// sim is one in-process rig and the drivers' way into it.
type sim struct {
	t     testing.TB
	r     *rig.Rig
	p     *plant.Plant
	ctl   *control.Client
	scale float64
}

// startRig starts a whole rig (plant, Modbus TCP on a free port, RTU line,
// serial instruments, control socket) in a temporary directory.
func startRig(t testing.TB, scale float64) *sim {
	t.Helper()
	return startRigOpts(t, rig.Opts{TimeScale: scale, StartSerial: rig.SerialInstruments})
}

// startRigOpts starts a rig with opts (its Dir and ModbusAddr replaced by a
// temporary directory and a free port).
func startRigOpts(t testing.TB, opts rig.Opts) *sim {
	t.Helper()
	opts.Dir, opts.ModbusAddr = t.TempDir(), "127.0.0.1:0"
	scale := opts.TimeScale
	r, err := rig.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	ctl := control.NewClient(r.ControlPath())
	t.Cleanup(func() {
		_ = ctl.Close()
		if err := r.Close(); err != nil {
			t.Errorf("rig close: %v", err)
		}
	})
	return &sim{t: t, r: r, p: r.Plant(), ctl: ctl, scale: scale}
}

// ctx returns a context bounded by the hang guard, cancelled at cleanup.
func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// bus opens a Modbus bus on transport ("tcp" or "rtu") to the rig.
func (s *sim) bus(transport string, timeout time.Duration, retries int) *modbus.Bus {
	s.t.Helper()
	o := modbus.DefaultOpts()
	o.Transport = transport
	o.Timeout = timeout
	o.Retries = retries
	switch transport {
	case modbus.TransportTCP:
		o.Address = s.r.ModbusAddr().String()
	case modbus.TransportRTU:
		o.Address = s.r.RTUPath()
	default:
		s.t.Fatalf("unknown transport %q", transport)
	}
	b, err := modbus.New(o)
	if err != nil {
		s.t.Fatalf("modbus %s: %v", transport, err)
	}
	s.t.Cleanup(func() { _ = b.Close() })
	return b
}

func (s *sim) furnace(b *modbus.Bus) *regmap.Controller {
	s.t.Helper()
	c, err := regmaptest.SimFurnace(b)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *sim) dio(b *modbus.Bus) *regmap.Module {
	s.t.Helper()
	m, err := regmaptest.SimModule(b)
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}

func (s *sim) sw(m *regmap.Module, name string) *regmap.Switch {
	s.t.Helper()
	w, err := m.Switch(name)
	if err != nil {
		s.t.Fatal(err)
	}
	return w
}

func (s *sim) input(m *regmap.Module, name string) *regmap.Input {
	s.t.Helper()
	in, err := m.Input(name)
	if err != nil {
		s.t.Fatal(err)
	}
	return in
}

// gasSpec is one mass-flow controller of the rig.
type gasSpec struct {
	gas, name string // plant gas and device name, e.g. "h2s", "mfc-h2s"
	display   string // gas name on the wire
	unit      byte
	fullScale float64
}

var gases = []gasSpec{
	{"ar", "mfc-ar", "Ar", 'A', 500},
	{"h2", "mfc-h2", "H2", 'B', 200},
	{"h2s", "mfc-h2s", "H2S", 'C', 50},
}

func (s *sim) mfc(g gasSpec, timeout time.Duration) *alicat.MFC {
	s.t.Helper()
	o := alicat.DefaultOpts()
	o.Profile = regmaptest.MustProfile(regmaptest.SimMFCProfile)
	o.Name, o.UnitID, o.Gas, o.FullScale, o.Timeout = g.name, g.unit, g.display, device.SCCM(g.fullScale), timeout
	m, err := alicat.Open(filepath.Join(s.r.Dir(), g.name), o)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = m.Close() })
	return m
}

func (s *sim) gauge(timeout time.Duration) *tpg.Gauge {
	s.t.Helper()
	o := tpg.DefaultOpts()
	o.Profile = regmaptest.MustProfile(regmaptest.SimGaugeProfile)
	o.Timeout = timeout
	g, err := tpg.Open(filepath.Join(s.r.Dir(), "gauge"), o)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = g.Close() })
	return g
}

func (s *sim) raman(transfer time.Duration) *raman.Spectrometer {
	s.t.Helper()
	o := raman.DefaultOpts()
	o.TimeScale = s.scale
	o.Transfer = transfer
	if transfer < o.Timeout {
		o.Timeout = transfer
	}
	sp, err := raman.Open(filepath.Join(s.r.Dir(), "raman"), o)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = sp.Close() })
	return sp
}

// gpioClient is a simgpio client on the rig's control socket.
func (s *sim) gpioClient() *simgpio.Client {
	s.t.Helper()
	o := simgpio.DefaultOpts()
	o.Socket = s.r.ControlPath()
	o.Timeout = 2 * time.Second
	o.MaxPoll = 200 * time.Millisecond
	c, err := simgpio.New(o)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// relay returns the interlock relay as a drivers/gpio Output over simgpio,
// with read-back through relay_fb.
func (s *sim) relay(c *simgpio.Client) *gpio.Output {
	s.t.Helper()
	o := gpio.DefaultOutputOpts("relay")
	o.IOTimeout = 2 * time.Second
	out, err := gpio.NewOutput(c.Pin(simgpio.Relay), c.Pin(simgpio.RelayFB), o)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// energise switches the interlock relay on through drivers/gpio over simgpio
// and checks that the simulator saw it.
func (s *sim) energise(ctx context.Context) {
	s.t.Helper()
	r := s.relay(s.gpioClient())
	if err := r.Set(ctx, true); err != nil {
		s.t.Fatalf("relay on: %v", err)
	}
	if !s.p.Relay() {
		s.t.Fatal("relay set through the driver but the plant's relay is off")
	}
}

// w is an expected write-log entry.
type w struct {
	device, via, channel string
	value                float64
	accepted             bool
}

func (e w) String() string {
	return fmt.Sprintf("%s/%s %s=%g accepted=%v", e.device, e.via, e.channel, e.value, e.accepted)
}

// mark returns the write log's last sequence number.
func (s *sim) mark() uint64 {
	seq, _ := s.p.WriteLogStats()
	return seq
}

// expectWrites checks that the write-log entries after since are exactly want
// (in order), optionally ignoring entries of channels listed in ignore.
func (s *sim) expectWrites(since uint64, want []w, ignore ...string) {
	s.t.Helper()
	var got []w
	for _, e := range s.p.Writes(since) {
		skip := false
		for _, ig := range ignore {
			if e.Channel == ig {
				skip = true
			}
		}
		if skip {
			continue
		}
		got = append(got, w{e.Device, e.Via, e.Channel, e.Value, e.Accepted})
	}
	if len(got) != len(want) {
		s.t.Fatalf("write log after seq %d:\n got  %v\n want %v", since, got, want)
	}
	for i := range got {
		g, x := got[i], want[i]
		if g.device != x.device || g.via != x.via || g.channel != x.channel || g.accepted != x.accepted ||
			math.Abs(g.value-x.value) > 1e-9 {
			s.t.Fatalf("write log entry %d:\n got  %v\n want %v\n(all: %v)", i, g, x, got)
		}
	}
}

// eventually polls f every period until it reports true or the context ends;
// it returns the last error f returned.
func eventually(ctx context.Context, period time.Duration, f func() (bool, error)) error {
	var last error
	for {
		ok, err := f()
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("condition not met: %w", last)
		case <-time.After(period):
		}
	}
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if strings.EqualFold(x, f) {
			return true
		}
	}
	return false
}

// bracket reads a driver's value of a quantity that the simulator is changing
// (a furnace ramping, a chamber pumping down) together with the simulator's own
// truth read just before and just after it. The driver's reading was taken at
// some instant inside that window, so a correct driver reads a value within tol
// of the range [lo, hi] the truth spanned: the check compares at the same
// simulated instant, however long a loaded machine takes between the calls.
type bracketed struct{ got, lo, hi float64 }

func bracket(truth func() float64, read func() (float64, error)) (bracketed, error) {
	before := truth()
	got, err := read()
	after := truth()
	return bracketed{got, math.Min(before, after), math.Max(before, after)}, err
}

// within reports whether the reading lies within tol of the truth's window.
func (b bracketed) within(tol float64) bool { return b.got >= b.lo-tol && b.got <= b.hi+tol }

func (b bracketed) String() string {
	if b.lo == b.hi {
		return fmt.Sprintf("read %.4g, truth %.4g", b.got, b.lo)
	}
	return fmt.Sprintf("read %.4g, truth %.4g … %.4g during the read", b.got, b.lo, b.hi)
}
