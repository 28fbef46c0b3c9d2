// Package configcheck validates the agent's configuration file before the
// rig sees it, without touching hardware, and reports every problem at once,
// each as FILE:LINE: KEY: MESSAGE.
//
// # Concepts
//
// The check has two layers. The first is declarative: the YAML is parsed
// into a node tree, converted to a JSON value and validated against
// configs/hcp-edge.schema.json (embedded as configs.Schema()) with
// santhosh-tekuri/jsonschema/v6. Every leaf of the validator's error tree
// becomes a problem, its instance location (a JSON pointer) mapped back to
// the YAML node's line and column; an unknown key names the keys known at
// that place (the schema's properties there). The same schema is what an
// editor with YAML language support uses to validate and complete the file.
//
// The second layer is Go code for what a schema cannot say: the rig section
// as rigconfig.Parse validates it, each gas line valve a coil of the digital
// I/O module, the envelope compiled against the rig's device ranges
// (envelope.Compile), absolute paths and a control socket short enough to
// bind, key files readable by their owner only, the at-rest key as the
// daemon loads it, and the capability declarations.
//
// What the schema refuses is pruned from a copy of the tree (an unknown key
// removed, a bad value made null) before the second layer runs on it, and a
// second-layer problem at or below a key the schema already reported is
// dropped: one mistake, one problem, no cascade.
//
// # Caveats
//
// A key set to null (`key:` with no value) counts as absent, as it does
// when the yaml package decodes into the Go types. YAML scalars are typed
// by their resolved tag: `unit_id: 1` is a number, not the string "1".
package configcheck
