// Package gpio implements the device contracts for the rig's digital lines over
// periph.io gpio pins: Input (device.DigitalInput: the e-stop and leak
// detector) and Output (device.Switch with read-back: the interlock relay),
// and Heartbeat, the pulse that keeps a relay watchdog from dropping the
// interlock relay while the agent lives.
//
// The package shares its name with periph.io/x/conn/v3/gpio; import one of the
// two under another name (this package imports periph's as pgpio).
//
// Both take the narrowest periph interface they need: gpio.PinIn for an input,
// gpio.PinOut plus an optional gpio.PinIn feedback pin for an output. Real pins
// come from periph.io/x/host (in cmd/ only); the simulator's virtual pins come
// from drivers/simgpio; tests use periph's gpiotest.Pin.
//
// # Concepts
//
// An Input reports "active" — the input's named condition holds — not a
// voltage: with ActiveLow (the rig's estop and leak, which are fail-safe: a
// broken wire reads as pressed or leaking) a Low level is active.
//
// Debouncing: a new level must hold for Debounce before it becomes the Input's
// state. Start launches the watcher goroutine that tracks the state: it waits
// for an edge with a finite timeout (Wait) in a loop, re-reads the level after
// every wake-up whatever woke it (edge or timeout), and debounces. A pin that
// refuses edge detection is polled every Wait instead. Subscribers receive an
// Event per debounced change (and one when reads start failing); delivery
// never blocks the watcher and the newest state always reaches a lagging
// subscriber. Close stops the watcher and waits for it.
//
// An Output drives "on" as High (Low with ActiveLow), waits Settle, and reads
// back — from the feedback pin (the relay's relay_fb contact, High =
// energised) when one is given, else from the output pin — failing with
// device.ErrReadback on a mismatch. Halt drives the configured safe state (the
// relay's is off: de-energised, Low) and confirms it the same way. NewOutput
// puts the output in its safe state at once.
//
// A Heartbeat toggles an output pin every period from a goroutine it owns
// (Start(ctx, period); Close stops it and waits). The pin feeds a relay
// watchdog — a cycle-monitoring "dead-man" relay such as the Beckhoff KL2692,
// or the simulator's (rig-sim --relay-watchdog) — in the interlock relay's
// coil circuit, which drops the relay when the toggling stops for its
// timeout: when the agent dies, hangs or loses the line, heater power and gas
// valve power go without anything from the furnace controller, many of which
// have no comms watchdog. Start writes Low then High before it returns, so
// the watchdog sees the heartbeat alive at once; failed writes go to
// HeartbeatOpts.OnError and the Logger, and the next beat retries the edge.
//
// # Pins over a link
//
// periph's PinIn.Read and PinOut.Out cannot report errors or take a context.
// Pins that can (simgpio's) implement ContextReader and ContextWriter, and the
// drivers use those when present, so a lost link surfaces as an error wrapping
// the device sentinels instead of a silent fail-safe level.
//
// # Caveats
//
// WaitForEdge's timeout semantics differ between periph drivers (0 and -1 swap
// meaning), so the watcher never passes either: its timeouts are finite and
// positive. Edges are only wake-up hints; the level read afterwards is what
// counts, so a pulse shorter than one wake-up and read may go unseen — as it
// would with any debouncer. Debounce and Settle are measured on the injected
// Clock; the watcher's Wait is real time.
package gpio
