package executor

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/rig"
	"hcp-edge/envelope"
	"hcp-edge/session/analysis"
	"hcp-edge/session/plot"
)

// The plot artifacts (plain SVG, session/plot).
const (
	svgType          = "image/svg+xml"
	ramanSVGFile     = "raman_spectrum.svg"
	profileSVGFile   = "process_profile.svg"
	profilePartial   = "process_profile_partial.svg"
	leakSVGFile      = "leak_check.svg"
	ramanSVGName     = "raman_plot"
	profileSVGName   = "process_profile_plot"
	profilePartialNm = "partial_process_profile_plot"
	leakSVGName      = "leak_check_plot"
)

// LayerVerdict is the one-line verdict of a Raman analysis that the Raman
// plot prints: found or not, the layer count (or bulk), the distance.
//
// The material is the analysis's (Result.Material), analysis.Unnamed when it
// names none.
func LayerVerdict(a analysis.Result) string { return layerVerdict(a, "") }

// layerVerdict is LayerVerdict naming expected (the analyse phase's
// material) when the analysis names none; a layer class the analysis names
// in words (a few-layer film) is printed as it names it.
func layerVerdict(a analysis.Result, expected string) string {
	m := materialName(a, expected)
	switch {
	case !a.Found:
		return "no " + m + " found: " + a.Reason
	case a.LayerCount == 0:
		return fmt.Sprintf("layer count unknown: distance %.2f cm⁻¹ outside every band", a.Distance)
	case a.Bulk:
		return fmt.Sprintf("bulk %s (4 or more layers), confidence %.2f", m, a.Confidence)
	case a.LayerCount == 1:
		return fmt.Sprintf("monolayer %s (1 layer), confidence %.2f", m, a.Confidence)
	}
	if c := readBands(a).layers; c != "" && c != strconv.Itoa(a.LayerCount) {
		return fmt.Sprintf("%s-layer %s (%d or more layers), confidence %.2f", c, m, a.LayerCount, a.Confidence)
	}
	return fmt.Sprintf("%d-layer %s (%d layers), confidence %.2f", a.LayerCount, m, a.LayerCount, a.Confidence)
}

// materialName is the analysis's material, else expected, else what an
// analysis that names none was made as (analysis.Unnamed).
func materialName(a analysis.Result, expected string) string {
	switch {
	case a.Material != "":
		return string(a.Material)
	case expected != "" && expected != string(analysis.Auto):
		return expected
	}
	return string(analysis.Unnamed)
}

// ramanWindow is the shift range the Raman plot shows: the analysis window
// of the material (the analysis's, else the phase's), 30 cm⁻¹ wider each
// side; the whole spectrum when that window holds too few of its points (a
// material whose window the analysis does not know).
func ramanWindow(sp device.Spectrum, a analysis.Result, expected string) (lo, hi float64) {
	lo, hi = analysis.WindowLo, analysis.WindowHi
	m := a.Material
	if m == "" {
		m, _ = analysis.ParseMaterial(expected)
	}
	if m != "" && m != analysis.Auto {
		if l, h, ok := analysis.WindowFor(m); ok {
			lo, hi = l, h
		}
	}
	n, all := 0, [2]float64{math.Inf(1), math.Inf(-1)}
	for _, x := range sp.Shift[:min(len(sp.Shift), len(sp.Counts))] {
		if x >= lo-30 && x <= hi+30 {
			n++
		}
		if device.Finite(x) {
			all[0], all[1] = math.Min(all[0], x), math.Max(all[1], x)
		}
	}
	if n < 10 && all[1] > all[0] {
		return all[0] + 30, all[1] - 30
	}
	return lo, hi
}

