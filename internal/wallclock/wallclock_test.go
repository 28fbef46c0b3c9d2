package wallclock

import (
	"strings"
	"sync"
	"testing"
	"time"
)

type fake struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fake) Now() time.Time          { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fake) Advance(d time.Duration) { f.mu.Lock(); f.now = f.now.Add(d); f.mu.Unlock() }

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// TestStep: a step moves Now and nothing else; Steps reports it.
func TestStep(t *testing.T) {
	f := &fake{now: t0}
	c := NewFrom(f.Now)
	f.Advance(time.Minute)
	c.Step(6 * time.Hour)
	if got := c.Now(); !got.Equal(t0.Add(6*time.Hour + time.Minute)) {
		t.Fatalf("Now after +6h = %v", got)
	}
	if c.Elapsed() != time.Minute || !c.Mono().Equal(t0.Add(time.Minute)) {
		t.Fatalf("Elapsed %v, Mono %v: the step moved the monotonic clock", c.Elapsed(), c.Mono())
	}
	c.Step(-12 * time.Hour)
	back, fwd := c.Steps()
	if back != -6*time.Hour || fwd != 6*time.Hour {
		t.Fatalf("Steps = %v, %v", back, fwd)
	}
}

// TestMinAge: a stamp read before a forward step does not age by the step;
// a backward step makes it younger; a stamp of an earlier process is aged
// by the wall clock at start plus the monotonic time since.
func TestMinAge(t *testing.T) {
	tests := []struct {
		name  string
		steps []time.Duration // between the stamp and the judgement, 1 min apart
		want  time.Duration
	}{
		{"no step", nil, time.Minute},
		{"forward 6h", []time.Duration{6 * time.Hour}, 2 * time.Minute},
		{"back 6h", []time.Duration{-6 * time.Hour}, 2*time.Minute - 6*time.Hour},
		{"forward then back", []time.Duration{6 * time.Hour, -12 * time.Hour}, 3*time.Minute - 6*time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{now: t0}
			c := NewFrom(f.Now)
			stamp := c.Now()
			for _, s := range tt.steps {
				f.Advance(time.Minute)
				c.Step(s)
			}
			f.Advance(time.Minute)
			if got := c.MinAge(stamp); got != tt.want {
				t.Fatalf("MinAge = %v, want %v", got, tt.want)
			}
			if got := c.Floor().Sub(stamp); got != tt.want {
				t.Fatalf("Floor − stamp = %v, want %v", got, tt.want)
			}
		})
	}
	f := &fake{now: t0}
	c := NewFrom(f.Now)
	end := c.Now().Add(2 * time.Hour) // a permission's end
	f.Advance(time.Hour)
	c.Step(-6 * time.Hour)
	if got := c.MaxAge(end); got != -time.Hour {
		t.Fatalf("a step back kept a permission open: MaxAge(end) = %v, want −1h", got)
	}
	if got := c.Ceil().Sub(end); got != -time.Hour {
		t.Fatalf("Ceil − end = %v, want −1h", got)
	}
	c.Step(12 * time.Hour)
	if got := c.MaxAge(end); got != 5*time.Hour {
		t.Fatalf("after a step forward: MaxAge(end) = %v, want 5h", got)
	}
	f = &fake{now: t0}
	c = NewFrom(f.Now)
	f.Advance(time.Hour)
	c.Step(6 * time.Hour)
	if got := c.MinAge(t0.Add(-24 * time.Hour)); got != 25*time.Hour {
		t.Fatalf("earlier process's stamp: MinAge = %v, want 25h", got)
	}
	// A deadline set after a forward step lies ahead by the step too on
	// the monotonic side: the lower bound keeps it (the safe side).
	if got := c.MinAge(c.Now().Add(time.Minute)); got != -6*time.Hour-time.Minute {
		t.Fatalf("a deadline a minute ahead, set after the step: MinAge = %v", got)
	}
	if got := NewFrom(f.Now).MinAge(f.Now().Add(time.Minute)); got != -time.Minute {
		t.Fatalf("a deadline a minute ahead: MinAge = %v", got)
	}
}

// TestRealClock: with time.Now, Now carries a monotonic reading until a
// step is set, and none while one is.
func TestRealClock(t *testing.T) {
	c := New()
	if !strings.Contains(c.Now().String(), "m=") {
		t.Fatal("Now lost the monotonic reading with no step set")
	}
	c.Step(time.Hour)
	if strings.Contains(c.Now().String(), "m=") || !strings.Contains(c.Mono().String(), "m=") {
		t.Fatalf("stepped: Now %v, Mono %v", c.Now(), c.Mono())
	}
	if d := time.Until(c.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("Now is %v from time.Now after a step of 1h", d)
	}
	if a := c.MinAge(time.Now()); a > time.Second {
		t.Fatalf("a stamp of now is %v old after a forward step", a)
	}
}
