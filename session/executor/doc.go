// Package executor holds the L4 task executors: cvd-material-synthesis,
// rig-status and leak-check. Each turns a task's intent and inputs into a
// Recipe of named steps that the session engine drives one at a time, and
// builds the outputs (validated against the capability's output_schema and
// the caller's expected_output) and the artifacts.
//
// # Concepts
//
// An Executor plans (Plan) or resumes (Resume, from a checkpoint's State) a
// Recipe. Recipe.Run(ctx, i, env) executes step i; Execute runs them all in
// order, emits progress before each step, checkpoints after each, and maps any
// failure to a *Failure carrying the L4 error code (Classify): a refusal of
// the envelope or a latched interlock is safety_violation, a rig that is not
// armed or ready is resource_unavailable, the session context's deadline
// (max_duration) is timeout, bad inputs are input_error, the engine's sink or
// store failing is internal_error, anything else execution_error. After a
// failure the recipe's Cleanup drives the reactive gases and the heater off
// (safe actions, which pass even while latched) and Partial returns the
// partial outputs and a partial growth log.
//
// The Env is everything a run may touch: a Rig (each action a call of its
// catalog tool, by name and version, through the tool pipeline with the
// session token — envelope.Invoker.Act: permission, rate limit, input
// schema, the interlock, output schema, statistics, audit; a read-only
// snapshot, the envelope, the latch: ToolRig builds it), a Clock, a Sink for events
// (progress, intermediate_result, log, warning; the engine numbers them), a
// Checkpointer, and the artifact directory. Nothing else reaches the rig.
// For a T3/T4 session the engine sets Env.AtRest: every artifact file is
// then sealed (session/atrest, bound to the session id and file name), and
// the Artifact's size_bytes and sha256 describe the plaintext the caller
// gets when the file is opened, not the bytes on disk.
//
// # Time
//
// Recipe durations and every wait are process time through Clock. On the
// real rig that is the wall clock (WallClock); against the simulator it is a
// ScaledClock with the simulator's time scale, so the same recipe runs in
// seconds. The interlock keeps its own clock: its rate-of-change limits are
// counted there, and a rate refusal is retried after the time it needs.
//
// # The synthesis recipe
//
//	preflight   interlock not latched, e-stop released, no leak, door closed,
//	            relay armed; growth temperature = midpoint of temperature_range,
//	            clamped to the envelope's setpoint max (refused when the whole
//	            range lies above it); H2S flow, ramp rate and Raman integration
//	            clamped to the envelope; H2/H2S off, vent closed, scrubber on
//	pump_down   vent closed, pump on, gate valve open; wait ≤ 5 Pa (30 min max)
//	leak_check  gate valve closed 2 min; rate of rise ≤ 10 Pa/min; pump again
//	purge       carrier (Ar, 100 sccm or carrier_gas) for 5 min
//	ramp        ramp rate min(20 °C/min, envelope max), setpoint, heater on;
//	            wait until the working setpoint reaches it and PV is within 5 °C
//	grow        H2S 3 sccm, line valve open, hold growth_duration (default
//	            15 min) with checkpoints every 5 min; H2S off, valve closed
//	cool        5 min carrier purge, heater off, wait below the envelope's vent
//	            temperature − 5 °C; carrier off; wait until the readings confirm
//	            every gas off
//	vent        gate valve closed, pump off, vent open until ≥ 90 kPa; vent closed
//	measure     acquire a Raman spectrum (raman.integration_seconds, default 5 s)
//	analyse     session/analysis: E2g/A1g fit, distance, layer count, confidence
//
// The H2S flow and default growth time are calibrated on the simulated rig
// (see DefaultCVDOpts): about 0.9 layer at 725 °C.
//
// # Caveats
//
// target_layers is compared with the result (a warning when it differs); it
// does not change the recipe. A confidence below the caller's
// confidence_threshold fails the task (execution_error) with the analysis in
// the partial outputs. Only MoS2 is supported by the analysis.
package executor
