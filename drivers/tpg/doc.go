// Package tpg is the generic driver of the Pfeiffer TPG mnemonic family: it
// drives one gauge of any controller of the family, as a
// device.PressureGauge and a device.Verifier, from the model's profile
// (drivers/profile, family tpg; NewModel compiles it): each gauge's
// mnemonic and measuring range, the unit command and its codes, the gauge
// types TID must report, and the status codes with their meanings. Only the
// exchange every model shares is Go (below) and the data's shape.
//
// # Protocol
//
// Pfeiffer Vacuum, "TPG 261 SingleGauge Operating Instructions" BG 5195 BEN
// / A (2011-05), section 5 "Communication", which covers the TPG 261 and
// 262 ("TPG 26x"); excerpt configs/manuals/pfeiffer-tpg-261.md, profiles
// pfeiffer-tpg-261, pfeiffer-tpg-262 and the simulator's hcp-sim-gauge.
// Each command is a two-step exchange:
//
//	host:  <mnemonic>[,params] CR     gauge: ACK CR LF   (or NAK CR LF)
//	host:  ENQ                        gauge: <data> CR LF
//
// ENQ without a request pending answers the controller's ERROR word
// ("0000"), not NAK. Mnemonics used, all without parameters (the driver
// changes no setting): PR1, PR2 (data "x,sx.xxxxEsxx": status digit, comma,
// the value in the current unit with its sign, e.g. "0,+8.3400E-03"; the
// manual's own no-sensor output "5,2.0000E-2" has neither sign nor a
// two-digit exponent, and is read as sent), PRX and continuous output (both
// gauges, "x,sx.xxxxEsxx,y,sy.yyyyEsyy": ParsePressures), UNI (the unit: 0
// mbar, 1 Torr, 2 Pa), TID (one gauge type per connector, also on the
// single-gauge 261: "PKR,noSEn") and ERR (the error word). testdata/frames.tsv
// is the corpus of replies the tests parse, each with its source.
//
// # Concepts
//
// The driver reads the controller's unit (UNI, no parameter) before the
// first reading and after any failed exchange, and converts readings to
// device.Pressure from it; it never sets the unit (a controller's display
// is the technician's). Statuses meaning ok, underrange and overrange are
// readings; the others (sensor error, off, no sensor, identification
// error), and a value outside the gauge's measuring range (a negative value
// of a linear gauge included), come with an error wrapping device.ErrSensor.
// NAK, and the error word where data was asked for, are device.ErrRejected;
// any other malformed reply is device.ErrFrame. ReadChannels (hcp-edge
// probe) reads every gauge of the profile.
//
// Verify (at the agent's start and in hcp-edge probe, before anything is
// driven) reads, and never writes: continuous output (COM) must be off
// (it listens before sending anything: a streaming controller is a
// mismatch), TID must report the profile's gauge types, UNI must be a unit
// of the profile, ERR must report no controller error.
//
// Halt has nothing to drive and returns nil.
//
// # Caveats
//
// Continuous output at its 1 min interval is not heard in Opts.Listen
// (1.2 s); at 100 ms and 1 s it is. The TPG 26x has no mnemonic that
// reports the mode without starting it (COM starts it).
package tpg
