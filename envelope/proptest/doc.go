// Package proptest holds the safety envelope's property test against the
// simulated rig; it has no non-test code.
//
// # Concepts
//
// The test starts firmware-sim's whole rig in-process (Modbus TCP, the serial
// instruments on ptys, the virtual GPIO), builds every driver on it, hands
// them to an envelope.Interlock, and throws thousands of random actions at
// Interlock.Apply — many outside the envelope or against an interlock —
// under random sensor conditions and random injected faults. After every
// sequence an oracle written independently of package envelope (the limits
// are read from envelope/testdata/envelope.yaml by the test itself, never
// through envelope.Check) reads the simulator's write log, which records
// every write the firmware received, and checks that none of them left the
// envelope, given the plant's state just before and just after the Apply that
// caused it.
//
// Drivers and firmware-sim are imported by the test files only: package
// envelope itself never sees them.
//
// # Caveats
//
// The oracle judges a write against the plant's state before and after its
// Apply and flags it only when both violate (a monotone quantity then
// violated at the instant the interlock read it too); readings carry the
// simulator's sensor noise, so the oracle allows a margin of several noise
// standard deviations on flows and temperatures. The purge history of the
// mixing rule and the rate-of-change limits are not restated (see SAFETY.md).
package proptest
