// Package raman drives the rig's Raman spectrometer over its ASCII serial
// protocol, as a device.Spectrometer.
//
// # Protocol
//
// As documented in configs/rig-protocols.md ("Raman spectrometer"), an
// SCPI-flavoured line protocol modelled on benchtop spectrometers (the
// simulated "HCP-SIM RAMAN-532"; no vendor manual). Lines end with CR LF in
// both directions:
//
//	*IDN?       → HCP-SIM,RAMAN-532,SN0001,1.0
//	ACQ <ms>    → (after the integration, 10..60000 ms) the data block
//	STOP        → OK (an acquisition in progress ends with ERR 4 aborted)
//	errors      → ERR <n> <message>: 1 unknown command, 2 bad argument,
//	              3 busy, 4 aborted
//
// The data block is "DATA <n>", n lines "<shift> <counts>" (shift in cm⁻¹ with
// one decimal, counts an unsigned integer), then "END <crc>", the CRC-32
// (IEEE) of every data line including its CR LF as 8 lower-case hex digits.
//
// # Concepts
//
// Acquire checks the point count, strictly increasing shifts and the CRC
// (device.ErrChecksum); anything malformed is device.ErrFrame, and an ERR
// reply is an *Error wrapping device.ErrRejected. Its wait is bounded by the
// expected wall-clock duration of the integration (Opts.TimeScale: the
// simulator integrates in sim time) plus Opts.Transfer, and by the caller's
// context. Whenever it gives up waiting — deadline, cancellation or Halt — it
// sends STOP, so the laser is never left on by an abandoned acquisition.
//
// Halt cancels the acquisition in progress, sends STOP and waits for OK.
//
// # Caveats
//
// The document does not say whether a STOP during an acquisition is answered
// by "ERR 4 aborted" followed by "OK", or by one of them alone; the driver
// waits for OK and skips anything before it.
package raman
