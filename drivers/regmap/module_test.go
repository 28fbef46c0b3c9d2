package regmap_test

import (
	"errors"
	"fmt"
	"testing"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/modbus/modbustest"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/regmap"
)

func module(t *testing.T, o opts) (*modbustest.Server, *regmap.Module) {
	t.Helper()
	srv := modbustest.NewServer(map[byte]*modbustest.Unit{2: {
		Coils:    []bool{true, true, true, true, true, true, false},
		Discrete: []bool{true, false, true},
	}})
	b, err := modbus.NewInMemory(srv, modbus.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	m, err := newModule(b, o)
	if err != nil {
		t.Fatal(err)
	}
	return srv, m
}

// opts is a module laid out by coil and input addresses: newModule makes
// the profile (a channel per address used) and the layout from it.
type opts struct {
	Name   string
	Unit   byte
	Coils  []regmap.CoilSpec
	Inputs []inputSpec
}

type inputSpec struct {
	Name    string
	Address uint16
	Invert  bool
}

// defaultOpts is configs/sim.yaml's module, by address.
func defaultOpts() opts {
	return opts{Name: "dio", Unit: 2,
		Coils: []regmap.CoilSpec{{Name: "pump", Address: 0}, {Name: "gate_valve", Address: 1}, {Name: "ar_valve", Address: 2},
			{Name: "h2_valve", Address: 3}, {Name: "h2s_valve", Address: 4}, {Name: "vent_valve", Address: 5}, {Name: "scrubber", Address: 6, Safe: true}},
		Inputs: []inputSpec{{Name: "door_closed", Address: 0}, {Name: "exhaust_ok", Address: 1}, {Name: "pump_running", Address: 2}},
	}
}

func newModule(b regmap.Bus, o opts) (*regmap.Module, error) {
	p := &profile.Profile{ID: "test-io", Family: profile.Modbus, Kind: profile.IOModule}
	mo := regmap.ModuleOpts{Name: o.Name, Unit: o.Unit}
	if mo.Unit == 0 {
		mo.Unit = 2
	}
	seen := map[string]bool{}
	ch := func(table string, addr uint16, role profile.Role) string {
		name := fmt.Sprintf("%s%d", table, addr)
		if !seen[name] {
			seen[name] = true
			a := int(addr)
			access := "read"
			if role == profile.RoleOutput {
				access = "read_write"
			}
			p.Channels = append(p.Channels, profile.Channel{Name: name, Table: table, Address: &a, Type: "bool", Access: access, Role: role})
		}
		return name
	}
	for _, c := range o.Coils {
		mo.Outputs = append(mo.Outputs, regmap.OutputSpec{Name: c.Name, Channel: ch("coil", c.Address, profile.RoleOutput), Safe: c.Safe})
	}
	for _, in := range o.Inputs {
		mo.Inputs = append(mo.Inputs, regmap.InputSpec{Name: in.Name, Channel: ch("discrete_input", in.Address, profile.RoleInput), Invert: in.Invert})
	}
	return regmap.NewModule(b, p, mo)
}

func TestSwitchSetAndState(t *testing.T) {
	srv, m := module(t, defaultOpts())
	ctx := ctxT(t)
	tests := []struct {
		name string
		addr int
		on   bool
	}{
		{"pump", 0, false}, {"gate_valve", 1, false}, {"ar_valve", 2, false},
		{"h2_valve", 3, false}, {"h2s_valve", 4, false}, {"vent_valve", 5, false}, {"scrubber", 6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := m.Switch(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Set(ctx, tt.on); err != nil {
				t.Fatal(err)
			}
			got, err := s.State(ctx)
			if err != nil || got != tt.on {
				t.Fatalf("State = %v, %v", got, err)
			}
			srv.Do(func(u map[byte]*modbustest.Unit) {
				if u[2].Coils[tt.addr] != tt.on {
					t.Fatalf("coil %d = %v", tt.addr, u[2].Coils[tt.addr])
				}
			})
		})
	}
}

func TestHaltDrivesSafeLevels(t *testing.T) {
	srv, m := module(t, defaultOpts())
	if err := m.Halt(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	srv.Do(func(u map[byte]*modbustest.Unit) {
		want := []bool{false, false, false, false, false, false, true}
		for i, w := range want {
			if u[2].Coils[i] != w {
				t.Errorf("coil %d = %v after Halt, want %v", i, u[2].Coils[i], w)
			}
		}
	})
	s, _ := m.Switch("scrubber")
	if !s.SafeState() {
		t.Fatal("scrubber safe state is off")
	}
}

func TestSwitchReadbackMismatch(t *testing.T) {
	srv, m := module(t, defaultOpts())
	srv.Do(func(u map[byte]*modbustest.Unit) {
		u[2].OnWrite = func(table string, addr, v uint16) { u[2].Coils[addr] = false } // stuck off
	})
	s, _ := m.Switch("scrubber")
	if err := s.Set(ctxT(t), true); !errors.Is(err, device.ErrReadback) {
		t.Fatalf("error %v, want ErrReadback", err)
	}
}

func TestInputs(t *testing.T) {
	o := defaultOpts()
	o.Inputs = append(o.Inputs, inputSpec{Name: "door_open", Address: 0, Invert: true})
	_, m := module(t, o)
	ctx := ctxT(t)
	tests := []struct {
		name string
		want bool
	}{{"door_closed", true}, {"exhaust_ok", false}, {"pump_running", true}, {"door_open", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := m.Input(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := in.Read(ctx)
			if err != nil || got != tt.want {
				t.Fatalf("Read = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestUnknownAddressIsRejected(t *testing.T) {
	o := defaultOpts()
	o.Coils = append(o.Coils, regmap.CoilSpec{Name: "ghost", Address: 9})
	_, m := module(t, o)
	s, _ := m.Switch("ghost")
	err := s.Set(ctxT(t), true)
	var ex *modbus.Exception
	if !errors.As(err, &ex) || ex.Code != modbus.ExceptionIllegalAddress {
		t.Fatalf("error %v, want exception 02", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	b, _ := modbus.NewInMemory(modbustest.NewServer(nil), modbus.DefaultOpts())
	tests := []struct {
		name string
		o    opts
	}{
		{"duplicate coil name", opts{Coils: []regmap.CoilSpec{{Name: "a"}, {Name: "a", Address: 1}}}},
		{"duplicate coil address", opts{Coils: []regmap.CoilSpec{{Name: "a"}, {Name: "b"}}}},
		{"unnamed input", opts{Inputs: []inputSpec{{Address: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := newModule(b, tt.o); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	_, m := module(t, defaultOpts())
	if _, err := m.Switch("nope"); err == nil {
		t.Fatal("unknown switch returned")
	}
}

// TestBanks: the coils, and the inputs, read in one transaction each give
// every member the level its own State or Read gives (inverted inputs too);
// a bank is not formed over addresses no member has.
func TestBanks(t *testing.T) {
	ctx := ctxT(t)
	o := defaultOpts()
	o.Inputs = append(o.Inputs, inputSpec{Name: "door_open", Address: 0, Invert: true})
	srv, m := module(t, o)
	type member interface {
		device.BankMember
		String() string
	}
	var members []member
	single := map[string]bool{}
	for _, c := range o.Coils {
		s, _ := m.Switch(c.Name)
		on, err := s.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		members, single[c.Name] = append(members, s), on
	}
	for _, spec := range o.Inputs {
		in, _ := m.Input(spec.Name)
		on, err := in.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		members, single[spec.Name] = append(members, in), on
	}
	coilReads, inputReads := srv.Requests(1), srv.Requests(2)
	levels := map[device.LevelBank][]bool{}
	for _, mb := range members {
		b, i := mb.Bank()
		if b == nil {
			t.Fatalf("%s: no bank", mb)
		}
		if levels[b] == nil {
			l, err := b.Levels(ctx)
			if err != nil {
				t.Fatal(err)
			}
			levels[b] = l
		}
		if got := levels[b][i]; got != single[mb.String()] {
			t.Errorf("%s: bank level %v, own read %v", mb, got, single[mb.String()])
		}
	}
	if len(levels) != 2 || srv.Requests(1)-coilReads != 1 || srv.Requests(2)-inputReads != 1 {
		t.Fatalf("%d banks, %d FC01 and %d FC02 requests: want 2 banks, one request each",
			len(levels), srv.Requests(1)-coilReads, srv.Requests(2)-inputReads)
	}

	gap := defaultOpts()
	gap.Coils = []regmap.CoilSpec{{Name: "pump", Address: 0}, {Name: "vent_valve", Address: 5}}
	_, m2 := module(t, gap)
	if s, _ := m2.Switch("pump"); s != nil {
		if b, _ := s.Bank(); b != nil {
			t.Fatal("a bank over coils 0 and 5 would read coils 1..4, which no member has")
		}
	}
}
