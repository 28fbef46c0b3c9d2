package rigconfig

import (
	"fmt"
	"time"

	"go.bug.st/serial"

	"github.com/hcp-edge/hcp-edge/drivers/modbus"
	"github.com/hcp-edge/hcp-edge/drivers/profile"
	"github.com/hcp-edge/hcp-edge/drivers/regmap"
	"github.com/hcp-edge/hcp-edge/drivers/serialline"
)

// rtuReadChars is what one Modbus RTU read of n registers puts on the wire,
// in characters: the request (unit, function, address, quantity, CRC: 8),
// the reply (unit, function, byte count, 2n, CRC: 5 + 2n) and the silence
// of 3.5 characters the protocol requires before each of the two frames.
func rtuReadChars(n int) float64 { return 8 + 5 + 2*float64(n) + 2*3.5 }

// charBits is one character on the wire: start bit, data bits, parity bit,
// stop bits.
func charBits(m serial.Mode) int {
	bits := 1 + m.DataBits + 1
	if m.Parity != serial.NoParity {
		bits++
	}
	if m.StopBits == serial.TwoStopBits {
		bits++
	}
	return bits
}

// furnacePollWire is the least time one monitor poll of the furnace takes
// on its bus when that bus is a serial (RTU) line: the reads its profile's
// map makes of device.FurnaceStatus, character by character at the line's
// speed, without the controller's own response time. ok is false on TCP
// (whose wire time is negligible) and when the layout is invalid (Validate
// reports that).
func (r Rig) furnacePollWire() (d time.Duration, reads int, baud int, ok bool) {
	b, found := r.ModbusBuses[r.Furnace.Bus]
	if !found || b.Transport != modbus.TransportRTU {
		return 0, 0, 0, false
	}
	mode, err := serialline.ParseMode(b.Mode)
	if b.Mode == "" || err != nil || mode.BaudRate <= 0 {
		return 0, 0, 0, false
	}
	p, found := r.profiles[r.Furnace.Profile]
	if !found || p.Family != profile.Modbus || p.Kind != profile.TemperatureController {
		return 0, 0, 0, false
	}
	sizes, err := regmap.StatusReads(p)
	if err != nil {
		return 0, 0, 0, false
	}
	var chars float64
	for _, n := range sizes {
		chars += rtuReadChars(n)
	}
	secs := chars * float64(charBits(mode)) / float64(mode.BaudRate)
	return time.Duration(secs * float64(time.Second)), len(sizes), mode.BaudRate, true
}

// pollCostErrors refuses a furnace poll period shorter than the poll itself
// on a serial line: the monitor would fall behind its period, and the trip
// detection with it, at every poll (a Eurotherm 3200's map needs five reads
// for the status: about 68 ms at 19200 baud 8E1). The figure is a lower
// bound (the controller's response time comes on top), so a period it
// refuses is too short on any controller.
func (f File) pollCostErrors() []error {
	wire, reads, baud, ok := f.Rig.furnacePollWire()
	if !ok || f.Monitor.FurnaceEvery <= 0 || wire < f.Monitor.FurnaceEvery {
		return nil
	}
	return []error{fmt.Errorf("monitor.furnace_every: %v is shorter than one poll of the furnace on bus %s: %d reads (profile %s) take at least %v on the wire at %d baud, before the controller's response time; the monitor would fall behind its period (use at least %v)",
		f.Monitor.FurnaceEvery, f.Rig.Furnace.Bus, reads, f.Rig.Furnace.Profile, wire.Round(time.Millisecond), baud, (2 * wire).Round(10*time.Millisecond))}
}
