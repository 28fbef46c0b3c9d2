package preview

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/rig"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/executor"
)

// ErrNoZone marks a planned run heating a zone the rig's layout lacks. Its
// errors also wrap ErrInput: a preview_request is answered request_refused
// invalid_input, `recipe simulate` exits 2, both with the zone.
var ErrNoZone = errors.New("the recipe heats a zone the rig lacks")

// ErrZoneUnsimulated marks a layout with a heated zone the simulated plant
// has no zone for: the plant of the layout's gas lines heats one furnace,
// or its line has no controller at the zone's unit. No prediction is made
// (it would be of another furnace). Its errors also wrap ErrInput.
var ErrZoneUnsimulated = errors.New("the simulated plant has no heated zone for a zone of the layout")

// checkZones refuses a planned run naming a zone the layout lacks.
func checkZones(l rig.Layout, rec executor.Recipe) error {
	z, ok := rec.(interface{ Zones() []string })
	if !ok {
		return nil
	}
next:
	for _, n := range z.Zones() {
		for _, lz := range l.Zones {
			if lz.Name == n {
				continue next
			}
		}
		return fmt.Errorf("%w: %w: zone %s", ErrInput, ErrNoZone, n)
	}
	return nil
}

// simZones sets, on a plant of several zones (plant.Zones), each heated
// zone of the configuration in er as the 3200 of the plant's zone at its
// controller's unit (zone i answers at unit i+1, as rig-sim serves the
// line), the first as the Furnace, each halted as the driver's Init leaves
// it. A plant of one furnace takes a layout of one zone (left to
// simRig's simFurnace). Two zones at one unit are refused by the layout's
// checks.
func simZones(cfg rig.Config, p *plant.Plant, c *Clock, er *envelope.Rig) error {
	es, n := cfg.ZoneEntries(), len(p.Zones())
	m := max(n, 1) // the plant's zones: its one furnace when it has no Zones
	for k := range es {
		e := &es[k]
		i := int(e.Unit) - 1
		if n == 0 {
			i = k // the plant's one furnace heats the first zone
		}
		if i < 0 || i >= m {
			return fmt.Errorf("%w: %w: zone %s: the simulated plant of the rig's gas lines heats %d zone(s), their controllers at units 1 to %[4]d",
				ErrInput, ErrZoneUnsimulated, e.Name, m)
		}
		if n == 0 {
			continue
		}
		z := &simZone{p: p, clock: c, name: e.Controller, i: i}
		if err := z.Halt(context.Background()); err != nil { // the driver's Init
			return err
		}
		if k == 0 {
			er.Furnace, er.Zones = z, map[string]device.TemperatureController{}
			continue
		}
		er.Zones[e.Name] = z
	}
	return nil
}

// zonesLocked records each heated zone's reading in rd, observed at at:
// its peak, its last value, and its heater's energy since the last
// observation (the output read then, held until now).
func (r *run) zonesLocked(rd envelope.Readings, at time.Duration) {
	for i := range r.zones {
		z, st := &r.zones[i], rd.Furnace
		if i > 0 {
			st = rd.Zones[z.Name]
		}
		c := st.ProcessValue.Celsius()
		if !(c > 0) { // no reading (never read, or the thermocouple open: NaN)
			continue
		}
		z.PeakC, z.FinalC = max(z.PeakC, c), c
		z.HeaterFullPowerS += z.out / 100 * (at - r.zoneAt).Seconds()
		z.out = min(max(float64(st.OutputPower), 0), 100)
	}
	r.zoneAt = at
}
