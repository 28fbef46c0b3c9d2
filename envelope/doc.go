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
// Channels are named: for each heated zone <zone>.setpoint,
// <zone>.ramp_rate, <zone>.heater (ZoneChannel; furnace.* for the zone
// named furnace, the one zone of the one-entry configuration shape),
// flow.<gas>, switch.<name>, spectrometer.integration (writable) and each
// zone's <zone>.temperature and chamber.pressure (read-only, carrying that
// zone's over_temperature and the over_pressure trip thresholds). Coverage
// lists every writable channel with the rules that bound it.
//
// # Heated zones
//
// A rig has one heated zone or several (RigSpec.Zones, from the layout's
// zones by SpecOf; a rig whose only zone is named furnace has
// RigSpec.Furnace alone), each with its controller (Rig.Furnace the
// first's, Rig.Zones the others' by name), its readings (Readings.Furnace,
// Readings.Zones) and its own channels, limits and over_temperature trip.
// Compile refuses a parameter (or a gas interlock's zone:) naming a zone
// the rig lacks with a *ConfigError that wraps ErrUnknownZone, and leaves no
// zone's writable channel without a limit nor its temperature without a
// trip threshold. Everything the envelope does to "the heater" it does to
// every zone: the heater interlock judges each zone's heater and setpoint,
// venting_while_hot refuses the vent while any zone is hot, its heater on or
// its temperature unknown, the monitor polls every zone's controller at
// FurnaceEvery and kicks each one's watchdog, an over_temperature of any
// zone runs its procedure, and immediate_shutdown and safe_state halt every
// zone's controller (every heater off) with every line. A gas interlock's
// min_temperature judges the zone it names (zone:, required on a rig of
// several zones). The zone tools (device/catalog's ZoneTool:
// growth.set_setpoint) act on their zone (ZoneSetpointAction and its kin).
//
// An Action is one typed request (a setpoint in kelvin, a flow in sccm, a
// switch level). Envelope.Check is a pure function of the Action, a Readings
// snapshot (device values with timestamps; Readings.At is "now") and a State
// (the last accepted value of each channel and the gases used since the last
// purge; its elapsed times are the rig's process time, NewScaledState). It
// returns nil or a *Violation naming the rule, the
// channel, the limit and the value: an action is refused, never clamped.
// Actions towards the safe state (heater off, flow zero, a switch to its
// safe level) always pass. A rule that needs a reading that is missing,
// older than MaxReadingAge or invalid refuses (stale_reading).
//
// # Interlock
//
// The Interlock owns the writable Rig. Its (unexported) apply is the only
// path to an actuator, and only the Invoker calls it: authorise
// (Authorizer, implemented by session/), snapshot, Check, audit the
// acceptance (Auditor; no audit, no write), write with a timeout,
// read back, audit the outcome. Every refusal is audited. SafeState (e-stop)
// and Trip (emergency procedures) bypass authorisation, latch, and halt;
// while latched only safe actions pass, until Reset by a named operator. Arm
// energises the interlock relay. Everyone else gets a View: readings, the
// envelope, the latch, and a dry run.
//
// # Tool calls
//
// The Invoker is the tool pipeline of seeds/004: a catalog tool, resolved by
// name and version, is authenticated, its input validated against its JSON
// Schema and translated into one Action, its permission checked (unless the
// Action is toward safe), its rate limit applied (never refusing a
// toward-safe call), then run through the interlock, its output validated,
// and the call counted in per-tool ToolStats (refusals by rule, p50/p99 from
// a fixed LatencyHistogram). Invoke takes a ToolRef and a JSON input; Act
// takes a recipe's Action and calls its tool (ToolFor). Every error is an
// *InvokeError that unwraps to its cause (a *Violation for an envelope
// refusal). ApplyKeyed is for envelope's own test packages: its key type is
// internal to envelope/.
//
// # Caveats
//
// A rate of change is checked against the last value the interlock accepted
// on that channel; the first write after start has no history and is bounded
// by the min/max only. A zone's ramp rate 0 means "no ramp limit" on the
// controller: give <zone>.ramp_rate a positive min to forbid it.
//
// rig.read_snapshot reports the first zone's controller as its furnace
// object and, on a rig of several zones, the others under zones (by name,
// each as furnace), failing when any zone is unread or its thermocouple
// open. The catalog's output schema does not name zones yet (it admits it:
// the tool's schema of a one-zone rig is pinned as it was).
//
// The control socket and the e-stop CLI are not in this package.
//
// # Monitor
//
// A Monitor polls the interlock's rig, one goroutine per instrument (each
// heated zone's controller at FurnaceEvery, 20 Hz by default; the gauge, each flow
// controller, each switch read-back and each input at OtherEvery, 10 Hz),
// each read bounded by the interlock's ReadTimeout so that a silent
// instrument stalls only its own poller. Switches or inputs that one exchange
// reads together (a device.LevelBank: the DIO module's coils, its discrete
// inputs) have one poller per bank, which reads every member at OtherEvery in
// one transaction; each member keeps its own cached level and health. It
// caches the newest reading of each part (Readings, Status) and runs
// EvaluateTrips after every update, on the poller's own goroutine, and at
// least every FurnaceEvery (an evaluator goroutine wakes only when no
// evaluation has run for that long). A trip kind going from not holding to holding is
// an onset: the monitor latches at once and runs Interlock.Trip (the
// procedure, audited) exactly once for it, in its own goroutine; a kind that
// holds while the interlock is not latched (a reset that raced the
// condition) trips again. While a condition persists and the readings show an
// output of its procedure away from its safe state, the monitor halts those
// outputs again (at most every 500 ms, not audited). An instrument not read
// successfully within the envelope's comms_timeout is comms_loss (no
// comms_loss in the first comms_timeout after Start). The monitor kicks
// every zone's controller's comms watchdog every KickEvery, so a dead agent
// leaves controllers that drop their heaters by themselves. Reset refuses while a fresh
// snapshot still shows a trip condition.
//
// # Over-pressure
//
// A vented chamber at atmosphere is the rig's idle state, and the gauge reads
// overrange there (the sim's gauge tops out at 1000 mbar): pressure alone
// does not trip. over_pressure holds, on a gauge reading that is OK or
// overrange (overrange counting as above any limit up to the gauge's top), when
//   - the chamber is in process (a gas in use: flow at or above
//     flow_on_threshold or its line valve open; or the heater enabled) and the
//     pressure is above chamber.pressure's max;
//   - a gas whose interlock bounds the pressure (the toxic line's 10 mbar,
//     H2's 100 mbar in testdata/envelope.yaml) is in use above that bound:
//     vacuum lost while it flows;
//   - the heater is enabled above the heater interlock's max_pressure while
//     the inert gas flows below its min_inert_flow.
//
// Venting and pumping down from atmosphere with nothing flowing and the
// heater off therefore never trip, whatever the gauge reads. The vacuum-loss
// fault of the simulator shows as over_pressure through the second or third
// rule (with the pump running the chamber settles near 300 mbar, below the
// chamber.pressure max); its procedure is the envelope's choice
// (close_all_valves_and_alert in testdata, which leaves the heater on).
package envelope
