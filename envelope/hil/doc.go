// Package hil holds the hardware-in-the-loop tests of the envelope: the
// interlock and its monitor over every real driver (Modbus TCP, serial ptys,
// GPIO through drivers/gpio over drivers/simgpio) against the whole simulated
// rig of firmware-sim/rig, in-process, built by cmd/hiltest/hilbench (the bench
// the executor's and the engine's tests share). It has no code outside its
// tests.
//
// # Trip tests
//
// For each fault of the simulator that the envelope must catch — thermal
// runaway, thermocouple open, gas leak, vacuum loss, a silent device and the
// e-stop input — a test brings the rig to a state where the fault matters,
// injects it through the plant, and checks the write log (the procedure's
// writes reached the firmware, and nothing else did), the latch, the typed
// refusal of every non-safe action while latched, the audit log (a
// hash-chained session/audit log in a bbolt file) and the operator's reset.
//
// The envelope is envelope/testdata/envelope.yaml compiled against
// envelope.SimRigSpec(). Vacuum loss shows as over_pressure: with H2 flowing
// under its 100 mbar interlock, the pumped chamber settles near 300 mbar
// once the fault opens a leak, and the envelope maps over_pressure to
// close_all_valves_and_alert.
//
// # Trip latency
//
// BenchmarkTripLatency (and TestTripLatency with HCP_TRIP_LATENCY=1) measure
// the time from the simulator's first over-limit moment of a thermal runaway
// to the heater-off write received by the simulated controller (the write
// log's At), at the monitor's default poll rate, and report p50/p99.
//
//	go test ./envelope/hil -run '^$' -bench TripLatency -benchtime 60x
//	HCP_TRIP_LATENCY=1 go test ./envelope/hil -run TestTripLatency -v
package hil
