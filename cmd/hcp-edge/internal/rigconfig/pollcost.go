package rigconfig

import (
	"fmt"
	"time"

	"hcp-edge/drivers/rigbuild"
)

// pollCostErrors refuses a furnace poll period shorter than the poll itself
// on a serial line: the monitor would fall behind its period, and the trip
// detection with it, at every poll (a Eurotherm 3200's map needs five reads
// for the status: about 68 ms at 19200 baud 8E1). The figure is a lower
// bound (the controller's response time comes on top), so a period it
// refuses is too short on any controller.
func (f File) pollCostErrors() []error {
	wire, reads, baud, ok := rigbuild.FurnacePollWire(f.Rig.Config, f.Rig.profiles)
	if !ok || f.Monitor.FurnaceEvery <= 0 || wire < f.Monitor.FurnaceEvery {
		return nil
	}
	z := f.Rig.ZoneEntries()[0] // FurnacePollWire's: the zone the envelope drives
	return []error{fmt.Errorf("monitor.furnace_every: %v is shorter than one poll of the furnace on bus %s: %d reads (profile %s) take at least %v on the wire at %d baud, before the controller's response time; the monitor would fall behind its period (use at least %v)",
		f.Monitor.FurnaceEvery, z.Bus, reads, z.Profile, wire.Round(time.Millisecond), baud, (2 * wire).Round(10*time.Millisecond))}
}
