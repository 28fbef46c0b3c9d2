package clocksync

import (
	"sync"
	"time"
)

// HoldReason is the reason_message of a task_rejected while new sessions
// are held (reason_code resource_unavailable).
const HoldReason = "clock not synchronised"

// State is the kernel's clock-synchronisation state.
type State struct {
	// Known is false when the kernel could not be asked (not Linux, or
	// adjtimex failed: Err says why).
	Known bool `json:"known"`
	// Synced: the kernel reports the clock synchronised (adjtimex did not
	// return TIME_ERROR and STA_UNSYNC is clear).
	Synced bool `json:"synced"`
	// MaxError and EstError are the kernel's maximum and estimated error.
	MaxError time.Duration `json:"max_error_ns"`
	EstError time.Duration `json:"est_error_ns"`
	// Err is why the state is not known.
	Err string `json:"error,omitempty"`
}

// String is "synchronised", "not synchronised" or "unknown (why)".
func (s State) String() string {
	switch {
	case !s.Known:
		return "unknown (" + s.Err + ")"
	case s.Synced:
		return "synchronised"
	}
	return "not synchronised"
}

// Probe reads the clock-synchronisation state; Read is the kernel's.
type Probe func() State

// Hold decides whether new sessions are held while the clock is not
// synchronised. It is safe for concurrent use.
type Hold struct {
	probe   Probe
	enabled bool

	mu       sync.Mutex
	last     State
	released bool // the clock was seen synchronised once
}

// NewHold returns a Hold asking probe (Read if nil); enabled false never
// holds but still reports the state.
func NewHold(probe Probe, enabled bool) *Hold {
	if probe == nil {
		probe = Read
	}
	h := &Hold{probe: probe, enabled: enabled}
	h.Check()
	return h
}

// Check asks the probe and returns the state, holding or not.
func (h *Hold) Check() Report {
	st := h.probe()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = st
	if st.Known && st.Synced {
		h.released = true
	}
	return h.reportLocked()
}

// Reason is "" when new sessions may start, else HoldReason. It asks the
// probe (one system call) each time until the clock has been seen
// synchronised.
func (h *Hold) Reason() string {
	h.mu.Lock()
	done := h.released || !h.enabled
	h.mu.Unlock()
	if done {
		return ""
	}
	if h.Check().Holding {
		return HoldReason
	}
	return ""
}

// Report is the state for `status`.
type Report struct {
	State
	// Holding: new sessions are refused until the clock is synchronised.
	Holding bool `json:"holding"`
	// HoldEnabled is agent.hold_until_clock_synced.
	HoldEnabled bool `json:"hold_enabled"`
	// SyncedOnce: the clock was seen synchronised since the agent started.
	SyncedOnce bool `json:"synced_once"`
}

func (h *Hold) reportLocked() Report {
	return Report{State: h.last, HoldEnabled: h.enabled, SyncedOnce: h.released,
		Holding: h.enabled && !h.released}
}
