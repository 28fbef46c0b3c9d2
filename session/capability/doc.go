// Package capability loads and checks the capability declarations of L3
// (spec/hcp/L3-safety-contract.md, "Capability Declaration") that live as
// JSON files in configs/capabilities/, and resolves a task_submit's
// (capability, capability_version range) to one of them.
//
// # Concepts
//
// Parse checks a declaration against the embedded declaration schema
// (declaration.schema.json: the spec's fields, nothing unknown), parses
// its version as strict semver and its durations, and compiles its
// input_schema and output_schema as JSON Schema 2020-12 with format
// assertions and no network or file loading. Any failure refuses the
// declaration: the agent does not start on an invalid one.
//
// A Registry holds the loaded Capabilities by (name, version), the
// CapabilityRef of seeds/003. Resolve takes a name and a semver range
// ("1.x", ">=2.0.0", "^1.2"; empty means any) and returns the highest
// version that satisfies it; pre-releases match only a range that names
// one.
//
// ValidateInput and ValidateOutput validate raw JSON against the
// declared schemas and return an *InputError listing every failing
// instance path (JSON Pointer) with its message — the invalid_input
// reason of the gate.
//
// # Caveats
//
// Durations accept days, hours, minutes and (fractional) seconds only:
// years, months and weeks have no fixed length. JSON Schema cannot say
// that temperature_range.min <= max; the gate checks such cross-field
// rules itself.
package capability
