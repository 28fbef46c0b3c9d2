// Package device declares what the rig's instruments can do, and nothing about how.
//
// It is hcp-edge's equivalent of periph.io's conn: contracts and typed physical
// units only. drivers/ implements these contracts over Modbus, serial lines and
// GPIO; envelope/ and session/ see instruments only through them. device imports
// no other folder of the project.
//
// # Concepts
//
// Physical quantities never travel as bare floats: Temperature, Pressure, Flow,
// TemperatureRate and Percent are distinct named types with explicit constructors
// (Celsius, Millibar, SLM, ...) and accessors, so a pressure cannot be passed
// where a temperature is expected without an explicit, visible conversion.
// Readings carry the instant they were taken.
//
// Every instrument has Halt, which means exactly one thing: drive the instrument
// to its safe, inert state (heater off, valve closed, flow zero, acquisition
// stopped; for a switch, the safe level configured for it). The interlock calls
// Halt without knowing an instrument's model.
//
// # Caveats
//
// Every blocking method takes a context whose deadline must reach the I/O.
// Errors wrap the sentinels of errors.go with %w, so callers test them with
// errors.Is.
package device
