// Package alicat is the generic driver of the Alicat ASCII family: it drives
// any mass-flow controller of the family, as a device.FlowController, from
// the model's profile (drivers/profile, family alicat; NewModel compiles it):
// the data frame's columns in order with their units and ranges, the
// setpoint, hold and cancel commands, and the status codes with their
// meanings. Only the framing every model shares is Go: the unit id first,
// CR at the end, fields separated by runs of spaces, numbers as an optional
// sign, digits, point, digits.
//
// # Protocol
//
// Alicat Scientific's "Serial Communications Primer" (Rev. 2, February
// 2023; excerpt configs/manuals/alicat-mc.md), checked against the replies
// of real controllers in testdata/corpus.txt (each entry cited: captures of
// MC-500SCCM-D units on 5v12 and 10v20 and an MCR-200SLPM-D on 8v17, the
// manuals' examples). Every command starts with the controller's unit id
// (one capital letter) and ends with CR; every reply line ends with CR:
//
//	<id>          poll                       → data frame
//	<id>S<value>  set the setpoint           → data frame with the new setpoint
//	<id>HC        hold the valve closed      → data frame with HLD
//	<id>C         cancel the hold            → data frame
//	<id>VE        firmware version           → "<id>   10v20.0-R24 Jan  9 2025,15:04:07"
//	<id>??D*      describe the data frame    → one line per column and status code
//	<id>??M*      manufacturing info         → "<id>  M04 Model Number MC-500SCCM-D", M00..M09
//	<id>DCU <n>   engineering unit of stat n → "<id> 12 SCCM" (10v05+)
//	<id>LSS       setpoint source            → "<id> U" (10v05+: A analog, S saved, U unsaved)
//	anything refused                         → "<id> ?"
//
// The data frame is "<id> <psia> <°C> <volumetric> <mass flow> <setpoint>
// [<total>] <gas> [status...]": real units pad the gas column to its width
// ("A +014.62 +021.89 +000.00 +000.00 +078.95     N2"), firmware before 6v
// prints positive setpoints unsigned ("0116.3"), and a unit with the
// totalizer option prints one number more before the gas. Status codes
// follow the gas; ??D* lists the ones a unit can send, ADC as its one error.
//
// # Concepts
//
// Units belong to the unit, not the model: an MC-500SCCM prints SCCM, an
// MCR prints SLPM (a 1000× misread if taken for sccm). Verify reads them
// (??D* on every firmware, DCU on 10v05 and later) and ReadFlow and SetFlow
// then convert through them; a unit that cannot be a mass flow (a
// volumetric LPM, a normal-condition NLPM) is a mismatch. Before Verify the
// profile's units are assumed: the agent verifies every unit at start,
// before its first write.
//
// Verify (device.Verifier) only sends queries: VE, ??M*, ??D*, DCU <stat>,
// LSS; never a set form. It reports the model (??M*) and refuses a
// configured full scale above the one its model number states. It refuses (findings not OK) an analog setpoint source
// (S would be ignored silently), saved setpoint mode (every setpoint written
// to non-volatile memory, which the manufacturer warns against changing more
// often than every few minutes), columns other than the profile's (a
// totalizer before the gas is allowed), a status code the profile does not
// name, and a unit that cannot belong to its column.
//
// The parser is strict about shape: the unit id and the gas must be the
// configured ones, numbers must have the documented shape and be at least
// the profile's number_width wide (without the sign), status codes three
// capital letters or digits. Anything else is an error wrapping
// device.ErrFrame, never a reading. A status code is never a frame error:
// ReadFlow reports one meaning sensor_fault, or one the profile does not
// name (its meaning unknown), as an error wrapping device.ErrSensor; the
// others are warnings in FlowStatus.Flags. A column outside the profile's
// range (fs_range: a fraction of the full scale) is device.ErrSensor too.
// New refuses a full scale outside the profile's full_scale. SetFlow refuses
// negative, non-finite and above-full-scale flows with device.ErrOutOfRange
// before sending, and checks the setpoint in the reply (device.ErrReadback;
// it catches a controller that ignores S). Halt holds the valve closed, then
// zeroes the setpoint, and confirms both in the reply; a later SetFlow above
// zero cancels the hold.
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
// well-formed number cannot be detected. A ??D* or ??M* answer has no end
// marker: Verify takes it as ended when the line has been quiet for a fifth
// of the exchange timeout. At 19200 baud a 22-line ??D* takes about 1 s on
// the wire: Verify of one controller takes about 1.5 s. Firmware before 10v05 has no LSS: its setpoint source and saving
// cannot be read, and Verify says so (the setpoint readback still catches
// an ignored S). COM and GTA are listed as statuses by a 10v20 unit; their
// meaning is not in the public primer text, so alicat-mc names them
// informational. Pressure is converted from psia, temperature from °C.
package alicat
