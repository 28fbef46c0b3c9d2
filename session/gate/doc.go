// Package gate is the L3 admission gate of hcp-edge
// (spec/hcp/L3-safety-contract.md, "Permission Audit", "Risk Assessment
// Process", "Approval Flow"): every task_submit passes through Decide
// before a session exists.
//
// # Concepts
//
// Decide runs the checks in the spec's order and stops at the first
// refusal, a *Rejection carrying the task_rejected reason_code:
//
//  1. caller authenticated: the broker-validated user handed in with the
//     message maps (Config.BrokerUsers) to the payload's caller_id —
//     otherwise unauthorized;
//     Then the caller's quotas (Config.Quotas, quota.go): its submits in the
//     last minute and its open sessions (Request.OpenSessions, from the
//     engine) — past one, resource_unavailable naming the quota and when
//     it frees (Rejection.RetryAfter for the rate);
//  2. capability known and its version range satisfied (Registry.Resolve)
//     — otherwise invalid_input on /capability or /capability_version;
//  3. caller permitted (Config.Callers): the capability is in the ACL, its
//     static risk floor is within the caller's max_risk_level, the task's
//     data classification within its max_data_classification — otherwise
//     forbidden;
//  4. inputs valid against the declared input_schema — otherwise
//     invalid_input with every failing path (/inputs/...);
//  5. semantic checks JSON Schema cannot express (Config.Ranges: min <=
//     max, a known temperature unit, nothing below absolute zero; a
//     positive, parseable max_duration) — invalid_input;
//  6. risk: the static floor, raised by every input-driven Escalation that
//     fires (temperature_range.max at or above 800 °C → R4; an input
//     naming a toxic gas line → R4: configs/gate/escalations.yaml) and
//     by the context rules (outside the attended windows of a configurable
//     clock and schedule; a declared resource type busy in another
//     session), both for capabilities with physical resources only. Above
//     the caller's max_risk_level or the capability's risk_ceiling:
//     risk_too_high with assessed_risk_level and a suggestion built from
//     the rules that fired ("reduce temperature_range.max below 800 °C to
//     qualify for R3");
//  7. data classification: T2 and above mark the session AuditedAccess;
//     T3 and T4 are forbidden unless Opts.Protection says the uplink is
//     TLS and an at-rest key is configured, and then mark it Encrypted
//     (the engine seals its artifacts and checkpoint payloads under that
//     key); the refusal's message names what is missing, TLS, the key or
//     both;
//  8. concurrency: the engine supplies the number of running sessions of
//     the capability; at its concurrent_limit, resource_unavailable;
//  9. approval: a declaration requiring human approval with an assessed
//     risk of R3 or more yields PendingApproval, not a refusal.
//
// An admitted Decision carries the approved risk level and data
// classification, the capability's catalog permissions, the bounded
// max_duration and the abort_timeout: what the session token needs. Every
// decision is recorded in the audit log (audit.KindGate) under the session
// id, or the message id when there is none.
//
// # Where the spec is silent
//
// L3 says the declared risk_ceiling "sets the minimum possible risk"; read
// literally every CVD task would be R4 and its own example (500 °C is R3)
// impossible. hcp-edge keeps risk_ceiling as the ceiling and takes the
// floor from Config.Capabilities[name].RiskFloor, or derives it: R1 for a
// capability without physical resources, R2 with them, R3 with declared
// hazards, never above the ceiling. An unknown capability or version has
// no reason code of its own: invalid_input naming the field. A T3/T4 task
// the agent cannot protect is forbidden. A task max_duration above the
// capability's is bounded, not refused.
//
// # Caveats
//
// The gate decides; it issues no token and keeps no state about running
// sessions: the engine passes Running, BusyResources and OpenSessions,
// holds pending sessions, and asks session/token for the token. Its one
// state is the submits_per_minute window, in memory: a restart forgets it. A recording failure is
// returned as an error and the decision must not be acted upon.
package gate