// ramanSVG draws the spectrum and what the analysis read from it, with the
// verdict. A two-peak analysis draws its fitted model and both peaks with
// their distance; an analysis that reads its own bands (Result.Bands: a
// carbon film's D, G and 2D) draws each band it found as read, on its local
// baseline, named as the analysis names it. expected is the analyse phase's
// material ("" outside a recipe).
func ramanSVG(sp device.Spectrum, a analysis.Result, expected string) []byte {
	lo, hi := ramanWindow(sp, a, expected)
	var xs, ys []float64
	for i := range min(len(sp.Shift), len(sp.Counts)) {
		if x := sp.Shift[i]; x >= lo-30 && x <= hi+30 {
			xs, ys = append(xs, x), append(ys, sp.Counts[i])
		}
	}
	xs, ys = sortPairs(xs, ys)
	p := plot.Panel{YLabel: "intensity (counts)", Height: 320,
		Series: []plot.Series{{Name: "spectrum", X: xs, Y: ys, Color: "#7f7f7f", Markers: true, NoLine: true}}}
	notes := []string{"verdict: " + layerVerdict(a, expected)}
	title := "Raman spectrum and fitted " + materialName(a, expected) + " peaks"
	if rb := readBands(a); len(rb.bands) > 0 {
		title = "Raman spectrum and the " + materialName(a, expected) + " bands read"
		p.Series = append(p.Series, rb.series(xs, ys)...)
		notes = append(notes, rb.notes(a)...)
	} else if a.Found {
		var fx, fy, ex, ey, ax, ay []float64
		for x := lo; x <= hi; x += 0.25 {
			base := a.Baseline.At(x)
			fx, fy = append(fx, x), append(fy, a.Model(x))
			ex, ey = append(ex, x), append(ey, base+a.E2g.At(x))
			ax, ay = append(ax, x), append(ay, base+a.A1g.At(x))
		}
		p.Series = append(p.Series,
			plot.Series{Name: "fit (baseline + 2 Lorentzians)", X: fx, Y: fy, Color: "#000000"},
			plot.Series{Name: fmt.Sprintf("E2g %.2f cm⁻¹", a.E2g.Position), X: ex, Y: ey, Color: "#1f77b4", Dashed: true},
			plot.Series{Name: fmt.Sprintf("A1g %.2f cm⁻¹", a.A1g.Position), X: ax, Y: ay, Color: "#d62728", Dashed: true})
		top := math.Max(a.Model(a.E2g.Position), a.Model(a.A1g.Position))
		p.Segments = []plot.Segment{{Name: fmt.Sprintf("distance %.2f ± %.2f cm⁻¹", a.Distance, a.DistanceErr),
			X0: a.E2g.Position, Y0: top * 1.04, X1: a.A1g.Position, Y1: top * 1.04, Color: "#2ca02c"}}
		notes = append(notes,
			fmt.Sprintf("E2g %.2f ± %.2f cm⁻¹ (FWHM %.1f), A1g %.2f ± %.2f cm⁻¹ (FWHM %.1f)",
				a.E2g.Position, a.E2g.PositionErr, a.E2g.FWHM, a.A1g.Position, a.A1g.PositionErr, a.A1g.FWHM),
			fmt.Sprintf("A1g − E2g distance %.2f ± %.2f cm⁻¹; R² %.3f, SNR %.0f (Lee et al. 2010 layer bands)",
				a.Distance, a.DistanceErr, a.RSquared, a.SNR))
	}
	f := plot.Figure{Title: title, Notes: notes, XLabel: "Raman shift (cm⁻¹)",
		Panels: []plot.Panel{p}}
	if !sp.At.IsZero() {
		f.Notes = append(f.Notes, fmt.Sprintf("acquired %s, integration %v", sp.At.UTC().Format(time.RFC3339), sp.Integration))
	}
	return f.SVG()
}

func sortPairs(x, y []float64) ([]float64, []float64) {
	idx := make([]int, min(len(x), len(y)))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b int) int {
			switch {
			case x[a] < x[b]:
				return -1
			case x[a] > x[b]:
				return 1
			}
			return 0
		}(idx[i], idx[j]) < 0
	})
	xs, ys := make([]float64, len(idx)), make([]float64, len(idx))
	for k, i := range idx {
		xs[k], ys[k] = x[i], y[i]
	}
	return xs, ys
}

// stepSpans turns the rows' stages into shaded spans, one per run of rows
// with the same stage.
func stepSpans(rows []LogRow, toX func(float64) float64) []plot.Span {
	var out []plot.Span
	for i, r := range rows {
		if i > 0 && rows[i-1].Stage == r.Stage {
			out[len(out)-1].X1 = toX(r.Elapsed)
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].X1 = toX(r.Elapsed)
		}
		out = append(out, plot.Span{X0: toX(r.Elapsed), X1: toX(r.Elapsed), Label: r.Stage})
	}
	return out
}

// limitOf is a channel's max from the envelope in unit conv converts it to.
func limitOf(env *envelope.Envelope, ch string, conv func(v float64, unit string) (float64, error)) (float64, bool) {
	if env == nil {
		return 0, false
	}
	p, ok := env.Config().Parameters[ch]
	if !ok || p.Max == nil {
		return 0, false
	}
	v, err := conv(*p.Max, p.Unit)
	return v, err == nil && device.Finite(v)
}

func celsiusOf(v float64, unit string) (float64, error) {
	t, err := device.TemperatureIn(v, unit)
	return t.Celsius(), err
}

func mbarOf(v float64, unit string) (float64, error) {
	p, err := device.PressureIn(v, unit)
	return p.Millibar(), err
}

func sccmOf(v float64, unit string) (float64, error) {
	f, err := device.FlowIn(v, unit)
	return f.SCCM(), err
}

