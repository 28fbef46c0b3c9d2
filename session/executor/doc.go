// Package executor holds the L4 task executors: the recipe executor (every
// process recipe, cvd-material-synthesis among them), rig-status and
// leak-check. Each turns a task's intent and inputs into a
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
// # Recipes
//
// A RecipeExecutor (recipe.go) runs the process recipes of session/recipe:
// reviewed data, not Go code. Plan resolves the task's inputs with
// recipe.Recipe.Resolve (a refused input is input_error, naming the field)
// into a recipe.Plan whose phases are the steps, each run by the phase code
// of phases.go:
//
//	preflight   interlock not latched, e-stop released, no leak, door closed,
//	            relay armed (fresh readings); setpoints above the envelope's
//	            maximum clamped with a warning, as are hold gas flows and the
//	            Raman integration; ramp rates clamped into the envelope; a
//	            purge flow above its maximum refused; reactive gases off, vent
//	            closed, scrubber on
//	pump_down   vent closed, pump on, gate valve open; wait for the base pressure
//	leak_check  gate valve closed for the hold; rate of rise at most the
//	            maximum; pump down again
//	purge       a gas at a flow, its line valve open, for a time (it keeps flowing)
//	ramp        ramp rate, setpoint, heater on; wait until the working setpoint
//	            reaches it and PV is within the settle band
//	hold        gas flows on, line valves open, hold with checkpoints every
//	            CheckpointEvery (the furnace judged when the hold has a
//	            temperature); the gases it closes: flow 0, valve closed
//	cool        purge, heater off, wait below the plan's target (never above
//	            the envelope's vent temperature − 5 °C); the flowing gases off;
//	            wait until the readings confirm every gas off
//	vent        gate valve closed, pump off, vent open to the pressure; vent closed
//	measure     acquire a Raman spectrum
//	analyse     the compute tool raman.analyze@1.0.0 through the Rig's
//	            Invoke (its handler the model router or, without one,
//	            session/analysis.AnalyzeFor the phase's material): E2g/A1g
//	            fit, distance, and the deciding model's layer count and
//	            confidence, with its Provenance; on the router's advice, one
//	            re-acquisition within the recipe's integration range and the
//	            time left, analysed again (reacquire.go); the material the
//	            spectrum shows (the tool's identification) against the
//	            phase's: another material is measured as itself, a
//	            mismatch is an audited warning (material.go), nothing
//	            found completes with material none
//
// The checkpoint state pins the whole Plan (as the preflight adjusted it)
// and the recipe's identity (name, version, sha256): Resume needs no
// recipe file, and a session resumes with the recipe it started with. The
// growth-log rows are journaled: each checkpoint stores the rows added
// since the one before. After a failure Cleanup turns the heater and the
// reactive gases off, purges with the carrier for the plan's cleanup
// purge, and closes the carrier.
//
// The first shipped recipe (CVDName, configs/recipes/) is calibrated on the
// simulated rig: 3 sccm of its reactive gas for 15 min at 725 °C grow about
// 0.9 layer.
//
// # Caveats
//
// target_layers is compared with the result (a warning when it differs); it
// does not change the recipe. A confidence below the caller's
// confidence_threshold fails the task (execution_error) with the analysis in
// the partial outputs; a result of material none has no layer count for it
// to judge. The analysis knows the materials session/analysis has a model
// for (analysis.Materials).
package executor
