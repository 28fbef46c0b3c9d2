package executor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/recipe"
)

// The heated zone a ramp, a hold or a cool drives: the one its plan names
// (recipe.Phase.Zone, the recipe's zone:), or the rig's only zone when it
// names none. The zone is reached through the envelope's channels for that
// zone (<zone>.setpoint, <zone>.ramp_rate, <zone>.heater), as the catalog
// names its tools (<zone>.set_setpoint, ...), and judged on that zone's
// readings.

// zoneDrive is one heated zone as a phase drives it: the actions that write
// its channels (envelope.ZoneSetpointAction and its kin: furnace.* for the
// zone named furnace) and its readings.
type zoneDrive struct {
	name string
	env  *envelope.Envelope
}

// channel is the zone's channel of a quantity (setpoint, ramp_rate,
// heater, temperature).
func (z zoneDrive) channel(what string) string { return z.name + "." + what }

func (z zoneDrive) setpoint(t device.Temperature) envelope.Action {
	return envelope.ZoneSetpointAction(z.name, t)
}

func (z zoneDrive) rampRate(rt device.TemperatureRate) envelope.Action {
	return envelope.ZoneRampRateAction(z.name, rt)
}

func (z zoneDrive) heater(on bool) envelope.Action { return envelope.ZoneHeaterAction(z.name, on) }

// reading is the zone's controller in a snapshot.
func (z zoneDrive) reading(rd envelope.Readings) device.FurnaceStatus {
	st, _ := z.env.ZoneReading(rd, z.name) // a zone of the rig: zone resolved it
	return st
}

// at is when the zone's reading was taken: a step's freshness is judged
// on its own zone's controller.
func (z zoneDrive) at(rd envelope.Readings) time.Time { return z.reading(rd).At }

// zone resolves the zone a phase drives on this run's rig (recipe.Zones:
// the zones whose setpoint the envelope bounds). A zone the rig lacks, or
// no zone named on a rig of several, is ErrInput; a zone that is not one
// of the envelope's is ErrNotReady: nothing is driven rather than the wrong
// zone.
func (r *recipeRun) zone(ph *recipe.Phase) (zoneDrive, error) {
	zs := recipe.Zones(r.env.Rig.Envelope())
	name := ph.Zone
	switch {
	case name == "" && len(zs) == 1:
		name = zs[0]
	case name == "":
		return zoneDrive{}, inputErr("%s: the rig has %d heated zones (%s) and the phase names none", ph.Name, len(zs), strings.Join(zs, ", "))
	case !slices.Contains(zs, name):
		return zoneDrive{}, inputErr("%s: the rig has no zone %s (zones: %s)", ph.Name, name, strings.Join(zs, ", "))
	}
	z := zoneDrive{name: name, env: r.env.Rig.Envelope()}
	// A zone that is not the envelope's is not driven (its actions would
	// write channels the envelope does not have, and be refused).
	if _, ok := z.env.ZoneReading(envelope.Readings{}, name); !ok {
		return zoneDrive{}, fmt.Errorf("%w: %s: zone %s is not a heated zone of the envelope's rig", ErrNotReady, ph.Name, name)
	}
	return z, nil
}

// checkZones resolves the zone of every ramp, hold and cool of the plan
// before anything moves.
func (r *recipeRun) checkZones() error {
	for i := range r.st.Plan.Phases {
		ph := &r.st.Plan.Phases[i]
		if ph.Ramp == nil && ph.Hold == nil && ph.Cool == nil {
			continue
		}
		if _, err := r.zone(ph); err != nil {
			return err
		}
	}
	return nil
}

// Zones returns the heated zones the planned run's phases name (zone:),
// sorted, each once; none for a plan that names no zone (the rig's only
// zone). The preview refuses a plan of several zones it cannot simulate.
func (r *recipeRun) Zones() []string {
	var zs []string
	for _, ph := range r.st.Plan.Phases {
		if ph.Zone != "" && !slices.Contains(zs, ph.Zone) {
			zs = append(zs, ph.Zone)
		}
	}
	slices.Sort(zs)
	return zs
}