// profileSVG draws a run's process profile from its growth-log rows:
// furnace temperature and setpoint (every zone's on a rig of several),
// chamber pressure, each gas that flowed,
// with the envelope's limits and the recipe's steps shaded.
func profileSVG(title string, rows []LogRow, env *envelope.Envelope) []byte {
	toMin := func(s float64) float64 { return s / 60 }
	var t, pt, pr []float64
	gases := map[string]*plot.Series{}
	var order []string
	for _, r := range rows {
		x := toMin(r.Elapsed)
		t = append(t, x)
		if r.PressurePa != nil {
			pt, pr = append(pt, x), append(pr, *r.PressurePa/100)
		}
		for g, v := range r.Flows {
			s, ok := gases[g]
			if !ok {
				s = &plot.Series{Name: "flow " + g}
				gases[g] = s
				order = append(order, g)
			}
			s.X, s.Y = append(s.X, x), append(s.Y, v)
		}
	}
	temp := plot.Panel{YLabel: "temperature (°C)"}
	// A temperature and a setpoint trace and the limits of each zone: on a
	// rig of one, the log's own columns and the furnace's channels.
	zs := logZones(env)
	if zs == nil {
		zs = []string{""}
	}
	for i, z := range zs {
		pv, sp := make([]float64, len(rows)), make([]float64, len(rows))
		for j, r := range rows {
			zl := ZoneLog{r.TemperatureC, r.SetpointC}
			if z != "" {
				zl = r.Zones[z]
			}
			pv[j], sp[j] = deref(zl.TemperatureC), deref(zl.SetpointC)
		}
		name, set, c, cs, zn, pre := "furnace temperature", "setpoint", "#d62728", "#1f77b4", rig.FurnaceName, ""
		if z != "" {
			c = zoneColors[i%len(zoneColors)]
			name, set, cs, zn, pre = z+" temperature", z+" setpoint", c, z, z+" "
		}
		temp.Series = append(temp.Series, plot.Series{Name: name, X: t, Y: pv, Color: c}, plot.Series{Name: set, X: t, Y: sp, Color: cs, Dashed: true})
		if v, ok := limitOf(env, envelope.ZoneChannel(zn, envelope.ZoneTemperature), celsiusOf); ok {
			temp.Rules = append(temp.Rules, plot.Rule{Y: v, Label: fmt.Sprintf("%sover_temperature trip %.0f °C", pre, v)})
		}
		if v, ok := limitOf(env, envelope.ZoneChannel(zn, envelope.ZoneSetpoint), celsiusOf); ok {
			temp.Rules = append(temp.Rules, plot.Rule{Y: v, Label: fmt.Sprintf("%ssetpoint max %.0f °C", pre, v), Color: "#ff7f0e"})
		}
	}
	if env != nil {
		if vent := env.Config().Vent; vent != nil && vent.MaxTemperature.Unit != "" {
			if v, err := celsiusOf(vent.MaxTemperature.Value, vent.MaxTemperature.Unit); err == nil {
				temp.Rules = append(temp.Rules, plot.Rule{Y: v, Label: fmt.Sprintf("vent only below %.0f °C", v), Color: "#7f7f7f"})
			}
		}
	}
	pres := plot.Panel{YLabel: "chamber pressure (mbar)", LogY: true,
		Series: []plot.Series{{Name: "chamber pressure", X: pt, Y: pr, Color: "#2ca02c"}}}
	if v, ok := limitOf(env, envelope.ChannelPressure, mbarOf); ok {
		pres.Rules = append(pres.Rules, plot.Rule{Y: v, Label: fmt.Sprintf("over_pressure %.0f mbar (in process)", v)})
	}
	if env != nil {
		for _, g := range slices.Sorted(maps.Keys(env.Config().Interlocks.Gases)) {
			if s, ok := gases[g]; !ok || slices.Max(s.Y) < flowOn(env) {
				continue
			}
			q := env.Config().Interlocks.Gases[g].MaxPressure
			if v, err := mbarOf(q.Value, q.Unit); err == nil && q.Unit != "" {
				pres.Rules = append(pres.Rules, plot.Rule{Y: v, Label: fmt.Sprintf("%s only below %g mbar", g, v), Color: "#ff7f0e"})
			}
		}
	}
	f := plot.Figure{Title: title, XLabel: "process time (min)", Panels: []plot.Panel{temp, pres},
		Spans: stepSpans(rows, toMin)}
	thr := flowOn(env)
	slices.Sort(order)
	for _, g := range order {
		s := gases[g]
		if slices.Max(s.Y) < thr { // never flowed: no panel
			continue
		}
		p := plot.Panel{YLabel: g + " flow (sccm)", Height: 130, Series: []plot.Series{*s}}
		if v, ok := limitOf(env, envelope.FlowChannel(g), sccmOf); ok {
			p.Rules = []plot.Rule{{Y: v, Label: fmt.Sprintf("%s max %g sccm", g, v)}}
		}
		f.Panels = append(f.Panels, p)
	}
	if n := len(rows); n > 0 {
		f.Notes = []string{fmt.Sprintf("%d samples over %.1f min of process time; shaded: the recipe's steps; dashed red: the envelope's limits",
			n, toMin(rows[n-1].Elapsed-rows[0].Elapsed))}
	}
	return f.SVG()
}

