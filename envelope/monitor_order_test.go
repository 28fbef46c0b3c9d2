package envelope

import (
	"testing"
	"time"
)

// TestMonitorCacheKeepsTheNewerReading: a reset's fresh snapshot enters the
// monitor's cache, and a poller's read that began before it but finished
// later (a leak input still active then) cannot overwrite it — the evaluator
// would re-trip on a condition the reset saw cleared.
func TestMonitorCacheKeepsTheNewerReading(t *testing.T) {
	m := &Monitor{r: Readings{Inputs: map[string]Level{}, Switches: map[string]Level{}}}
	t0 := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	m.r.Inputs["leak_detected"] = Level{On: true, At: t0}

	// The reset's snapshot, read at t0+1s: the leak is gone.
	m.merge(Readings{Inputs: map[string]Level{"leak_detected": {On: false, At: t0.Add(time.Second)}}})
	if got := m.r.Inputs["leak_detected"]; got.On || !got.At.Equal(t0.Add(time.Second)) {
		t.Fatalf("after the reset's snapshot: %+v", got)
	}
	// The poller's read that began at t0+0.5s lands now.
	m.r.Inputs["leak_detected"] = newerLevel(m.r.Inputs["leak_detected"], Level{On: true, At: t0.Add(500 * time.Millisecond)})
	if got := m.r.Inputs["leak_detected"]; got.On {
		t.Fatalf("an older read overwrote the newer one: %+v", got)
	}
	// A read that began later wins, whatever it says.
	m.r.Inputs["leak_detected"] = newerLevel(m.r.Inputs["leak_detected"], Level{On: true, At: t0.Add(2 * time.Second)})
	if got := m.r.Inputs["leak_detected"]; !got.On {
		t.Fatalf("a newer read was dropped: %+v", got)
	}
	// An older snapshot changes nothing.
	m.merge(Readings{Inputs: map[string]Level{"leak_detected": {On: false, At: t0}}})
	if got := m.r.Inputs["leak_detected"]; !got.On {
		t.Fatalf("an older snapshot overwrote the cache: %+v", got)
	}
}
