package executor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"hcp-edge/envelope"
)

// Fresh reports, as an error wrapping ErrStale and naming it, the first
// instrument of rd (the furnace and each other heated zone, the gauge, each flow controller, each
// switch read-back, each input) without a reading within maxAge of the
// snapshot; nil when every one is fresh.
func Fresh(rd envelope.Readings, maxAge time.Duration) error {
	old := func(name string, at time.Time) error {
		if at.IsZero() {
			return &ReadingError{Reading: name, Reason: "never read"}
		}
		if age := rd.At.Sub(at); age > maxAge {
			return &ReadingError{Reading: name, Reason: fmt.Sprintf("stale: read %v ago (limit %v)", age.Round(time.Millisecond), maxAge)}
		}
		return nil
	}
	errs := []error{old("furnace", rd.Furnace.At), old("gauge", rd.Pressure.At)}
	var zerr error // the heated zones after the first: the stale one first by name
	zname := ""
	for z, st := range rd.Zones {
		if err := old("zone "+z, st.At); err != nil && (zerr == nil || z < zname) {
			zerr, zname = err, z
		}
	}
	errs = append(errs, zerr)
	for _, g := range slices.Sorted(maps.Keys(rd.Flows)) {
		errs = append(errs, old("flow "+g, rd.Flows[g].At))
	}
	for _, n := range slices.Sorted(maps.Keys(rd.Switches)) {
		errs = append(errs, old("switch "+n, rd.Switches[n].At))
	}
	for _, n := range slices.Sorted(maps.Keys(rd.Inputs)) {
		errs = append(errs, old("input "+n, rd.Inputs[n].At))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// AwaitFresh reads the rig until every instrument has a reading within
// maxAge (Fresh), for at most bound, and returns the last snapshot with
// Fresh's verdict on it: late is not stale, but a reading that stays old
// past the bound is. The engine asks it before it resumes a physical
// session after a restart.
func AwaitFresh(ctx context.Context, rig Rig, maxAge, bound time.Duration) (envelope.Readings, error) {
	deadline := time.Now().Add(bound)
	for {
		rd := rig.Readings(ctx)
		err := Fresh(rd, maxAge)
		if err == nil || !time.Now().Before(deadline) {
			return rd, err
		}
		select {
		case <-ctx.Done():
			return rd, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}
