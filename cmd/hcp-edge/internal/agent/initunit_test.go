package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"hcp-edge/device"
	"hcp-edge/drivers/regmap"
)

// missing is a controller whose first misses Inits find no answer
// (device.ErrTimeout), or fail with fail.
type missing struct {
	misses, calls int
	fail          error
}

func (m *missing) String() string { return "tc" }

func (m *missing) Init(context.Context) ([]regmap.InitWrite, error) {
	m.calls++
	if m.fail != nil {
		return nil, m.fail
	}
	if m.calls <= m.misses {
		return []regmap.InitWrite{{Channel: "heater_enable"}}, fmt.Errorf("tc: halt: %w", device.ErrTimeout)
	}
	return []regmap.InitWrite{{Channel: "auto_manual", Value: 0, NonVolatile: true}}, nil
}

// TestInitUnitAsksAgainOnTimeout: a controller that missed an answer at
// start is asked again (CI's TestExportThroughCLI under -race -count=5: the
// start-up halt timed out once and the daemon refused to start), up to
// initAttempts in all; any other error is final at once; every attempt's
// writes are returned for the audit.
func TestInitUnitAsksAgainOnTimeout(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name      string
		m         *missing
		wantCalls int
		wantErr   bool
		wantWrote int
	}{
		{"answers", &missing{}, 1, false, 1},
		{"misses once", &missing{misses: 1}, 2, false, 2},
		{"misses twice", &missing{misses: 2}, 3, false, 3},
		{"never answers", &missing{misses: 99}, initAttempts, true, initAttempts},
		{"refuses", &missing{fail: device.ErrReadback}, 1, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrote, err := initUnit(context.Background(), tc.m, log)
			if tc.m.calls != tc.wantCalls || (err != nil) != tc.wantErr || len(wrote) != tc.wantWrote {
				t.Fatalf("calls %d, err %v, wrote %d; want %d, error %v, %d", tc.m.calls, err, len(wrote), tc.wantCalls, tc.wantErr, tc.wantWrote)
			}
			if tc.wantErr && tc.m.fail == nil && !errors.Is(err, device.ErrTimeout) {
				t.Fatalf("err %v does not wrap device.ErrTimeout", err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := &missing{misses: 99}
	if _, err := initUnit(ctx, m, log); err == nil || m.calls != 1 {
		t.Fatalf("after its context ended: %d calls, %v", m.calls, err)
	}
}
