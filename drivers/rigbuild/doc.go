// Package rigbuild turns the rig model (device/rig) into drivers: it reads
// the instrument profiles (the shipped ones, configs/profiles, and a lab's
// own), checks what only they can decide about a layout, and builds every
// instrument's driver on its bus or serial line. It is the one place that
// knows which driver family drives which instrument; the envelope and the
// session see device contracts only.
//
// # Concepts
//
// LoadProfiles reads the profiles; every problem of every file comes back
// at once, each a *profile.Problem at its FILE:LINE (ProfileProblems).
// Check reports the profile-dependent problems of a rig.Config, in either
// shape of its rig section, keyed rig.KEY like rig.Config.Check: a channel
// its I/O module's profile lacks, a profile of the wrong kind or family, a
// full scale the flow controller is not made in, a head's gauge its
// controller lacks, a zone's heater without a comms watchdog and no relay
// watchdog.
//
// Build opens every instrument and performs no write: it is what the
// read-only probe uses. It builds a controller per heated zone
// (Instruments.Zones; Furnace is the first, the one the envelope drives), a
// module per I/O module (Modules; DIO is the first) and a driver per gauge
// controller (Gauges; Gauge is the one of the process head). The units of
// one Modbus bus share one client (a modbus.Bus per bus name): on an RS-485
// line of several zones' controllers, one transaction at a time, and a
// halt (device.WithUrgent) goes before every routine transaction waiting.
// Verify reads back every one of them. BuildPartial opens what it can and reports the rest
// (Instruments.Unreachable), for the e-stop fallback, which must act on
// whatever it can reach. Instruments.StartInputs, Relay and StartHeartbeat
// build the GPIO lines; handing the writable rig to the interlock is the
// caller's (drivers/ may not import envelope/: cmd/hcp-edge's rigconfig
// does it, InterlockRig).
//
// Facts (facts.go) is what the profiles say about the rig that the
// envelope's spec needs (each zone's ranges from its own controller's
// profile, each head's range, the wire of each writable channel, the
// drivers' own writes), in device/rig's words, for envelope.SpecOf.
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
//
// Error messages keep the words "rigconfig:" of the agent's configuration
// package they came from, so that probe and the daemon's logs read as
// before.
package rigbuild
