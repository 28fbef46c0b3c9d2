// Package rawkey holds the key of the interlock's unpiped entry point,
// envelope.Interlock.ApplyKeyed.
//
// It is internal to envelope/: only envelope and its own subpackages (the
// property and HIL test packages) can import it, so nothing in session/,
// cmd/ or drivers/ can name a Key and call ApplyKeyed. Every production
// action goes through envelope.Invoker, the tool pipeline.
package rawkey

// Key is the proof that the caller lives inside envelope/. It has no value
// beyond its type.
type Key struct{ _ [0]func() }
