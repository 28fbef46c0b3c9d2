// Package hub is the daemon's local fan-out of the session engine's
// messages (engine.Outbound): the control socket's watchers (submit
// --watch) subscribe to it, status and sessions read each running
// session's latest progress from it, and it keeps each session's final
// message in the results directory, sealed at rest for T3/T4 sessions.
//
// # Concepts
//
// Publish never blocks the engine: a watcher that lags by WatchBuffer
// messages has its channel closed and is dropped. Final reads a recorded
// final message back, opening it with the at-rest key when it is sealed.
//
// # Caveats
//
// A T3/T4 session's final message is not written at all when the agent has
// no at-rest key (the gate refuses such sessions; this is the second
// line). The hub is not the broker's path: the engine queues every
// message for the broker in the store's Queue (the uplink's outbox) in the
// transaction of its step.
package hub
