package executor

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"hcp-edge/session/analysis"
	"hcp-edge/session/plot"
)

// bandReading is one band an analysis read on its own (analysis.Result.Bands),
// as its JSON names it: a key whose value holds a position.
type bandReading struct {
	Name        string  `json:"-"`
	Position    float64 `json:"position_cm1"`
	PositionErr float64 `json:"position_err_cm1"`
	FWHM        float64 `json:"fwhm_cm1"`
	Height      float64 `json:"height"`
}

// readBandsOut is what the Raman plot shows of a reading that is not two
// fitted peaks: the bands found, the other figures (ratios, classes,
// confidences) by name, and the layer class in words.
type readBandsOut struct {
	bands   []bandReading
	figures map[string]any
	layers  string
}

// readBands reads a.Bands() without naming the material: the analysis
// describes its bands in its JSON (session/analysis owns the names), and
// the plot draws every band it found, in shift order, named by its key in
// capitals ("g" → G, "2d" → 2D). A band whose "<key>_found" is false was
// not found and is not drawn. Empty for a two-peak analysis.
func readBands(a analysis.Result) readBandsOut {
	var out readBandsOut
	b := a.Bands()
	if b == nil || !a.Found {
		return out
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return out
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return out
	}
	out.figures = map[string]any{}
	for k, v := range m {
		var br struct {
			bandReading
			Pos *float64 `json:"position_cm1"`
		}
		if len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &br) == nil && br.Pos != nil {
			br.Position, br.Name = *br.Pos, strings.ToUpper(k)
			out.bands = append(out.bands, br.bandReading)
			continue
		}
		var x any
		if json.Unmarshal(v, &x) == nil {
			out.figures[k] = x
		}
	}
	kept := out.bands[:0]
	for _, br := range out.bands {
		found, ok := out.figures[strings.ToLower(br.Name)+"_found"].(bool)
		if !(ok && !found) && br.Height > 0 && br.Position > 0 {
			kept = append(kept, br)
		}
	}
	out.bands = kept
	// sort.Slice, not slices.SortFunc: a new generic sort shape links ~8 kB
	// into the armv7 binary (docs/FOOTPRINT.md, fifth round).
	sort.Slice(out.bands, func(i, j int) bool { return out.bands[i].Position < out.bands[j].Position })
	out.layers, _ = out.figures["layers"].(string)
	return out
}

// series draws each band as read: a Lorentzian of its height and width on
// a flat local baseline, the spectrum's median 3 to 5 widths either side
// of the band (the analysis reads each band on a baseline of its own,
// which it does not report).
func (rb readBandsOut) series(xs, ys []float64) []plot.Series {
	colors := []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"}
	var out []plot.Series
	for i, b := range rb.bands {
		var flank []float64
		for k, x := range xs {
			if d := math.Abs(x - b.Position); d >= 3*b.FWHM && d <= 5*b.FWHM {
				flank = append(flank, ys[k])
			}
		}
		if len(flank) == 0 || !(b.FWHM > 0) {
			continue
		}
		//lint:ignore S1032 sort.Float64s is slices.Sort since Go 1.22: the float64 instantiation of the generic sort this avoids (docs/FOOTPRINT.md, ninth round)
		sort.Sort(sort.Float64Slice(flank))
		base := flank[len(flank)/2]
		hw := b.FWHM / 2
		var bx, by []float64
		for x := b.Position - 4*b.FWHM; x <= b.Position+4*b.FWHM; x += b.FWHM / 20 {
			u := (x - b.Position) / hw
			bx, by = append(bx, x), append(by, base+b.Height/(1+u*u))
		}
		out = append(out, plot.Series{Name: fmt.Sprintf("%s %.1f cm⁻¹ (FWHM %.1f)", b.Name, b.Position, b.FWHM), X: bx, Y: by,
			Color: colors[i%len(colors)], Dashed: true})
	}
	return out
}

// notes are the plot's lines of the bands read and the analysis's other
// figures (a ratio "2d_over_g" printed 2D/G, with its "_err" as ±).
func (rb readBandsOut) notes(a analysis.Result) []string {
	var bands []string
	for _, b := range rb.bands {
		bands = append(bands, fmt.Sprintf("%s %.1f ± %.1f cm⁻¹ (FWHM %.1f)", b.Name, b.Position, b.PositionErr, b.FWHM))
	}
	var figs []string
	for _, k := range slices.Sorted(maps.Keys(rb.figures)) {
		if strings.HasSuffix(k, "_err") || strings.HasSuffix(k, "_found") {
			continue
		}
		name := k
		if x, y, ok := strings.Cut(k, "_over_"); ok {
			name = strings.ToUpper(x) + "/" + strings.ToUpper(y)
		}
		name = strings.ReplaceAll(name, "_", " ")
		switch v := rb.figures[k].(type) {
		case float64:
			s := fmt.Sprintf("%s %.3g", name, v)
			if e, ok := rb.figures[k+"_err"].(float64); ok {
				s += fmt.Sprintf(" ± %.2g", e)
			}
			figs = append(figs, s)
		case string:
			figs = append(figs, name+" "+v)
		}
	}
	out := []string{"bands read: " + strings.Join(bands, ", ")}
	if len(figs) > 0 {
		out = append(out, strings.Join(figs, "; "))
	}
	return append(out, fmt.Sprintf("R² %.3f, SNR %.0f; dashed: each band as read, on its local baseline", a.RSquared, a.SNR))
}
