// Package regmap is the generic driver of the Modbus protocol family: any
// instrument whose profile (drivers/profile, family modbus) describes its
// register map. A temperature controller profile becomes a
// device.TemperatureController (Controller); the output and input channels of
// an I/O module profile become device.Switch and device.DigitalInput values
// (Module), named and given their safe levels by the rig's layout.
//
// # Concepts
//
// Every channel's encoding (table, address, raw type, word order, scale,
// offset) is the profile's; the driver knows only roles. Reads of one
// instrument are batched: the channels of one table are read in as few
// transactions as the map allows (contiguous addresses, or across gaps when
// the profile says the model answers them, at most 125 registers or 2000
// bits a read). A reading outside a channel's declared range, or the raw
// value the profile names invalid, is a fault of the channel
// (device.ErrSensor), never a value. A write outside the declared range is
// refused before anything is sent (device.ErrOutOfRange); every write of an
// output or a setpoint is confirmed by read-back (device.ErrReadback).
//
// Units: a channel's engineering value is in its profile unit (°F, K, °C;
// per second, minute or hour; Pa..psia; sccm, slpm, lpm); the driver hands
// out and takes the role's canonical unit (°C, °C/min, %), converting on
// every read and write, and checks the device's declared range in the
// channel's own unit. A channel the profile marks non_volatile is read
// before it is written and written only on a change.
//
// Verify (device.Verifier, on Controller and Module) reads the identity and
// the settings the profile's expect: list names (the Eurotherm's dEC.P and
// rmP.U, the ADAM's module name) and compares them, writing nothing; the
// agent refuses to start, and probe fails, on a mismatch.
//
// # Caveats
//
// A controller whose profile lacks a comms watchdog (profile.NoCommsWatchdog)
// has nothing to kick: KickWatchdog does nothing and HasWatchdog is false;
// the rig's configuration must then name another dead-agent path (the
// interlock relay held by the agent's heartbeat), or it is refused.
package regmap
