// Package envelope is the rig's safety envelope: the hard limits, interlocks,
// prohibited actions and emergency procedures, and the Interlock through which
// every actuator write passes.
//
// # Concepts
//
// A Config (YAML or JSON; the safety_envelope of seeds/000, extended) is
// compiled against a RigSpec, the declared ranges of the rig's instruments,
// into an immutable Envelope. Compile refuses a limit beyond a device's range,
// a writable channel that no rule bounds, and anything unknown, naming the
// channel. Every quantity carries its unit and is converted explicitly with
// device.TemperatureIn, FlowIn and PressureIn; the Envelope works in device
// units (kelvin, K/min, sccm, pascal, seconds).
//
// Channels are named: furnace.setpoint, furnace.ramp_rate, furnace.heater,
// flow.<gas>, switch.<name>, spectrometer.integration (writable) and
// furnace.temperature, chamber.pressure (read-only, carrying the
// over_temperature and over_pressure trip thresholds). Coverage lists every
// writable channel with the rules that bound it.
//
// An Action is one typed request (a setpoint in kelvin, a flow in sccm, a
// switch level). Envelope.Check is a pure function of the Action, a Readings
// snapshot (device values with timestamps; Readings.At is "now") and a State
// (the last accepted value of each channel and the reactive gases used since
// the last purge). It returns nil or a *Violation naming the rule, the
// channel, the limit and the value: an action is refused, never clamped.
// Actions towards the safe state (heater off, flow zero, a switch to its
// safe level) always pass. A rule that needs a reading that is missing,
// older than MaxReadingAge or invalid refuses (stale_reading).
//
// # Interlock
//
// The Interlock owns the writable Rig. Apply is the only path for a
// session: authorise (Authorizer, implemented by session/), snapshot, Check,
// audit the acceptance (Auditor; no audit, no write), write with a timeout,
// read back, audit the outcome. Every refusal is audited. SafeState (e-stop)
// and Trip (emergency procedures) bypass authorisation, latch, and halt;
// while latched only safe actions pass, until Reset by a named operator. Arm
// energises the interlock relay. Everyone else gets a View: readings, the
// envelope, the latch, and a dry run.
//
// # Caveats
//
// A rate of change is checked against the last value the interlock accepted
// on that channel; the first write after start has no history and is bounded
// by the min/max only. The furnace ramp rate 0 means "no ramp limit" on the
// controller: give furnace.ramp_rate a positive min to forbid it.
//
// The trip monitor, the control socket and the e-stop CLI are not in this
// package yet; EvaluateTrips is the pure half of the monitor.
package envelope
