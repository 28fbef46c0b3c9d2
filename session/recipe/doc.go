// Package recipe holds process recipes: reviewed data, not code. A recipe
// is a YAML document made of the phases the executor implements, each with
// its parameters, a constant or a reference to one of the task's declared
// inputs; it is a capability (name, semantic version, description, a
// generated input_schema, an output_schema, a derived risk floor, data
// classification and budgets), and it is checked against the rig's safety
// envelope at every extreme of its inputs before any caller is offered it.
// docs/RECIPES.md is the format and every rule, for those who write and
// review recipes; configs/recipes holds the shipped ones.
//
// # Concepts
//
// Load parses one file (at most MaxSize bytes) and refuses, all at once,
// what the format alone says is wrong: a Problems error, each Problem
// FILE:LINE: key: message. Check judges a loaded Recipe against a compiled
// envelope.Envelope: it simulates the phases at every corner of the input
// ranges the parameters reference, asks the envelope's own Check about
// every action the executor would take (with synthetic Readings of the
// state the recipe guarantees at that point and an envelope.State for
// rates of change and purges), and adds the structural rules (gas lines and
// instruments on the rig, bounded holds and waits, cooling before a vent,
// reactive gases closed and purged before a vent, phase order). CheckAll
// does both for many files and refuses two with the same name and version
// but different content.
//
// Resolve turns a task's inputs into a Plan: the concrete phases, every
// parameter a number, a duration or a name, with an estimate and a bound
// per phase, JSON-serialisable so a checkpoint pins it, with the recipe's
// Identity (name, version, sha256) every session records. Its refusal is a
// *capability.InputError naming the field, what the gate turns into
// task_rejected invalid_input.
//
// Capability returns the recipe as a *capability.Capability, built by
// feeding Declaration (the spec's JSON form) to capability.Parse; Policy
// holds what the declaration format has no place for (the risk floor, the
// data classification) and why.
//
// # Caveats
//
// The check's model of the chamber is what the recipe guarantees, not a
// physics simulation: while pumped, the chamber is taken to be at the last
// pump-down's base pressure even with gases flowing; a ramp ends at its
// setpoint and a cool at its target. The interlock still judges every
// action on real readings at run time. The safety inputs (door, exhaust,
// leak detector) are taken at the levels the interlocks require: they are
// the rig's state, not the recipe's. Duration inputs are ISO 8601 strings
// in the input_schema; their range is enforced by Resolve, not by the
// schema.
package recipe
