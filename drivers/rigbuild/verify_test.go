package rigbuild

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"hcp-edge/device"
)

// flaky is a unit that misses its first misses answers (device.ErrTimeout)
// and then answers.
type flaky struct {
	misses, asked int
	err           error
}

func (f *flaky) Verify(context.Context) ([]device.Finding, error) {
	f.asked++
	if f.asked <= f.misses {
		return nil, fmt.Errorf("serialline x: write: %w", device.ErrTimeout)
	}
	if f.err != nil {
		return nil, f.err
	}
	return []device.Finding{{Instrument: "x", Setting: "s", Found: "v", OK: true}}, nil
}

func (f *flaky) String() string { return "x" }

// TestVerifyAsksAgainOnTimeout: a unit that missed an answer is asked
// again (its whole Verify) up to three times; one that never answers, or
// fails otherwise, is an error after as many (or one) attempts.
func TestVerifyAsksAgainOnTimeout(t *testing.T) {
	for _, tc := range []struct {
		name         string
		f            *flaky
		wantErr      bool
		wantAsked    int
		wantFindings int
	}{
		{"answers", &flaky{}, false, 1, 1},
		{"misses once", &flaky{misses: 1}, false, 2, 1},
		{"misses twice", &flaky{misses: 2}, false, 3, 1},
		{"never answers", &flaky{misses: 10}, true, 3, 0},
		{"another error: no repeat", &flaky{err: errors.New("parse")}, true, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := verifyAll(context.Background(), []device.Verifier{tc.f}, time.Second)
			if (err != nil) != tc.wantErr || tc.f.asked != tc.wantAsked || len(fs) != tc.wantFindings {
				t.Fatalf("err %v, asked %d times, %d findings; want error %v, %d times, %d findings", err, tc.f.asked, len(fs), tc.wantErr, tc.wantAsked, tc.wantFindings)
			}
			if tc.wantErr && tc.f.misses > 0 && !errors.Is(err, device.ErrTimeout) {
				t.Fatalf("err %v does not wrap device.ErrTimeout", err)
			}
		})
	}
}
