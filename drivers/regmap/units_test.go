package regmap_test

import (
	"errors"
	"math"
	"os"
	"testing"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/modbus/modbustest"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/regmap"
)

func fahrenheitController(t *testing.T) (*modbustest.Server, *regmap.Controller, *profile.Profile) {
	t.Helper()
	data, err := os.ReadFile("testdata/fahrenheit-tc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse("testdata/fahrenheit-tc.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	srv := modbustest.NewServer(map[byte]*modbustest.Unit{1: {
		Input:   []uint16{14720},               // 1472.0 °F = 800 °C
		Holding: []uint16{3920, 180, 1, 23720}, // 392.0 °F, 18.0 °F/min, on, 2372.0 °F
	}})
	b, err := modbus.NewInMemory(srv, modbus.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	c, err := regmap.NewController(b, p, regmap.ControllerOpts{Unit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, p
}

// TestFahrenheitControllerConverts: a controller working in °F reads in °C,
// is written in °F, and its device ranges are compared with the rig's
// limits in °C.
func TestFahrenheitControllerConverts(t *testing.T) {
	srv, c, p := fahrenheitController(t)
	ctx := ctxT(t)
	s, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.ProcessValue.Celsius(), 800) || !near(s.Setpoint.Celsius(), 200) || !near(s.RampRate.KelvinPerMinute(), 10) ||
		!near(s.AlarmLimit.Celsius(), 1300) {
		t.Fatalf("PV %v, SP %v, ramp %v, alarm %v; want 800 °C, 200 °C, 10 K/min, 1300 °C", s.ProcessValue, s.Setpoint, s.RampRate, s.AlarmLimit)
	}
	if err := c.SetSetpoint(ctx, device.Celsius(600)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRampRate(ctx, device.KelvinPerMinute(5)); err != nil {
		t.Fatal(err)
	}
	var hold []uint16
	srv.Do(func(u map[byte]*modbustest.Unit) { hold = append(hold, u[1].Holding...) })
	if hold[0] != 11120 || hold[1] != 90 {
		t.Fatalf("600 °C and 5 K/min written as %d, %d; want 11120 (1112.0 °F) and 90 (9.0 °F/min)", hold[0], hold[1])
	}
	// 1250 °C is 2282 °F, above the device's 2192 °F: refused, nothing sent.
	writes := srv.Requests(6) + srv.Requests(16)
	if err := c.SetSetpoint(ctx, device.Celsius(1250)); !errors.Is(err, device.ErrOutOfRange) {
		t.Fatalf("1250 °C on a device limited to 2192 °F: %v", err)
	}
	if srv.Requests(6)+srv.Requests(16) != writes {
		t.Fatal("a refused write was sent")
	}
	// The ranges the rig's limits are compared with, in °C.
	pv, _ := p.ByRole(profile.RoleProcessValue)
	r := pv.CanonicalRange()
	if math.Abs(r[0]+200) > 1e-9 || math.Abs(r[1]-1300) > 1e-9 {
		t.Fatalf("PV range in °C %v, want [-200, 1300]", r)
	}
	sp, _ := p.ByRole(profile.RoleSetpoint)
	if r := sp.CanonicalRange(); math.Abs(r[0]) > 1e-9 || math.Abs(r[1]-1200) > 1e-9 {
		t.Fatalf("setpoint range in °C %v, want [0, 1200]", r)
	}
	// A PV past the device's range in °F is a sensor fault, judged in °F.
	srv.Do(func(u map[byte]*modbustest.Unit) { u[1].Input[0] = 23730 })
	if _, err := c.Status(ctx); !errors.Is(err, device.ErrSensor) {
		t.Fatalf("PV 2373 °F (range to 2372 °F): %v", err)
	}
}
