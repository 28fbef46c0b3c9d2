// Package alicat is the generic driver of the Alicat ASCII family: it drives
// any mass-flow controller of the family, as a device.FlowController, from
// the model's profile (drivers/profile, family alicat; NewModel compiles it):
// the data frame's columns in order with their units and ranges, the
// setpoint, hold and cancel commands, and the status codes with their
// meanings. Only the framing every model shares is Go: the unit id first,
// CR at the end, single spaces, numbers as sign, digits, point, digits.
//
// # Protocol
//
// The shipped profiles: hcp-sim-mfc, the simulator's, as documented in
// configs/rig-protocols.md ("Mass-flow controllers —
// Alicat-style ASCII"), which follows Alicat Scientific's "Serial
// Communications Primer" / "Operating Manual for Mass Flow Controllers"
// (ASCII command set). Every command starts with the controller's unit id (one
// capital letter) and ends with CR; every reply ends with CR:
//
//	<id>          poll                       → data frame
//	<id>S<value>  set the setpoint, sccm     → data frame with the new setpoint
//	<id>HC        hold the valve closed      → data frame with HLD
//	<id>C         cancel the hold            → data frame
//	<id>VE        firmware version           → "<id> 10v05.0-R24"
//	anything refused                         → "<id> ?"
//
// The data frame is "<id> <psia> <°C> <ccm> <sccm> <setpoint sccm> <gas>
// [status...]", each number a sign, digits, a point and digits, at least seven
// characters ("+014.70"); the status codes are HLD (valve held), MOV (flow above
// full scale) and OVR (totaliser overflow). alicat-mc, the real MC series,
// from the primer (configs/manuals/alicat-mc.md), has the same columns and
// eleven status codes.
//
// # Concepts
//
// The parser is strict: the unit id and the gas must be the configured ones,
// the numbers must have exactly the documented shape, and status codes the
// profile does not name are refused. Anything else is an error wrapping
// device.ErrFrame, never a reading. ReadFlow reports a column outside the
// profile's range (fs_range: a fraction of the full scale) or a status code
// meaning sensor_fault as an error wrapping device.ErrSensor, never a
// reading. New refuses a full scale outside the profile's full_scale. SetFlow refuses negative, non-finite and above-full-scale flows with
// device.ErrOutOfRange before sending, and checks the setpoint in the reply
// (device.ErrReadback). Halt holds the valve closed, then zeroes the setpoint,
// and confirms both in the reply; a later SetFlow above zero cancels the hold.
//
// Several controllers may share one serial line (an RS-485 bus): build each
// with New on the same *serialline.Line. Every command is one transaction on
// the line; a Halt whose context is marked device.WithUrgent (the
// interlock's) has each of its exchanges go before every routine one waiting
// (another controller's poll, a setpoint), after the exchange already on the
// line. Between two exchanges of a Halt, the line is handed to the next
// transaction waiting: a routine one only when no urgent one (another
// controller's halt) is waiting, and then just that one if the halt's next
// exchange is waiting when it ends (a reply takes ~25 ms on the wire at
// 19200 baud; the halt goroutine's next call, microseconds). The halt is not
// one transaction, so that the line settles (serialline.Opts.Settle) after a
// reply that did not come in time before the next command is sent.
//
// ReadChannels (hcp-edge probe) returns every column of one frame with its
// raw field, value, unit, range and whether it lies in it.
//
// # Caveats
//
// The protocol has no checksum: a corrupted digit that still leaves a
// well-formed number cannot be detected. Pressure is converted from psia,
// temperature from °C.
package alicat
