package alicat_test

import (
	"context"
	"errors"
	"testing"

	"hcp-edge/device"
)

// TestRealFrameShapes: what real controllers send (testdata/corpus.txt) is a
// reading, never a frame error: runs of spaces (the padded gas column),
// unsigned numbers (before 6v), a totalizer column, and status codes the
// profile names or not. This replaces the "double space" and "unknown
// flag" cases TestErrorReplies had pinned as frame errors.
func TestRealFrameShapes(t *testing.T) {
	tests := []struct {
		name   string
		reply  string
		flow   float64
		readOK error // ReadFlow's error
	}{
		{"double space", "C +014.70  +025.00 +010.00 +010.00 +010.00 H2S", 10, nil},
		{"padded gas", "C +014.62 +021.89 +010.00 +010.00 +010.00    H2S", 10, nil},
		{"unsigned", "C +014.52 +021.50 +0010.0 +0010.0 0010.00      H2S", 10, nil},
		{"totalizer", "C +014.62 +021.89 +010.00 +010.00 +010.00 +0001234.5     H2S", 10, nil},
		{"P2O COM GTA", "C +014.62 +021.89 +010.00 +010.00 +010.00     H2S P2O COM GTA", 10, nil},
		{"ADC", "C +014.62 +021.89 +010.00 +010.00 +010.00     H2S ADC", 0, device.ErrSensor},
		{"a code the profile does not name", "C +014.70 +025.00 +010.00 +010.00 +010.00 H2S XYZ", 0, device.ErrSensor},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, f, _ := setup(t)
			f.set(func(f *fakeMFC) {
				f.override = func(string) (string, bool) { return tc.reply, true }
			})
			ctx := context.Background()
			if err := m.SetFlow(ctx, device.SCCM(10)); err != nil {
				t.Fatalf("SetFlow: %v", err)
			}
			st, err := m.ReadFlow(ctx)
			if !errors.Is(err, tc.readOK) || (tc.readOK == nil) != (err == nil) {
				t.Fatalf("ReadFlow err = %v, want %v", err, tc.readOK)
			}
			if err == nil && st.Flow != device.SCCM(tc.flow) {
				t.Fatalf("flow %v, want %v sccm", st.Flow, tc.flow)
			}
		})
	}
}
