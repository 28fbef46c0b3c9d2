// Package profile reads instrument profiles: one YAML document per
// instrument model, written from the manufacturer's manual, that says what
// the model can do — its protocol family, its channels (for a Modbus model:
// table, address, raw type, word order, scale and offset, unit, the device's
// own range, read or read-write, and the channel's role in the rig's
// contracts; for an alicat model its data frame's columns, commands, status
// codes and full scales; for a tpg model its gauges' mnemonics and measuring
// ranges, unit codes and status codes) — and what it cannot: no comms
// watchdog, a register in memory of limited write endurance.
//
// A profile describes a model, never a rig: which output of a relay module
// opens which gas line is the configuration's layout. The generic driver of
// each protocol family (drivers/regmap for Modbus register maps,
// drivers/alicat and drivers/tpg for the serial families) turns a profile
// and an address on a bus or a line into device/ instruments.
//
// Parse refuses a profile with every problem at once, each a *Problem that
// prints FILE:LINE: key: message; nothing is built from a refused profile.
// Problems of the YAML itself are said in the format's words, never a Go
// type's: a syntax error at the line it is on (SyntaxLine), an empty file as
// empty, an unknown key with the keys known at its place, a value of the
// wrong kind with the kind wanted.
// The JSON Schema of the format is configs/profile.schema.json; the shipped
// profiles are configs/profiles/*.yaml; docs/INSTRUMENTS.md explains how to
// write one from a manual and how to add a protocol family.
package profile
