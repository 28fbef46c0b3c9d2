package device

import (
	"testing"
	"time"
)

func TestUntilGrid(t *testing.T) {
	base := time.Unix(1_700_000_000, 0) // a multiple of every period below
	ms := time.Millisecond
	for _, c := range []struct {
		at            time.Duration // after base
		every, offset time.Duration
		want          time.Duration
	}{
		{0, 50 * ms, 0, 50 * ms},        // on the grid: the next instant
		{1 * ms, 50 * ms, 0, 49 * ms},   //
		{49 * ms, 50 * ms, 0, 1 * ms},   //
		{0, 100 * ms, 25 * ms, 25 * ms}, // offset
		{25 * ms, 100 * ms, 25 * ms, 100 * ms},
		{30 * ms, 100 * ms, 25 * ms, 95 * ms},
		{0, 100 * ms, 125 * ms, 25 * ms}, // an offset past every wraps
		{0, 100 * ms, -75 * ms, 25 * ms}, // and a negative one
		{10 * ms, 0, 0, 0},               // no period
	} {
		if got := UntilGrid(base.Add(c.at), c.every, c.offset); got != c.want {
			t.Errorf("UntilGrid(base+%v, %v, %v) = %v, want %v", c.at, c.every, c.offset, got, c.want)
		}
	}
	// Two callers at different moments land on the same instant.
	a, b := base.Add(3*ms), base.Add(71*ms)
	if x, y := a.Add(UntilGrid(a, 100*ms, 25*ms)), b.Add(UntilGrid(b, 100*ms, 25*ms)); !x.Equal(y) && x.Add(100*ms) != y {
		t.Errorf("grid instants %v and %v are not on one grid", x, y)
	}
}
