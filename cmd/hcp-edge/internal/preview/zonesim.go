package preview

import (
	"context"
	"fmt"
	"math"

	"hcp-edge/device"
	"hcp-edge/firmware-sim/plant"
)

// simZone is the temperature controller of zone i of a plant of several
// (plant.Zones): a Eurotherm 3200, read and set in engineering units
// (plant.Plant.Zone) as the eurotherm-3200 profile's driver leaves
// it: automatic on the comms setpoint, the heater as the output high limit
// (100 or 0 %). It has no comms watchdog. Its full-scale alarm (alarm 1,
// 1250 °C) is not read: the envelope trips every zone far below it.
type simZone struct {
	_     [0]func() // not comparable: no equality function in the binary
	p     *plant.Plant
	clock *Clock
	name  string // the controller's name in the configuration
	i     int
}

func (z *simZone) String() string { return z.name }

func (z *simZone) Halt(ctx context.Context) error { return z.SetHeater(ctx, false) }

func (z *simZone) KickWatchdog(context.Context) error { return nil }

// set writes c's settings.
func (z *simZone) set(c *plant.ZoneControl) error {
	if _, err := z.p.Zone(z.i, c); err != nil {
		return errSim(z.name, err)
	}
	return nil
}

func (z *simZone) Status(context.Context) (device.FurnaceStatus, error) {
	c, _ := z.p.Zone(z.i, nil)
	s := device.FurnaceStatus{ProcessValue: device.Celsius(c.PVC), WorkingSetpoint: device.Celsius(c.WorkingSetpointC),
		OutputPower: device.Percent(c.OutputPct), Setpoint: device.Celsius(c.SetpointC), RampRate: device.KelvinPerMinute(c.RateCPerMin),
		HeaterEnabled: c.OutputHighPct != 0, At: z.clock.Now()}
	if math.IsNaN(c.PVC) {
		s.Alarms |= device.AlarmSensorBreak
		return s, fmt.Errorf("%s: thermocouple open (PV invalid): %w", z.name, device.ErrSensor)
	}
	return s, nil
}

// SetSetpoint, SetRampRate: a value outside the 3200's ranges (0..1200 °C,
// 0..3000 °C/min, not a number) is the plant's ErrIllegalValue, reported
// as device.ErrOutOfRange (errSim).
func (z *simZone) SetSetpoint(_ context.Context, t device.Temperature) error {
	c, _ := z.p.Zone(z.i, nil)
	c.SetpointC = t.Celsius()
	return z.set(&c)
}

func (z *simZone) SetRampRate(_ context.Context, r device.TemperatureRate) error {
	c, _ := z.p.Zone(z.i, nil)
	c.RateCPerMin = r.KelvinPerMinute()
	return z.set(&c)
}

// SetHeater is also the driver's Init at the daemon's start (heater off,
// then automatic on the comms setpoint: plant.Plant.Zone's mode).
func (z *simZone) SetHeater(_ context.Context, on bool) error {
	c, _ := z.p.Zone(z.i, nil)
	c.OutputHighPct = 0
	if on {
		c.OutputHighPct = 100
	}
	return z.set(&c)
}

var _ device.TemperatureController = (*simZone)(nil)
