package regmap_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/modbus/modbustest"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/regmap/regmaptest"
)

// controller returns an in-memory controller (unit 1) that validates writes
// like the documented one, and the Controller on it.
func controller(t *testing.T) (*modbustest.Server, *regmap.Controller) {
	t.Helper()
	nan := math.Float32bits(float32(21.5))
	srv := modbustest.NewServer(map[byte]*modbustest.Unit{1: {
		Holding: []uint16{250, 0, 0, 5000, 0, 12500},
		Input:   []uint16{215, 250, 123, 0, uint16(nan >> 16), uint16(nan), 0x0002, 0x0001, 0b101},
		Validate: func(table string, addr, v uint16) bool {
			switch addr {
			case 0:
				return int16(v) >= 0 && v <= 12000
			case 1:
				return v <= 1000
			case 2:
				return v <= 1
			case 3:
				return v == 0 || (v >= 100 && v <= 60000)
			}
			return true
		},
	}})
	b, err := modbus.NewInMemory(srv, modbus.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	c, err := regmaptest.SimFurnace(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return srv, c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestSnapshotDecodesTheMapInTwoTransactions(t *testing.T) {
	srv, c := controller(t)
	s, err := c.Snapshot(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if srv.Requests(4) != 1 || srv.Requests(3) != 1 {
		t.Fatalf("%d FC04 and %d FC03 requests, want 1 each", srv.Requests(4), srv.Requests(3))
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"PV", s.ProcessValue.Celsius(), 21.5},
		{"PV float", s.PVFloat, 21.5},
		{"working setpoint", s.WorkingSetpoint.Celsius(), 25},
		{"power", float64(s.OutputPower), 12.3},
		{"setpoint", s.Setpoint.Celsius(), 25},
		{"uptime CDAB", s.Uptime.Seconds(), 0x00010002},
		{"watchdog", s.WatchdogTimeout.Seconds(), 5},
		{"alarm limit", s.AlarmLimit.Celsius(), 1250},
	}
	for _, ck := range checks {
		if !near(ck.got, ck.want) {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	if !s.HeaterActive || s.Ramping || !s.RelayPermits || s.HeaterEnabled || s.Alarms != 0 {
		t.Errorf("flags: %+v", s)
	}
}

func TestSensorBreak(t *testing.T) {
	tests := []struct {
		name string
		mod  func(in []uint16)
	}{
		{"alarm bit 1", func(in []uint16) { in[3] = 2 }},
		{"PV 0x7FFF", func(in []uint16) { in[0] = 0x7FFF }},
		{"float PV NaN", func(in []uint16) { in[4], in[5] = 0x7FC0, 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := controller(t)
			srv.Do(func(u map[byte]*modbustest.Unit) { tt.mod(u[1].Input) })
			st, err := c.Status(ctxT(t))
			if !errors.Is(err, device.ErrSensor) {
				t.Fatalf("error %v, want ErrSensor", err)
			}
			if st.Alarms&device.AlarmSensorBreak == 0 || st.At.IsZero() {
				t.Fatalf("status %+v lacks the sensor-break alarm", st)
			}
		})
	}
}

func TestAlarmBits(t *testing.T) {
	srv, c := controller(t)
	srv.Do(func(u map[byte]*modbustest.Unit) { u[1].Input[3] = 0b101 })
	st, err := c.Status(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Alarms != device.AlarmHighTemperature|device.AlarmWatchdog {
		t.Fatalf("alarms %b", st.Alarms)
	}
}

func TestWritesWithReadBack(t *testing.T) {
	srv, c := controller(t)
	ctx := ctxT(t)
	if err := c.SetSetpoint(ctx, device.Celsius(725.3)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRampRate(ctx, device.KelvinPerMinute(15)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetHeater(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigureWatchdog(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.SetAlarmLimit(ctx, device.Celsius(900)); err != nil {
		t.Fatal(err)
	}
	if err := c.KickWatchdog(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Do(func(u map[byte]*modbustest.Unit) {
		want := []uint16{7253, 150, 1, 2000, 1, 9000}
		for i, w := range want {
			if u[1].Holding[i] != w {
				t.Errorf("HR %d = %d, want %d", i, u[1].Holding[i], w)
			}
		}
	})
	if err := c.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Do(func(u map[byte]*modbustest.Unit) {
		if u[1].Holding[2] != 0 || u[1].Holding[0] != 7253 {
			t.Errorf("after Halt: %v", u[1].Holding)
		}
	})
}

func TestOutOfRangeRefusedBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		op   func(context.Context, *regmap.Controller) error
	}{
		{"setpoint above 1200", func(ctx context.Context, c *regmap.Controller) error {
			return c.SetSetpoint(ctx, device.Celsius(1200.1))
		}},
		{"setpoint below 0", func(ctx context.Context, c *regmap.Controller) error { return c.SetSetpoint(ctx, device.Celsius(-1)) }},
		{"setpoint NaN", func(ctx context.Context, c *regmap.Controller) error {
			return c.SetSetpoint(ctx, device.Temperature(math.NaN()))
		}},
		{"ramp above 100", func(ctx context.Context, c *regmap.Controller) error {
			return c.SetRampRate(ctx, device.KelvinPerMinute(101))
		}},
		{"ramp negative", func(ctx context.Context, c *regmap.Controller) error {
			return c.SetRampRate(ctx, device.KelvinPerMinute(-1))
		}},
		{"watchdog 50 ms", func(ctx context.Context, c *regmap.Controller) error {
			return c.ConfigureWatchdog(ctx, 50*time.Millisecond)
		}},
		{"watchdog 61 s", func(ctx context.Context, c *regmap.Controller) error {
			return c.ConfigureWatchdog(ctx, 61*time.Second)
		}},
		{"alarm limit 1301", func(ctx context.Context, c *regmap.Controller) error {
			return c.SetAlarmLimit(ctx, device.Celsius(1301))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := controller(t)
			if err := tt.op(ctxT(t), c); !errors.Is(err, device.ErrOutOfRange) {
				t.Fatalf("error %v, want ErrOutOfRange", err)
			}
			if n := srv.Requests(6) + srv.Requests(16); n != 0 {
				t.Fatalf("%d writes sent", n)
			}
		})
	}
}

func TestReadbackMismatch(t *testing.T) {
	srv, c := controller(t)
	srv.Do(func(u map[byte]*modbustest.Unit) {
		u[1].OnWrite = func(table string, addr, v uint16) {
			if addr == 2 {
				u[1].Holding[2] = 0 // e.g. the watchdog expired right away
			}
		}
	})
	if err := c.SetHeater(ctxT(t), true); !errors.Is(err, device.ErrReadback) {
		t.Fatalf("error %v, want ErrReadback", err)
	}
}

func TestDeviceExceptionIsRejected(t *testing.T) {
	p, err := regmaptest.Profile(regmaptest.SimFurnaceProfile)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Channels {
		if p.Channels[i].Name == "setpoint" {
			p.Channels[i].Range = []float64{0, 1500} // looser than the controller
		}
	}
	srv, _ := controller(t)
	b, _ := modbus.NewInMemory(srv, modbus.DefaultOpts())
	c, err := regmap.NewController(b, p, regmap.ControllerOpts{Unit: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = c.SetSetpoint(ctxT(t), device.Celsius(1300))
	var ex *modbus.Exception
	if !errors.As(err, &ex) || ex.Code != modbus.ExceptionIllegalValue || !errors.Is(err, device.ErrRejected) {
		t.Fatalf("error %v, want exception 03", err)
	}
}

func TestWatchdogKicker(t *testing.T) {
	srv, c := controller(t)
	if err := c.StartWatchdog(context.Background(), 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.StartWatchdog(context.Background(), 5*time.Millisecond); err == nil {
		t.Fatal("second kicker started")
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Requests(6) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	n := srv.Requests(6)
	if n < 3 {
		t.Fatalf("%d kicks", n)
	}
	time.Sleep(20 * time.Millisecond)
	if srv.Requests(6) != n {
		t.Fatal("kicker still running after Close")
	}
}

func TestNewRejectsAProfileOfAnotherKind(t *testing.T) {
	p, err := regmaptest.Profile(regmaptest.SimModuleProfile)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := modbus.NewInMemory(modbustest.NewServer(nil), modbus.DefaultOpts())
	if _, err := regmap.NewController(b, p, regmap.ControllerOpts{Unit: 1}); err == nil {
		t.Fatal("an I/O module profile accepted as a temperature controller")
	}
}

// TestStatusReadsOnlyWhatTheMonitorNeeds: Status reads the channels of
// device.FurnaceStatus in as few transactions as the map allows (the
// simulator's map: 2, as the hand-written driver did; the Eurotherm 3200's,
// whose map has gaps the instrument refuses: 5, the controller's own alarm
// limit left to Snapshot).
func TestStatusReadsOnlyWhatTheMonitorNeeds(t *testing.T) {
	for id, want := range map[string][2]int{regmaptest.SimFurnaceProfile: {2, 2}, "eurotherm-3200": {6, 5}} {
		p, err := regmaptest.Profile(id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := modbus.NewInMemory(modbustest.NewServer(nil), modbus.DefaultOpts())
		c, err := regmap.NewController(b, p, regmap.ControllerOpts{Unit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if snap, status := c.Reads(); snap != want[0] || status != want[1] {
			t.Errorf("%s: %d reads a snapshot, %d a status; want %v", id, snap, status, want)
		}
	}
}

// TestAChannelOutsideItsRangeIsAFault: a channel that reads outside the
// profile's declared range is a fault of the channel (device.ErrSensor),
// never a value.
func TestAChannelOutsideItsRangeIsAFault(t *testing.T) {
	srv, c := controller(t)
	srv.Do(func(u map[byte]*modbustest.Unit) { u[1].Input[2] = 1500 }) // output power 150.0 %
	_, err := c.Status(ctxT(t))
	if !errors.Is(err, device.ErrSensor) || !strings.Contains(err.Error(), "output_power") {
		t.Fatalf("output power 150 %%: %v, want a sensor fault of output_power", err)
	}
}
