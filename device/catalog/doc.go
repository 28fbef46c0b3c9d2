// Package catalog is the rig's tool catalog: what the rig can be asked to do,
// described so that a remote caller, the session gate and the interlock agree
// on it.
//
// It follows the tool specification of seeds/004 §1.2: every Tool has an id
// (UUID), a name and a semantic version (upper layers refer to a tool only by
// the pair, the CapabilityRef of seeds/003), a description, capability tags,
// an input and an output JSON Schema (draft 2020-12), safety metadata
// (permission, risk level, dangerous, side effects, reversible, idempotent,
// rate limit) and performance metadata (typical latency, timeout).
//
// # Concepts
//
// A Registry holds tools. Register compiles both schemas with
// github.com/santhosh-tekuri/jsonschema/v6 (draft 2020-12, format assertions
// on, no loading of anything from the file system or the network) and refuses
// a duplicate (name, version), a duplicate id, a malformed name or version, or
// a schema that does not compile, each with a typed error. List, Describe and
// Lookup (by capability tag) read it; a registered Tool validates inputs and
// outputs against its compiled schemas.
//
// Generate returns the rig's own catalog, generated from its layout
// (device/rig.Layout), not written per role: for each heated zone a
// setpoint, a ramp-rate and a heater tool named after the zone
// (ZoneTool: the zone furnace has furnace.set_setpoint, the zone growth
// growth.set_setpoint), as the envelope names the zone's channels
// (furnace.setpoint); for each output its role's tool (pump.set,
// gate_valve.set, chamber.vent, scrubber.set: RoleTool), the gas lines'
// valves as the valves of valve.set, any other output a tool of its own
// (switch.NAME.set, after its channel switch.NAME: SwitchTool); gas flows
// over the lines; Raman acquisition when the rig has a spectrometer; a
// read-only snapshot; and one compute tool, raman.analyze: category
// "compute" (CategoryCompute), never Dangerous, reaching no instrument;
// the Invoker runs the handler the agent registers for it (the model
// router) instead of the interlock. The one-zone layout of today's
// configuration shape generates exactly the catalog written before it was
// generated (names, ids, texts, schemas: testdata/*.today.json); a zone's
// tools other than the furnace's have ids derived from their names.
// Builtin is Generate of a reference one-zone rig, for code without a
// layout.
//
// # Caveats
//
// The catalog describes tools; it executes nothing. Invocation (permission,
// input validation, the safety envelope, execution with a timeout, read-back
// and audit) belongs to envelope's Interlock, the only holder of writable
// instruments. Numbers in tool inputs carry an explicit unit field where the
// quantity has more than one common unit; the interlock converts them with
// device.TemperatureIn, FlowIn and PressureIn.
package catalog
