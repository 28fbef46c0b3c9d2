// Package hilbench builds the hardware-in-the-loop test bench that the
// envelope's, the executor's and the session engine's tests share: the whole
// simulated rig of firmware-sim/rig in-process (Modbus TCP on a free port,
// the serial instruments on their ptys, the virtual GPIO behind the control
// socket), every real driver of drivers/ over it, the device set
// (envelope.Rig), the interlock with an in-memory audit record, its started
// monitor and, on request, the tool pipeline (envelope.Invoker).
//
// It is test support: only _test.go files import it (TestOnlyTestsImport
// checks it), and it imports the simulator, the drivers and the envelope,
// so it lives in cmd/, the one layer that may import them all (and not in
// the top-level internal/, whose leaves every layer imports). It imports
// nothing of session/, transport/ or cmd/ but its sibling simrig
// (TestImportsPointDown): what a test of the session
// needs of its own layer it hands down through Opts (Opts.Materials).
//
// # Use
//
//	b := hilbench.New(t, hilbench.Opts{TimeScale: 600, Authorizer: authz,
//		Invoker: &envelope.InvokerOpts{RateClock: rates.Now}, Arm: "e2e-operator"})
//	rig := executor.ToolRig(b.Invoker, b.Monitor)
//
// New returns once the monitor has read every instrument (and, with Opts.Arm,
// once the interlock is armed and the relay feedback read energised); it
// fails the test otherwise. Every socket, driver and goroutine it starts is
// closed by t.Cleanup, in the reverse order of its start: the monitor first,
// the rig last.
//
// # Options
//
// What differs between the tests is an option: the simulator's time scale
// (also the Raman driver's), the serial instruments' starter, the Authorizer
// (the engine's real token Authorizer; an allow-all one where tokens are not
// under test: AllowAll grants every action and no tool permission), the
// audit chain in front of the in-memory record (a budget counter, a
// hash-chained log), the monitor's options, the Invoker's options, the
// operator who arms the interlock, the lifetime of the bench's context and
// the readiness hang guard and poll period. Faults are injected in the
// tests through Bench.Plant, as before.
//
// # Caveats
//
// The drivers run with their shipped timeouts (a bench that times out
// sooner than the product trips on a busy machine where the product would
// not). Physics runs on the simulator's scaled clock, comms on the wall
// clock: compare sim-time quantities with the plant, not with wall sleeps.
package hilbench