// zoneColors are the zones' traces' colours on a rig of several, in the
// zones' order.
var zoneColors = []string{"#d62728", "#1f77b4", "#9467bd", "#8c564b"}

// flowOn is the envelope's flow_on_threshold in sccm (1 without one): a
// gas whose readings never reach it did not flow.
func flowOn(env *envelope.Envelope) float64 {
	if env != nil {
		if q := env.Config().FlowOnThreshold; q.Unit != "" {
			if v, err := sccmOf(q.Value, q.Unit); err == nil {
				return v
			}
		}
	}
	return 1
}

func deref(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// pressureSample is one gauge reading taken during a leak check's hold.
type pressureSample struct {
	Elapsed    float64 `json:"elapsed_seconds"`
	PressurePa float64 `json:"pressure_pa"`
}

// leakVerdict is the leak check's verdict line, as the plot prints it.
func leakVerdict(passed bool, rate, maxRate float64) string {
	if passed {
		return fmt.Sprintf("PASSED: rate of rise %.3g Pa/min ≤ threshold %g Pa/min", rate, maxRate)
	}
	return fmt.Sprintf("FAILED: rate of rise %.3g Pa/min > threshold %g Pa/min", rate, maxRate)
}

// leakSVG draws the pressure readings of the isolated chamber, the line of
// the measured rate of rise from p0 to p1 over the hold, and the line the
// threshold would allow from the same start.
func leakSVG(samples []pressureSample, p0, p1, rate, maxRate float64, passed bool) []byte {
	var xs, ys []float64
	for _, s := range samples {
		xs, ys = append(xs, s.Elapsed), append(ys, s.PressurePa)
	}
	p := plot.Panel{YLabel: "chamber pressure (Pa)", Height: 300,
		Series: []plot.Series{{Name: "gauge readings (isolated)", X: xs, Y: ys, Color: "#2ca02c", Markers: true}}}
	if len(xs) > 0 {
		t0, t1 := xs[0], xs[len(xs)-1]
		mins := (t1 - t0) / 60
		p.Segments = []plot.Segment{
			{Name: fmt.Sprintf("measured rate %.3g Pa/min", rate), X0: t0, Y0: p0, X1: t1, Y1: p0 + rate*mins, Color: "#1f77b4"},
			{Name: fmt.Sprintf("threshold %g Pa/min", maxRate), X0: t0, Y0: p0, X1: t1, Y1: p0 + maxRate*mins, Color: "#d62728", Dashed: true},
		}
	}
	f := plot.Figure{Title: "Leak check: pressure rise of the isolated chamber", XLabel: "process time (s)",
		Notes: []string{"verdict: " + leakVerdict(passed, rate, maxRate),
			fmt.Sprintf("pressure %.4g Pa at isolation, %.4g Pa at the end of the hold (%d readings)", p0, p1, len(samples))},
		Panels: []plot.Panel{p}}
	return f.SVG()
}

// rigEnvelope is the envelope of env's rig (nil without a rig).
func rigEnvelope(env *Env) *envelope.Envelope {
	if env.Rig == nil {
		return nil
	}
	return env.Rig.Envelope()
}

// plots adds a recipe run's SVG artifacts to arts: the Raman spectrum with
// its fit (once analysed) and the process profile (partial: the profile so
// far, when there is one).
func (r *recipeRun) plots(env *Env, arts []Artifact, partial bool) ([]Artifact, error) {
	envl := rigEnvelope(env)
	if sp, a := r.st.Spectrum, r.st.Analysis; sp != nil && a != nil && !partial {
		expected := ""
		if r.st.Material != nil {
			expected = r.st.Material.Expected
		}
		art, err := writeArtifact(env, ramanSVGName, ramanSVGFile, svgType, ramanSVG(*sp, *a, expected))
		if err != nil {
			return nil, err
		}
		arts = append(arts, art)
	}
	name, file, title := profileSVGName, profileSVGFile, "Process profile: "+r.st.Plan.Recipe.Name
	if partial {
		name, file, title = profilePartialNm, profilePartial, "Process profile until the failure: "+r.st.Plan.Recipe.Name
	}
	if len(r.rows) < 2 {
		return arts, nil
	}
	art, err := writeArtifact(env, name, file, svgType, profileSVG(title, r.rows, envl))
	if err != nil {
		return nil, err
	}
	return append(arts, art), nil
}
