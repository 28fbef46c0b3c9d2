package plant

import (
	"errors"
	"testing"
	"time"
)

// These tests hold the ADAM-6052 model to configs/manuals/adam-6052.md and the
// wiring of configs/rig-protocols.md (Real controller models).

func newADAM(t *testing.T) (*Plant, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{RelayEnergised: true, Now: clk.Now, DIOModel: DIOADAM6052})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, clk
}

func TestADAMWiring(t *testing.T) {
	p, _ := newADAM(t)
	// DO 0..6 are the sim module's coils 0..6, in order
	for n := 0; n < NumCoils; n++ {
		if err := p.ADAMWriteCoils("tcp", ADAMDOBase+n, []bool{true}); err != nil {
			t.Fatal(err)
		}
		if !p.Coil(n) {
			t.Fatalf("DO %d did not switch coil %d (%s)", n, n, CoilName(n))
		}
	}
	if err := p.ADAMWriteCoils("tcp", ADAMDOBase+7, []bool{true}); err != nil {
		t.Fatal(err)
	}
	p.Step(3 * time.Second) // the scrubber has run 2 s: exhaust OK
	di := make([]bool, ADAMNumDI)
	if err := p.ADAMReadBits(true, ADAMDIBase, di); err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, true, false, false, false, false, false} // door closed, exhaust ok, pump running
	for n := range want {
		if di[n] != want[n] {
			t.Fatalf("DI %v, want %v", di, want)
		}
	}
	if err := p.Inject(FaultDoorOpen, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.ADAMReadBits(false, ADAMDIBase, di[:1]); err != nil || di[0] {
		t.Fatalf("DI 0 (door closed) by FC 01 = %v, %v with the door open", di[0], err)
	}
	w := make([]uint16, 1)
	if err := p.ADAMReadRegisters(ADAMRegDO, w); err != nil || w[0] != 0xFF {
		t.Fatalf("DO word %#x, %v; want 0xff", w[0], err)
	}
	if err := p.ADAMReadRegisters(ADAMRegDI, w); err != nil || w[0] != 0x06 {
		t.Fatalf("DI word %#x, %v; want 0x06 (exhaust ok, pump running; door open)", w[0], err)
	}
	// the DO word writes all outputs: scrubber only
	if err := p.ADAMWriteRegisters("rtu", ADAMRegDO, []uint16{1 << 6}); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < NumCoils; n++ {
		if p.Coil(n) != (n == CoilScrubber) {
			t.Fatalf("coil %s = %t after DO word 0x40", CoilName(n), p.Coil(n))
		}
	}
	name := make([]uint16, 2)
	if err := p.ADAMReadRegisters(ADAMRegName, name); err != nil || name[0] != 0x6052 {
		t.Fatalf("module name %#x, %v", name, err)
	}
	s := p.Snapshot()
	if !s.Coils["scrubber"] || s.Coils["pump"] || s.Coils["do7"] {
		t.Fatalf("snapshot coils %v", s.Coils)
	}
}

func TestADAMWriteLog(t *testing.T) {
	p, _ := newADAM(t)
	if err := p.ADAMWriteCoils("tcp", ADAMDOBase+4, []bool{true, false, true, true}); err != nil {
		t.Fatal(err)
	}
	if err := p.ADAMWriteCoils("tcp", ADAMDIBase, []bool{true}); !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("write to DI 0: %v", err)
	}
	var got []string
	for _, w := range p.Writes(0) {
		got = append(got, w.Channel)
		if w.Channel == "addr:0" && w.Accepted {
			t.Fatal("the write to an input was logged as accepted")
		}
	}
	want := []string{"coil:h2s_valve", "coil:vent_valve", "coil:scrubber", "coil:do7", "addr:0"}
	if len(got) != len(want) {
		t.Fatalf("write log channels %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("write log channels %v, want %v", got, want)
		}
	}
}

func TestADAMRefusals(t *testing.T) {
	p, _ := newADAM(t)
	bits := []struct {
		name   string
		inputs bool
		addr   int
		n      int
	}{
		{"FC01 across DI and the gap", false, 4, 8},
		{"FC01 in the gap", false, 8, 1},
		{"FC01 past DO 7", false, 20, 5},
		{"FC02 on the outputs", true, ADAMDOBase, 1},
		{"FC02 past DI 7", true, 7, 2},
	}
	for _, tt := range bits {
		if err := p.ADAMReadBits(tt.inputs, tt.addr, make([]bool, tt.n)); !errors.Is(err, ErrIllegalAddress) {
			t.Errorf("%s: %v, want ErrIllegalAddress", tt.name, err)
		}
	}
	if err := p.ADAMWriteCoils("tcp", 23, []bool{true, true}); !errors.Is(err, ErrIllegalAddress) {
		t.Errorf("write past DO 7: %v", err)
	}
	if p.Snapshot().Coils["do7"] {
		t.Error("a refused FC15 changed DO 7")
	}
	if err := p.ADAMReadRegisters(0, make([]uint16, 1)); !errors.Is(err, ErrIllegalAddress) {
		t.Errorf("read register 0: %v", err)
	}
	if err := p.ADAMReadRegisters(ADAMRegDI, make([]uint16, 3)); !errors.Is(err, ErrIllegalAddress) {
		t.Errorf("read 300..302 (301 unmapped): %v", err)
	}
	if err := p.ADAMWriteRegisters("tcp", ADAMRegDI, []uint16{1}); !errors.Is(err, ErrIllegalAddress) {
		t.Errorf("write the DI word: %v", err)
	}
	if err := p.ADAMWriteRegisters("tcp", ADAMRegDO, []uint16{0x100}); !errors.Is(err, ErrIllegalValue) {
		t.Errorf("DO word with bit 8: %v", err)
	}
	for n := 0; n < NumCoils; n++ {
		if p.Coil(n) {
			t.Fatalf("a refused write switched %s", CoilName(n))
		}
	}
}

func TestADAMGasValvesNeedTheRelay(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{Now: clk.Now, DIOModel: DIOADAM6052}) // relay de-energised
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.ADAMWriteCoils("tcp", ADAMDOBase+CoilArValve, []bool{true}); err != nil {
		t.Fatal(err)
	}
	if s := p.Snapshot(); s.MFCs["ar"].ValveOpen {
		t.Fatal("the Ar line valve opened with the relay de-energised")
	}
}
