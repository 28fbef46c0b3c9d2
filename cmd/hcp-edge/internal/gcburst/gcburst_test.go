package gcburst

import (
	"sync"
	"testing"
	"time"
)

// recorder is a SetGCPercent that records the targets set.
type recorder struct {
	mu  sync.Mutex
	got []int
}

func (r *recorder) set(v int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, v)
	return 0
}

func (r *recorder) targets() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.got...)
}

func TestSmallGroupsChangeNothing(t *testing.T) {
	r := &recorder{}
	g := New(Opts{Rest: 50, SetGCPercent: r.set, Quiet: 10 * time.Millisecond})
	for n := range DefaultMinBurst {
		g.Burst(n)
	}
	if got := r.targets(); len(got) != 0 {
		t.Fatalf("targets %v for groups below MinBurst", got)
	}
	if raised, _ := g.Raised(); raised {
		t.Fatal("raised")
	}
	if g.timer != nil {
		t.Fatal("a timer before any burst")
	}
}

func TestBurstRaisesOnceAndRestsAfterQuiet(t *testing.T) {
	r := &recorder{}
	quiet := 50 * time.Millisecond
	g := New(Opts{Rest: 50, Burst: 200, SetGCPercent: r.set, Quiet: quiet})
	var last time.Time
	for range 10 { // a flood of groups, each within Quiet of the last
		last = time.Now()
		g.Burst(128)
		time.Sleep(quiet / 5)
	}
	if got := r.targets(); len(got) != 1 || got[0] != 200 {
		t.Fatalf("targets %v during the burst, want [200]", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if raised, _ := g.Raised(); !raised {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("still raised 5 s after the burst")
		}
		time.Sleep(time.Millisecond)
	}
	if took := time.Since(last); took < quiet { // a lower bound: a slow machine only delays it
		t.Fatalf("rest target back %v after the last burst, before Quiet (%v)", took, quiet)
	}
	if got := r.targets(); len(got) != 2 || got[1] != 50 {
		t.Fatalf("targets %v, want [200 50]", got)
	}
	g.Burst(64) // a second burst raises again
	if _, bursts := g.Raised(); bursts != 2 {
		t.Fatalf("%d bursts", bursts)
	}
	g.Stop()
	if got := r.targets(); len(got) != 4 || got[3] != 50 {
		t.Fatalf("targets %v after Stop, want the rest target last", got)
	}
	g.Burst(128)
	if raised, _ := g.Raised(); raised {
		t.Fatal("raised after Stop")
	}
}

func TestNilGovernor(t *testing.T) {
	var g *Governor
	g.Burst(1000)
	g.Stop()
	if raised, n := g.Raised(); raised || n != 0 {
		t.Fatal("a nil governor raised")
	}
}
