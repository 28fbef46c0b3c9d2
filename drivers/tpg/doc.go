// Package tpg is the generic driver of the Pfeiffer TPG mnemonic family: it
// drives one gauge of any controller of the family, as a
// device.PressureGauge, from the model's profile (drivers/profile, family
// tpg; NewModel compiles it): each gauge's mnemonic and measuring range, the
// unit command and its codes, and the status codes with their meanings. Only
// the exchange every model shares is Go (below) and the data's shape.
//
// # Protocol
//
// The shipped profiles hcp-sim-gauge (the simulator's) and pfeiffer-tpg-261
// follow configs/rig-protocols.md ("Vacuum gauge — Pfeiffer
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
// Before the first reading the driver sets the unit to pascal (UNI,2: the
// profile's unit command and pa's code), or with Opts.SetUnit false (or no pa
// in the profile) reads UNI and converts from it; the unit is established
// again after any failed exchange, in case the controller was power-cycled
// back to its default of mbar. Readings are converted to device.Pressure
// explicitly. Statuses meaning ok, underrange and overrange are readings; the
// others (sensor error, off, no sensor, identification error), and a value
// outside the gauge's measuring range, come with an error wrapping
// device.ErrSensor. NAK is device.ErrRejected; any other malformed reply is
// device.ErrFrame. ReadChannels (hcp-edge probe) reads every gauge of the
// profile.
//
// Halt has nothing to drive and returns nil.
package tpg
