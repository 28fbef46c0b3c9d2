package safestate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/regmap/regmaptest"
)

// TestCheckUnreachable: a fallback e-stop on a rig none of whose
// instruments could be opened reports each one, relay first, as not
// reachable with its error, never skips one, and is not confirmed safe.
func TestCheckUnreachable(t *testing.T) {
	in := &rigconfig.Instruments{Unreachable: map[string]error{
		"gpio": errors.New("no gpio chip"), "furnace": errors.New("connection refused"),
		"dio": errors.New("connection refused"), "mfc-h2": errors.New("device or resource busy"),
	}}
	r := Report{Via: "fallback", Operator: "ada", Outputs: Check(context.Background(), in, true)}
	r.Finish()
	var names []string
	for _, o := range r.Outputs {
		names = append(names, o.Instrument)
		if o.Confirmed || !strings.HasPrefix(o.Error, "not reachable: ") {
			t.Errorf("%s: %+v", o.Instrument, o)
		}
	}
	if got := strings.Join(names, ","); got != "relay,furnace,dio,mfc-h2" {
		t.Fatalf("outputs %s, want relay,furnace,dio,mfc-h2", got)
	}
	if r.AllConfirmed {
		t.Fatal("confirmed safe with every instrument unreachable")
	}
	if !strings.Contains(r.Outputs[3].Error, "held exclusively by another process") {
		t.Fatalf("a busy port is not explained: %q", r.Outputs[3].Error)
	}
	var b strings.Builder
	Print(&b, r)
	if !strings.Contains(b.String(), "NOT ALL OUTPUTS CONFIRMED SAFE") || !strings.Contains(b.String(), "e-stop via fallback (operator ada)") {
		t.Fatalf("printed:\n%s", b.String())
	}
}

