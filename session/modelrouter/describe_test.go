package modelrouter

import (
	"encoding/json"
	"testing"

	"hcp-edge/session/analysis"
)

// TestDescribeFitsContext: the description shrinks its spectrum to the
// model's context window and keeps the peaks.
func TestDescribeFitsContext(t *testing.T) {
	x, y := make([]float64, 801), make([]float64, 801)
	for i := range x {
		x[i], y[i] = 150+0.5*float64(i), 1000+float64(i%7)
	}
	in := &input{req: &Request{Material: analysis.MoS2}, x: x, y: y,
		t1: analysis.Result{Found: true, Material: analysis.MoS2, LayerCount: 2, E2g: analysis.Peak{Position: 383.8, PositionErr: 0.02}, A1g: analysis.Peak{Position: 405.3}}}
	for _, c := range []struct {
		window    int
		maxPoints int
		every     int
	}{
		{32768, 181, 1}, // the whole window (350–440 cm⁻¹)
		{1500, 100, 2},
		{600, 16, 12}, // never fewer than 16 points
	} {
		s, tokens := describe(in, c.window)
		var d Description
		if err := json.Unmarshal([]byte(s), &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Spectrum) > c.maxPoints || d.Every < c.every || d.Peaks == nil || d.Peaks.E2g[0] != 383.8 {
			t.Fatalf("window %d: %d points, every %d, peaks %+v", c.window, len(d.Spectrum), d.Every, d.Peaks)
		}
		if c.window >= 1500 && tokens > c.window {
			t.Fatalf("window %d: the prompt takes %d tokens", c.window, tokens)
		}
	}
}
