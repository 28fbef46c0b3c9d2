package device

import "time"

// UntilGrid returns how long from now until the next instant of the grid
// {k·every + offset : k an integer} of the Unix clock, in (0, every]; 0 when
// every ≤ 0.
//
// The agent's periodic reads share grids so that they wake it together: an
// idle agent pays per wake-up far more than per exchange (docs/FOOTPRINT.md,
// "Third round"). The trip monitor polls the furnace on (FurnaceEvery, 0)
// and every other instrument on (OtherEvery, FurnaceEvery/2), midway between
// two furnace polls; the GPIO watchers end their waits on (Wait, the same
// offset). A timer re-armed with UntilGrid after each read keeps to the grid
// whatever the read took, and skips the instants a slow read overran.
func UntilGrid(now time.Time, every, offset time.Duration) time.Duration {
	if every <= 0 {
		return 0
	}
	r := (time.Duration(now.UnixNano()%int64(every)) - offset%every) % every
	if r < 0 {
		r += every
	}
	return every - r
}
