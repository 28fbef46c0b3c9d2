// Package alicat drives Alicat-style mass-flow controllers over their ASCII
// serial protocol, as a device.FlowController.
//
// # Protocol
//
// As documented in configs/rig-protocols.md ("Mass-flow controllers —
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
// full scale) and OVR (totaliser overflow).
//
// # Concepts
//
// The parser is strict: the unit id and the gas must be the configured ones,
// the numbers must have exactly the documented shape, and unknown status codes
// are refused. Anything else is an error wrapping device.ErrFrame, never a
// reading. SetFlow refuses negative, non-finite and above-full-scale flows with
// device.ErrOutOfRange before sending, and checks the setpoint in the reply
// (device.ErrReadback). Halt holds the valve closed, then zeroes the setpoint,
// and confirms both in the reply; a later SetFlow above zero cancels the hold.
//
// Several controllers may share one serial line (an RS-485 bus): build each
// with New on the same *serialline.Line.
//
// # Caveats
//
// The protocol has no checksum: a corrupted digit that still leaves a
// well-formed number cannot be detected. Pressure is converted from psia,
// temperature from °C.
package alicat
