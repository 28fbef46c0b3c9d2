// Package rigconfig reads the agent's YAML configuration (rig, envelope,
// monitor, agent and gate sections) and turns the rig section into concrete
// drivers. It is the one place that knows which instrument sits on which
// wire; everything above it sees device contracts only.
//
// # Concepts
//
// Parse and Load decode strictly (an unknown key is an error), expand
// ${sim_dir} and environment variables in paths, fill defaults (Defaults:
// HCP_STATE_DIR and HCP_CONTROL_SOCKET override the file) and validate
// everything that can be checked without hardware. The gate section is a
// gate.Config decoded over DefaultGate (the shipped policy plus the local
// operator, broker user and caller "local"). The envelope section is
// an envelope.Config; Spec derives the envelope.RigSpec it is compiled
// against from the rig section.
//
// Build opens every instrument and performs no write: it is what the
// read-only probe uses. BuildPartial opens what it can and reports the rest,
// for the e-stop fallback, which must act on whatever it can reach.
// Instruments.Relay builds the interlock relay output, and Instruments.Rig
// hands the writable rig to the interlock.
//
// # Caveats
//
// gpio.NewOutput drives the relay to its safe (de-energised) level when it
// is built: only the daemon and the e-stop fallback call Relay, never probe.
//
// go.bug.st/serial opens a port with TIOCEXCL: while a process holds a
// serial instrument, another process's open fails with EBUSY (root is
// exempt). The e-stop fallback therefore cannot count on the serial
// instruments while a hung daemon holds them; the relay (GPIO) and the
// Modbus TCP instruments are enough to make the rig safe, because the relay
// unpowers the heater and the gas line valves in hardware.
package rigconfig