// TestFinish: confirmed only with outputs, every one of them read back
// safe.
func TestFinish(t *testing.T) {
	tests := []struct {
		name    string
		outputs []Output
		want    bool
	}{
		{"no outputs", nil, false},
		{"all safe", []Output{{Instrument: "relay", Confirmed: true}, {Instrument: "furnace", Confirmed: true}}, true},
		{"one not safe", []Output{{Instrument: "relay", Confirmed: true}, {Instrument: "furnace"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Report{Outputs: tt.outputs, AllConfirmed: !tt.want}
			r.Finish()
			if r.AllConfirmed != tt.want {
				t.Fatalf("AllConfirmed = %v, want %v", r.AllConfirmed, tt.want)
			}
		})
	}
}

// coils is a regmap.Bus of coils only that counts its reads.
type coils struct {
	mu    sync.Mutex
	on    map[uint16]bool
	reads int
}

func (c *coils) ReadCoils(_ context.Context, _ byte, addr, qty uint16) ([]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	out := make([]bool, qty)
	for i := range out {
		out[i] = c.on[addr+uint16(i)]
	}
	return out, nil
}

func (c *coils) ReadDiscreteInputs(context.Context, byte, uint16, uint16) ([]bool, error) {
	return nil, errors.New("no inputs")
}

func (c *coils) ReadHoldingRegisters(context.Context, byte, uint16, uint16) ([]uint16, error) {
	return nil, errors.New("no registers")
}

func (c *coils) ReadInputRegisters(context.Context, byte, uint16, uint16) ([]uint16, error) {
	return nil, errors.New("no registers")
}

func (c *coils) WriteSingleRegister(context.Context, byte, uint16, uint16) error {
	return errors.New("no registers")
}

func (c *coils) WriteMultipleRegisters(context.Context, byte, uint16, []uint16) error {
	return errors.New("no registers")
}

func (c *coils) WriteSingleCoil(_ context.Context, _ byte, addr uint16, on bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on[addr] = on
	return nil
}

// TestCheckReadsTheCoilBankOnce: the daemon's read-back (no halt) reads
// every coil of the module in one exchange and reports each one, a coil
// away from its safe level not confirmed; the fallback still halts and
// reads each coil on its own.
func TestCheckReadsTheCoilBankOnce(t *testing.T) {
	o := simCoils()
	bus := &coils{on: map[uint16]bool{}}
	for _, c := range o {
		bus.on[c.Address] = c.Safe
	}
	bus.on[o[0].Address] = !o[0].Safe // one coil unsafe
	m, err := regmaptest.SimModule(bus)
	if err != nil {
		t.Fatal(err)
	}
	in := &rigconfig.Instruments{DIO: m, Unreachable: map[string]error{"gpio": errors.New("none"), "furnace": errors.New("none")}}
	byName := func(outs []Output) map[string]Output {
		got := map[string]Output{}
		for _, o := range outs {
			got[o.Instrument] = o
		}
		return got
	}
	got := byName(Check(context.Background(), in, false))
	if bus.reads != 1 {
		t.Fatalf("%d coil reads, want 1 (the bank)", bus.reads)
	}
	for i, c := range o {
		r, ok := got["dio/"+c.Name]
		if !ok || r.Confirmed != (i != 0) || r.ReadBack != "coil="+OnOff(bus.on[c.Address]) {
			t.Errorf("coil %s: %+v", c.Name, r)
		}
	}
	bus.reads = 0
	got = byName(Check(context.Background(), in, true))
	if bus.reads < len(o) {
		t.Fatalf("fallback: %d coil reads, want one or more each", bus.reads)
	}
	for _, c := range o {
		if r := got["dio/"+c.Name]; !r.Confirmed {
			t.Errorf("fallback, coil %s: %+v", c.Name, r)
		}
	}
}

// simCoils are configs/sim.yaml's outputs on the simulator's I/O module,
// with their coil addresses.
func simCoils() []regmap.CoilSpec {
	p, err := regmaptest.Profile(regmaptest.SimModuleProfile)
	if err != nil {
		panic(err)
	}
	var out []regmap.CoilSpec
	for _, o := range regmaptest.SimModuleOpts().Outputs {
		ch, _ := p.Channel(o.Channel)
		out = append(out, regmap.CoilSpec{Name: o.Name, Address: ch.Register().Address, Safe: o.Safe})
	}
	return out
}

// TestCheckHaltsEveryModule: the fallback halts and reads back the coils
// of every I/O module of the list shape, not only the first's.
func TestCheckHaltsEveryModule(t *testing.T) {
	var mods []*regmap.Module
	var buses []*coils
	for range 2 {
		bus := &coils{on: map[uint16]bool{}}
		for _, c := range simCoils() {
			bus.on[c.Address] = !c.Safe // every coil unsafe
		}
		p, err := regmaptest.Profile(regmaptest.SimModuleProfile)
		if err != nil {
			t.Fatal(err)
		}
		o := regmaptest.SimModuleOpts()
		o.Name = []string{"dio", "relays"}[len(mods)]
		m, err := regmap.NewModule(bus, p, o)
		if err != nil {
			t.Fatal(err)
		}
		mods, buses = append(mods, m), append(buses, bus)
	}
	in := &rigconfig.Instruments{DIO: mods[0], Modules: mods, Unreachable: map[string]error{"gpio": errors.New("none"), "furnace": errors.New("none")}}
	got := map[string]Output{}
	for _, o := range Check(context.Background(), in, true) {
		got[o.Instrument] = o
	}
	for i, c := range simCoils() {
		for _, name := range []string{"dio/" + c.Name, "relays/" + c.Name} {
			if r, ok := got[name]; !ok || !r.Confirmed {
				t.Errorf("%s: %+v (found %v)", name, r, ok)
			}
		}
		if buses[1].on[c.Address] != c.Safe {
			t.Errorf("coil %d of the second module left at %v", i, buses[1].on[c.Address])
		}
	}
}
