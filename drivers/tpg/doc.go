// Package tpg drives Pfeiffer TPG-style vacuum gauge controllers over their
// mnemonic serial protocol, as a device.PressureGauge.
//
// # Protocol
//
// As documented in configs/rig-protocols.md ("Vacuum gauge — Pfeiffer
// TPG-style"), which follows the mnemonic protocol of Pfeiffer Vacuum's "TPG
// 261/262 Single/Dual Gauge Operating Instructions" (and the TPG 36x
// manuals). Each command is a two-step exchange:
//
//	host:  <mnemonic>[,params] CR     gauge: ACK CR LF   (or NAK CR LF)
//	host:  ENQ                        gauge: <data> CR LF
//
// Mnemonics used: PR1 (gauge 1 pressure, data "s,x.xxxxE±xx": status digit
// and value in the current unit), UNI / UNI,n (pressure unit: 0 mbar, 1 Torr,
// 2 Pa) and TID (identification).
//
// # Concepts
//
// Before the first reading the driver sets the unit to pascal (UNI,2), or with
// Opts.SetUnit false reads UNI and converts from it; the unit is established
// again after any failed exchange, in case the controller was power-cycled
// back to its default of mbar. Readings are converted to device.Pressure
// explicitly. Status 0..2 (ok, underrange, overrange) are readings; 3..6
// (sensor error, off, no sensor, identification error) come with the reading
// and an error wrapping device.ErrSensor. NAK is device.ErrRejected; any other
// malformed reply is device.ErrFrame.
//
// Halt has nothing to drive and returns nil.
package tpg
