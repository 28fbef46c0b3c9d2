// Package safestate reads every output of the rig back after an e-stop and
// reports whether each is in its safe state: the relay de-energised, the
// furnace's heater off, every digital output at its safe level. The daemon
// uses it after the interlock's SafeState; the CLI's fallback e-stop (no
// daemon answered) uses it with halt set, driving each output safe itself.
//
// # Concepts
//
// Check returns one Output per instrument, sorted relay first; a Report
// holds them with how the e-stop ran (Via: "daemon" or "fallback") and
// Finish sets AllConfirmed: true only when every output was read back safe.
// Print writes a Report for a person.
//
// # Caveats
//
// An instrument that cannot be reached is reported, never skipped: its
// Output carries the error and AllConfirmed is false.
package safestate
