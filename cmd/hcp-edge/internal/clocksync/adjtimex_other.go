//go:build !linux

package clocksync

// Read reports the state unknown: adjtimex is Linux's.
func Read() State { return State{Err: "adjtimex is Linux only"} }
