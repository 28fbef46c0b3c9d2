package dio_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/dio"
	"github.com/hcp-edge/hcp-edge/drivers/modbus"
	"github.com/hcp-edge/hcp-edge/drivers/modbus/modbustest"
)

func module(t *testing.T, o dio.Opts) (*modbustest.Server, *dio.Module) {
	t.Helper()
	srv := modbustest.NewServer(map[byte]*modbustest.Unit{2: {
		Coils:    []bool{true, true, true, true, true, true, false},
		Discrete: []bool{true, false, true},
	}})
	b, err := modbus.NewInMemory(srv, modbus.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	m, err := dio.New(b, o)
	if err != nil {
		t.Fatal(err)
	}
	return srv, m
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSwitchSetAndState(t *testing.T) {
	srv, m := module(t, dio.DefaultOpts())
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
	srv, m := module(t, dio.DefaultOpts())
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

func TestReadbackMismatch(t *testing.T) {
	srv, m := module(t, dio.DefaultOpts())
	srv.Do(func(u map[byte]*modbustest.Unit) {
		u[2].OnWrite = func(table string, addr, v uint16) { u[2].Coils[addr] = false } // stuck off
	})
	s, _ := m.Switch("scrubber")
	if err := s.Set(ctxT(t), true); !errors.Is(err, device.ErrReadback) {
		t.Fatalf("error %v, want ErrReadback", err)
	}
}

func TestInputs(t *testing.T) {
	o := dio.DefaultOpts()
	o.Inputs = append(o.Inputs, dio.InputSpec{Name: "door_open", Address: 0, Invert: true})
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
	o := dio.DefaultOpts()
	o.Coils = append(o.Coils, dio.CoilSpec{Name: "ghost", Address: 9})
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
		o    dio.Opts
	}{
		{"duplicate coil name", dio.Opts{Coils: []dio.CoilSpec{{Name: "a"}, {Name: "a", Address: 1}}}},
		{"duplicate coil address", dio.Opts{Coils: []dio.CoilSpec{{Name: "a"}, {Name: "b"}}}},
		{"unnamed input", dio.Opts{Inputs: []dio.InputSpec{{Address: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := dio.New(b, tt.o); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	_, m := module(t, dio.DefaultOpts())
	if _, err := m.Switch("nope"); err == nil {
		t.Fatal("unknown switch returned")
	}
}

// TestBanks: the coils, and the inputs, read in one transaction each give
// every member the level its own State or Read gives (inverted inputs too);
// a bank is not formed over addresses no member has.
func TestBanks(t *testing.T) {
	ctx := ctxT(t)
	o := dio.DefaultOpts()
	o.Inputs = append(o.Inputs, dio.InputSpec{Name: "door_open", Address: 0, Invert: true})
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

	gap := dio.DefaultOpts()
	gap.Coils = []dio.CoilSpec{{Name: "pump", Address: 0}, {Name: "vent_valve", Address: 5}}
	_, m2 := module(t, gap)
	if s, _ := m2.Switch("pump"); s != nil {
		if b, _ := s.Bank(); b != nil {
			t.Fatal("a bank over coils 0 and 5 would read coils 1..4, which no member has")
		}
	}
}
