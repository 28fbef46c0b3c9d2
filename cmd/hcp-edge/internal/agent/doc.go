// Package agent is the hcp-edge daemon: one run of the edge agent, from
// start-up to shutdown. Its only entry is Run; package cli's run verb parses
// the flags and the configuration and calls it.
//
// # Start-up
//
// Run starts the daemon in named steps, each a method of the unexported
// daemon type, in this order: openState (state file, metrics, at-rest key,
// token key, revocations), openRig (envelope, instruments with the relay
// de-energised, interlock, tool pipeline, furnace watchdog), startMonitor
// (the trip monitor), startSessions (hub, uplink, gate and engine),
// recoverSessions (what a previous run left) and serve (uplink attached and
// started, control socket, metrics endpoint, dashboard). A failed step ends
// the start; release closes what the earlier steps opened, in reverse.
//
// # The inbound path
//
// A task from a harness goes broker → uplink (package uplink: the inbox's
// command handler; an abort from anyone but the session's owner is refused
// and audited) → the engine's gate and state machine (session/engine) → the engine's
// Outbound: the hub (package hub: result store, sealing of T3/T4 results,
// fan-out to local watchers) and the store's Queue, the uplink's durable
// outbox in the state file (every step queues its messages in the
// transaction that records it). A task from the local CLI enters through
// the control socket's handler (handler.go) and the same engine. Every path
// is wired inside this package: nothing passes back through package main.
//
// # Shutdown
//
// Intake first (the uplink stops taking commands, the control socket
// drains), then the dashboard, the metrics endpoint, the engine (sessions
// are left for the next start's recovery), the monitor, then
// agent.shutdown_policy on the outputs, the uplink's flush, the
// instruments and the state file.
//
// # Caveats
//
// Every actuator command goes through the tool pipeline (envelope.Invoker)
// and the interlock; this package holds no other path to the rig. The
// e-stop on the control socket calls the interlock's SafeState and reads
// every output back (package safestate).
package agent
