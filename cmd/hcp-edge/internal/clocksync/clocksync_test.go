package clocksync

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestRead: the kernel answers on Linux (synchronised or not: a CI machine
// often is not).
func TestRead(t *testing.T) {
	st := Read()
	if runtime.GOOS == "linux" && !st.Known {
		t.Fatalf("adjtimex: %s", st.Err)
	}
	t.Logf("this machine's clock: %v (max error %v)", st, st.MaxError)
}

// TestHold: enabled, new sessions are held until the clock is seen
// synchronised, then released for good; disabled, never held; a state
// that cannot be read holds (fail closed).
func TestHold(t *testing.T) {
	var synced atomic.Bool
	probe := func() State { return State{Known: true, Synced: synced.Load()} }
	tests := []struct {
		name    string
		probe   Probe
		enabled bool
		want    string
	}{
		{"enabled, unsynchronised", probe, true, HoldReason},
		{"disabled, unsynchronised", probe, false, ""},
		{"enabled, unknown", func() State { return State{Err: "no adjtimex"} }, true, HoldReason},
		{"disabled, unknown", func() State { return State{Err: "no adjtimex"} }, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHold(tt.probe, tt.enabled)
			if got := h.Reason(); got != tt.want {
				t.Fatalf("Reason = %q, want %q", got, tt.want)
			}
			if r := h.Check(); r.Holding != (tt.want != "") || r.HoldEnabled != tt.enabled {
				t.Fatalf("report %+v", r)
			}
		})
	}
	h := NewHold(probe, true)
	synced.Store(true)
	if got := h.Reason(); got != "" {
		t.Fatalf("synchronised: Reason = %q", got)
	}
	synced.Store(false) // NTP lost later: the clock was set once, stays released
	if got, r := h.Reason(), h.Check(); got != "" || r.Holding || !r.SyncedOnce || r.Synced {
		t.Fatalf("after losing sync: Reason = %q, report %+v", got, r)
	}
}
