// Package simgpio provides the rig simulator's virtual GPIO lines (estop, leak,
// relay, relay_fb, heartbeat) as periph.io gpio pins, reached over the
// simulator's control API (HTTP over its unix socket). With them the agent, in
// another process, drives the simulated e-stop, leak detector, interlock relay
// and the relay watchdog's heartbeat through the same drivers/gpio code it
// uses for real pins.
//
// # Protocol
//
// configs/rig-protocols.md, "Virtual GPIO" and "Control API":
//
//	GET /gpio/{pin}                                → {"pin": "estop", "level": true}
//	PUT /gpio/{pin}   {"level": true}              drive an output (relay, heartbeat)
//	GET /gpio/{pin}/edge?level=L&timeout_ms=T      long poll: returns as soon as the
//	                                               level differs from L, or after T ms,
//	                                               with {"pin", "level", "changed"}
//
// Every call has its own deadline (Opts.Timeout, plus the wait of a long poll)
// and Client.Close ends calls in progress. Errors wrap the device sentinels:
// ErrTimeout for a deadline, ErrRejected for a non-2xx reply (an unknown pin, a
// PUT to an input), ErrFrame for a reply that does not parse, ErrClosed after
// Close.
//
// # Concepts
//
// Client speaks the API; Client.Pin returns a *Pin implementing gpio.PinIO.
// periph's Read and Out cannot report errors, so Pin also has ReadContext and
// OutContext (which drivers/gpio uses when present) and Err. Read returns
// Opts.FailLevel (Low) when the simulator cannot be read: the fail-safe level
// of the rig's active-low estop and leak inputs.
//
// WaitForEdge is built on the long poll: it reports a change relative to the
// level it last reported, so an edge since the previous call returns at once,
// and it never blocks longer than its timeout (a negative timeout polls in
// chunks of Opts.MaxPoll until a change or Close).
//
// # Caveats
//
// The long poll compares levels, so a pulse that restores the level between two
// polls is not seen. Pull resistors, PWM and SetFunc are not supported and
// return errors. The simulator owns the inputs: they change only through its
// faults (estop, gas-leak) and the relay's read-back.
package simgpio
