// Package metrics is hcp-edge's Prometheus side: the agent's own families
// (all named hcp_edge_*) and a subset of the Go runtime and process
// families, written in the Prometheus text format by the package itself
// (expo.go: no client library, to keep the armv7 binary small), the seams
// through which the daemon feeds it, and the loopback-only HTTP server of
// GET /metrics.
//
// Two kinds of families:
//
//   - Event families, counted as things happen through seams that wrap the
//     daemon's existing collaborators without changing them: ObservePoll is
//     the trip monitor's envelope.MonitorOpts.OnPoll (poll latency and
//     errors per instrument); Auditor wraps the interlock's
//     envelope.Auditor (trips by cause, from the audit entries of tripped
//     and halted decisions); Recorder wraps the gate's gate.Recorder (gate
//     decisions by outcome and reason code, from the audit.KindGate entry
//     every decision appends).
//   - State families, read at scrape time from the functions of a State
//     (Watch): the interlock latch, the sessions by L2 state, and the
//     uplink's broker connection and outbox.
//
// docs/METRICS.md lists every family with its type, labels and meaning.
//
// Nothing here changes a decision: a wrapper passes every call through
// unchanged and counts on the side; the counters are atomic and the poll
// observation allocates nothing.
package metrics
