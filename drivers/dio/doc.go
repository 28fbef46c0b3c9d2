// Package dio drives the rig's digital I/O module over Modbus (unit 2 by
// default): a device.Switch per coil and a device.DigitalInput per discrete
// input, named by configuration.
//
// # Protocol
//
// configs/rig-protocols.md, "Digital I/O module": coils 0 pump, 1 gate valve,
// 2–4 Ar/H2/H2S line valves, 5 vent valve, 6 exhaust scrubber; discrete
// inputs 0 door closed, 1 exhaust OK, 2 pump running. FC 05 writes a coil,
// FC 01 reads it back, FC 02 reads inputs.
//
// # Concepts
//
// Each coil has a safe level (DefaultOpts: everything off except the
// scrubber, on); Switch.Halt and Module.Halt drive to it and confirm by
// read-back. An input may be inverted so that Read is true when its named
// condition holds.
//
// The coils, and the inputs, form a device.LevelBank when their addresses are
// contiguous (DefaultOpts: coils 0–6, inputs 0–2): one FC 01 (FC 02) reads all
// of them, so a monitor polling every switch at 10 Hz sends one transaction
// per period instead of one per switch.
//
// # Caveats
//
// A gas valve coil keeps its value when the interlock relay cuts valve power:
// the read-back confirms the coil, not the valve.
package dio
