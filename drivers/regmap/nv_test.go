package regmap_test

import (
	"testing"

	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/modbus/modbustest"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/regmap/regmaptest"
)

// TestNonVolatileWrittenOnlyOnChange: OP.HI, A-M and the remote select live
// in the 3200's non-volatile memory (non_volatile in the profile): a start
// on a unit already halted and in the profile's mode writes nothing, and a
// heater switched to where it is writes nothing; a change is written once.
func TestNonVolatileWrittenOnlyOnChange(t *testing.T) {
	hold := make([]uint16, 0x8050)
	hold[276] = 1 // remote selected; A-M (273) 0 = auto; OP.HI (0x803C) 0.0
	srv, c := eurothermInMemory(t, hold)
	ctx := ctxT(t)
	writes := func() int { return srv.Requests(6) + srv.Requests(16) }
	if _, err := c.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if n := writes(); n != 0 {
		t.Fatalf("a start on a unit halted, in auto, remote selected wrote %d times", n)
	}
	if err := c.SetHeater(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetHeater(ctx, true); err != nil {
		t.Fatal(err)
	}
	if n := writes(); n != 1 {
		t.Fatalf("heater on twice: %d writes, want 1", n)
	}
	if err := c.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	if n := writes(); n != 2 {
		t.Fatalf("on, then halt twice: %d writes, want 2", n)
	}
	srv.Do(func(u map[byte]*modbustest.Unit) { u[1].Holding[273] = 1 }) // someone left it in manual
	if _, err := c.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if n := writes(); n != 3 {
		t.Fatalf("a start on a unit in manual: %d writes in all, want 3 (A-M set to auto)", n)
	}
}

// eurothermInMemory is the shipped eurotherm-3200 profile's controller on
// an in-memory Modbus server whose unit 1 holds hold.
func eurothermInMemory(t *testing.T, hold []uint16) (*modbustest.Server, *regmap.Controller) {
	t.Helper()
	srv := modbustest.NewServer(map[byte]*modbustest.Unit{1: {Holding: hold}})
	b, err := modbus.NewInMemory(srv, modbus.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	p, err := regmaptest.Profile("eurotherm-3200")
	if err != nil {
		t.Fatal(err)
	}
	c, err := regmap.NewController(b, p, regmap.ControllerOpts{Unit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}
