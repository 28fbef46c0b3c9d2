// Package engine is the session engine of hcp-edge: it takes a decoded
// task_submit through the L3 gate, keeps each session's L2 state machine in
// the store, runs the L4 executor of an accepted session in a goroutine it
// owns, and hands every message it produces to an Outbound, in sequence
// order (../shared/DESIGN.md §3).
//
// # Concepts
//
// Submit decides a task_submit (gate.Decide, with the number of live
// sessions that conflict with it) and returns the replies for the inbox's
// transaction: task_rejected (session_id null: no session exists);
// task_accepted followed by the session's first events (state_changed
// PENDING → RUNNING and session_created, one store transaction, the token
// issued for max_duration); or an approval_pending event when a human must
// approve. Result.Start launches the run once the replies are durable;
// Result.Discard closes a session whose replies could not be recorded.
//
// Approve / Deny resolve a pending session by approval id or session id;
// the operator is written into the audited transition (one store
// transaction with the state change). An approval timeout rejects the
// session with resource_unavailable; a denial is forbidden.
//
// A run is executor.Execute over the interlock path (Config.Rig) with the
// session token, a Sink and Checkpointer that number events in the store
// and publish them, and the artifact directory StateDir/artifacts/{id}. It
// ends in task_completed (outputs, artifacts with size and sha256, an
// execution summary) after session_closed, or task_failed (the L4 code,
// partial outputs, last_checkpoint in error_details). max_duration is the
// run's context timeout, counted on the monotonic clock of Config.Clock
// from the PENDING → RUNNING commit (across a restart the time already run
// comes from the wall clock's running_since), as is the wall-time budget:
// no step of the wall clock shortens or lengthens a run. Config.Hold
// refuses new sessions (resource_unavailable, its reason) while it gives a
// reason: the agent's clock-sync hold. Abort moves RUNNING or PAUSED to
// ABORTING, cancels the run (its recipe's Cleanup drives the rig safe) and
// closes ABORTED when it ends; Config.SafeState is called when the cleanup
// overruns abort_timeout. Pause takes effect at the next step boundary
// (PAUSED: the rig holds as the last step left it) until Resume.
//
// Data at rest: a session the gate admitted as T3 or T4 (Decision.Encrypted,
// kept in the session's metadata) has its checkpoint payloads sealed in the
// store (store.NewCheckpoint.Seal) and its artifacts sealed on disk
// (executor.Env.AtRest), under Config.AtRest, the agent's one at-rest key;
// task_completed's size_bytes and sha256 describe the plaintext. New
// refuses a gate that promises the key (gate.Protection.AtRestKey) without
// one. Recovery opens the checkpoint with the key; without it, or with
// another key, the session fails (internal_error) naming the key problem,
// and nothing of it is written in the clear.
//
// Concurrency: a physical capability conflicts with every live session of
// a physical capability sharing one of its resource types (counted in the
// gate's Running, so resource_unavailable); read-only capabilities such as
// rig-status run beside them.
//
// Recover, at start, decides each non-terminal session by Decide (a pure
// decision table): resume from the last checkpoint when it is resumable,
// the rig is not latched and shows no trip condition, the outage is within
// Config.RecoveryGrace and max_duration has not passed (state_changed with
// reason recovered_from_checkpoint and a new token); otherwise FAILED with
// last_checkpoint and partial outputs after the recipe's cleanup (or
// SafeState). A pending approval waits again; ABORTING finishes.
//
// # T4 access approval
//
// L3 asks T4 data for an access approval. When a T4 session ends with
// task_completed or task_failed, that message is not sent: the terminal
// transition's transaction stores it, sealed under the at-rest key, in a
// store.AccessRequest, with an access_pending event (stored as a warning,
// like approval_pending, and carrying no result data) before state_changed,
// and the request's audit entry. ApproveAccess puts the held message in
// the outbox with the audited decision in one transaction and opens the
// session's data to local reads (ReadAccess, CheckRead) until the
// approval's end; DenyAccess, or the request's expiry (an engine-owned
// timer, re-armed by Recover), sends task_failed access_denied without the
// data instead. Exactly one final message per session either way. The
// values of a T4 session's intermediate_result events are withheld.
// docs/PROTOCOL-NOTES.md records the decisions.
//
// # A recipe's questions
//
// A recipe run asks through Env.Questions (asker, question.go): the first
// time, the question's checkpoint, the pending question in the session's
// metadata, RUNNING → PAUSED (reason awaiting_input) and a progress event
// carrying the question commit in one transaction; AnswerQuestion (the
// control socket's answer) parses the value as the question's answer type
// and commits the answer, PAUSED → RUNNING and its audit entry in one
// transaction before it wakes the run. Resume refuses a blocked session.
// The question's deadline fails the session with timeout. Recovery keeps a
// blocked session blocked at the same checkpoint (the grace does not apply:
// it emits nothing while it waits) and resumes an answered one with its
// answer. Config.OnQuestion hears every question raised, answered or timed
// out (the alerts' hook).
//
// # Ownership hand-off
//
// A session's owner (store.Session.CallerID) receives its messages and
// may abort it. Handoff gives it to another caller the gate's ACL allows
// (Config.Handoff), asked by the owner as the broker verified it;
// Takeover makes the technician at the rig (caller "local") the owner and
// Handback returns it. Each change is one transaction under the session's
// lock: the new owner, the ownership_changed event queued for both owners,
// the chain record and its audit entry; the session id and the run are
// untouched. Refusals change nothing, are audited, and a broker request is
// answered with task_rejected (RefusalCode). AuthorizeControl refuses the
// control of a non-owner the same way. docs/PROTOCOL-NOTES.md has the
// message shapes.
//
// # Resource budgets
//
// Each run has a budget monitor (budget.go, session/budget): the tighter of
// the capability's budgets policy and the task's constraints.budgets (a
// malformed one is rejected at submit with invalid_input), and its
// max_duration. A goroutine owned by the run feeds a budget.Tracker with
// Rig.Readings and Config.Actions every Config.BudgetEvery; an overrun
// cancels the run with the *budget.ExceededError as its cause, the recipe
// cleans up as after any failure, and the session fails with
// budget_exceeded (error_details.budget). Progress events carry
// data.budgets; each checkpoint carries the tracker's state, so a
// recovered session does not start on a fresh budget; Budgets reports a
// live session's usage.
//
// # Where the spec is silent
//
// approval_pending is not one of L2's nine event types: it is stored as a
// warning with code approval_pending and sent with event_type
// approval_pending, same sequence number and data. A max_duration timeout
// while PAUSED goes PAUSED → RUNNING → FAILED (timeout), since L2 has no
// PAUSED → FAILED. A session accepted without approval but interrupted
// before RUNNING is REJECTED at recovery (the inbox redelivers its submit).
// Against the simulator (TimeScale ≠ 1), max_duration is process time and
// the wall deadline is at least 5 s, since instrument I/O is not scaled.
//
// # Caveats
//
// An event and its outbox entry commit in one transaction of the state file
// (store.Queue), so a crash never leaves one without the other
// (docs/STATE.md); the local watchers' copy (Outbound) is not the durable
// one. Shutdown (Close) cancels runs, whose recipes clean up, and leaves
// them RUNNING for the next Recover.
package engine
