package executor

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hcp-edge/device"
	"hcp-edge/session/analysis"
)

// svgDoc is what a plot artifact shows, read back with encoding/xml.
type svgDoc struct {
	series map[string]int // name -> points drawn (markers count as points)
	rules  map[string]bool
	spans  map[string]bool
	notes  []string
}

// readSVG parses doc as XML (failing the test if it is not well-formed or
// holds anything but plain drawing) and collects its series, rules, spans
// and notes.
func readSVG(t *testing.T, doc []byte) svgDoc {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	out := svgDoc{series: map[string]int{}, rules: map[string]bool{}, spans: map[string]bool{}}
	inNote, markers := false, ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "script" || e.Name.Local == "foreignObject" {
				t.Fatalf("<%s> in a plot", e.Name.Local)
			}
			a := map[string]string{}
			for _, at := range e.Attr {
				a[at.Name.Local] = at.Value
				if strings.HasPrefix(at.Name.Local, "on") || strings.Contains(at.Value, "javascript:") || at.Name.Local == "href" {
					t.Fatalf("active or external attribute %s=%q", at.Name.Local, at.Value)
				}
			}
			if n, ok := a["data-series"]; ok {
				pts, _ := strconv.Atoi(a["data-points"])
				out.series[n] = max(out.series[n], pts)
				if e.Name.Local == "g" {
					markers = n
				}
			}
			if e.Name.Local == "circle" && markers != "" {
				out.series[markers+" (markers)"]++
			}
			if n, ok := a["data-rule"]; ok {
				out.rules[n] = true
			}
			if n, ok := a["data-span"]; ok {
				out.spans[n] = true
			}
			inNote = a["class"] == "note"
		case xml.EndElement:
			if e.Name.Local == "g" {
				markers = ""
			}
		case xml.CharData:
			if inNote {
				out.notes = append(out.notes, string(e))
				inNote = false
			}
		}
	}
	return out
}

func (s svgDoc) has(t *testing.T, prefix string, minPoints int) {
	t.Helper()
	for n, p := range s.series {
		if strings.HasPrefix(n, prefix) && p >= minPoints {
			return
		}
	}
	t.Errorf("no series %q with %d points or more; have %v", prefix, minPoints, s.series)
}

func (s svgDoc) note(t *testing.T, sub string) {
	t.Helper()
	for _, n := range s.notes {
		if strings.Contains(n, sub) {
			return
		}
	}
	t.Errorf("no note containing %q; notes %q", sub, s.notes)
}

// synthSpectrum is a noiseless MoS2 spectrum with peaks at e and a.
func synthSpectrum(e, a float64) device.Spectrum {
	var sp device.Spectrum
	rnd := rand.New(rand.NewPCG(1, 2))
	for x := 300.0; x <= 480; x += 0.5 {
		y := 200 + 900/(1+((x-e)/2.5)*((x-e)/2.5)) + 1100/(1+((x-a)/3)*((x-a)/3)) + 5*rnd.NormFloat64()
		sp.Shift, sp.Counts = append(sp.Shift, x), append(sp.Counts, y)
	}
	return sp
}

// TestRamanSVG: the verdict printed is the analysis's, for each layer class
// and for a spectrum with no MoS2.
func TestRamanSVG(t *testing.T) {
	tests := []struct {
		name    string
		sp      device.Spectrum
		verdict string
	}{
		{"monolayer", synthSpectrum(385, 404), "monolayer MoS2 (1 layer)"},
		{"bilayer", synthSpectrum(384, 405.5), "2-layer MoS2 (2 layers)"},
		{"bulk", synthSpectrum(383, 408), "bulk MoS2"},
		{"no MoS2", synthSpectrum(200, 250), "no MoS2 found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := analysis.Analyze(tt.sp)
			if err != nil {
				t.Fatal(err)
			}
			doc := readSVG(t, ramanSVG(tt.sp, a, ""))
			doc.has(t, "spectrum (markers)", 100)
			doc.note(t, "verdict: "+tt.verdict)
			doc.note(t, LayerVerdict(a))
			if a.Found {
				doc.has(t, "fit", 100)
				doc.has(t, fmt.Sprintf("E2g %.2f", a.E2g.Position), 100)
				doc.has(t, fmt.Sprintf("A1g %.2f", a.A1g.Position), 100)
				doc.has(t, fmt.Sprintf("distance %.2f", a.Distance), 2)
			}
		})
	}
}

// TestLeakSVG: samples, the measured and the threshold lines, the verdict.
func TestLeakSVG(t *testing.T) {
	var s []pressureSample
	for i := range 13 {
		s = append(s, pressureSample{Elapsed: 600 + 5*float64(i), PressurePa: 3 + 0.05*float64(i)})
	}
	for _, tt := range []struct {
		passed  bool
		verdict string
	}{{true, "PASSED: rate of rise 0.6 Pa/min ≤ threshold 1 Pa/min"}, {false, "FAILED: rate of rise 0.6 Pa/min > threshold 1 Pa/min"}} {
		doc := readSVG(t, leakSVG(s, 3, 3.6, 0.6, 1, tt.passed))
		doc.has(t, "gauge readings", 13)
		doc.has(t, "measured rate 0.6 Pa/min", 2)
		doc.has(t, "threshold 1 Pa/min", 2)
		doc.note(t, tt.verdict)
	}
}

// checkCVDPlots checks a completed synthesis's two SVGs against its outputs.
func checkCVDPlots(t *testing.T, res *Result) {
	t.Helper()
	byName := map[string]Artifact{}
	for _, a := range res.Artifacts {
		byName[a.Name] = a
	}
	raman, prof := byName[ramanSVGName], byName[profileSVGName]
	if raman.Type != svgType || prof.Type != svgType {
		t.Fatalf("plot artifacts missing or mistyped: %+v", res.Artifacts)
	}
	read := func(a Artifact) svgDoc {
		b, err := os.ReadFile(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		return readSVG(t, b)
	}
	r := read(raman)
	lc := res.Outputs["layer_count"].(int)
	want := map[int]string{1: "monolayer MoS2 (1 layer)", 2: "2-layer MoS2 (2 layers)", 3: "3-layer MoS2 (3 layers)", 4: "bulk MoS2"}[lc]
	r.note(t, "verdict: "+want)
	ra := res.Outputs["raman_analysis"].(map[string]any)
	r.note(t, fmt.Sprintf("distance %.2f", ra["peak_distance"].(float64)))
	r.has(t, fmt.Sprintf("E2g %.2f", ra["e2g_cm1"].(float64)), 100)
	r.has(t, fmt.Sprintf("A1g %.2f", ra["a1g_cm1"].(float64)), 100)
	r.has(t, "spectrum (markers)", 100)

	p := read(prof)
	rows := len(res.Outputs["growth_log"].([]LogRow))
	for _, s := range []string{"furnace temperature", "setpoint", "chamber pressure", "flow Ar", "flow H2S"} {
		p.has(t, s, rows/2)
	}
	for _, step := range []string{"pump_down", "leak_check", "purge", "ramp", "grow", "cool", "vent"} {
		if !p.spans[step] {
			t.Errorf("step %s not shaded; spans %v", step, p.spans)
		}
	}
	var rules []string
	for k := range p.rules {
		rules = append(rules, k)
	}
	slices.Sort(rules)
	for _, want := range []string{"over_temperature trip 1050 °C", "over_pressure 900 mbar (in process)", "H2S max 20 sccm"} {
		if !p.rules[want] {
			t.Errorf("limit %q not drawn; rules %q", want, rules)
		}
	}
}

// synthGraphene is a graphene-on-copper spectrum over the graphene window
// (1100–3000 cm⁻¹ at 2 cm⁻¹): G at 1584, 2D at 2684 with 2D/G = ratio and
// the 2D's width w2d, a D band of D/G = dg, on a sloping background.
func synthGraphene(ratio, w2d, dg float64) device.Spectrum {
	var sp device.Spectrum
	rnd := rand.New(rand.NewPCG(3, 4))
	l := func(x, c, w float64) float64 { u := (x - c) / (w / 2); return 1 / (1 + u*u) }
	for x := 1100.0; x <= 3000; x += 2 {
		y := 300 + 0.05*(x-1100) + 1000*(l(x, 1584, 14)+ratio*l(x, 2684, w2d)+dg*l(x, 1350, 30)) + 4*rnd.NormFloat64()
		sp.Shift, sp.Counts = append(sp.Shift, x), append(sp.Counts, y)
	}
	return sp
}

// TestRamanSVGBands: an analysis that reads its own bands (graphene's D, G
// and 2D, analysis.Result.Bands) is plotted over its own window with each
// band it found, as the analysis names it, and no two-peak fit; a spectrum
// with nothing grown is plotted over the phase's material's window.
func TestRamanSVGBands(t *testing.T) {
	const m = "graphene"
	mat, err := analysis.ParseMaterial(m)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		sp       device.Spectrum
		verdict  string
		bands    []string
		notBands []string
	}{
		{"monolayer", synthGraphene(2.2, 30, 0.04), "monolayer graphene (1 layer)", []string{"G 15", "2D 26"}, nil},
		{"bilayer, defective", synthGraphene(0.95, 50, 0.3), "2-layer graphene (2 layers)", []string{"D 13", "G 15", "2D 26"}, nil},
		{"few layers", synthGraphene(0.4, 70, 0.04), "few-layer graphene (3 or more layers)", []string{"G 15", "2D 26"}, nil},
		{"nothing grown", synthGraphene(0, 30, 0), "no graphene found: no graphene detected", nil, []string{"G ", "2D "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "nothing grown" {
				for i := range tt.sp.Counts {
					tt.sp.Counts[i] -= 1000 / (1 + ((tt.sp.Shift[i]-1584)/7)*((tt.sp.Shift[i]-1584)/7))
				}
			}
			a, err := analysis.AnalyzeMaterial(tt.sp.Shift, tt.sp.Counts, mat, analysis.DefaultOpts())
			if err != nil {
				t.Fatal(err)
			}
			svg := ramanSVG(tt.sp, a, m)
			doc := readSVG(t, svg)
			doc.has(t, "spectrum (markers)", 800) // the graphene window, not MoS2's 350–440 cm⁻¹
			doc.note(t, "verdict: "+tt.verdict)
			for _, b := range tt.bands {
				doc.has(t, b, 50)
			}
			for n := range doc.series {
				for _, b := range tt.notBands {
					if strings.HasPrefix(n, b) {
						t.Errorf("band %q drawn with nothing grown", n)
					}
				}
				if strings.HasPrefix(n, "fit (") || strings.HasPrefix(n, "E2g") || strings.HasPrefix(n, "A1g") {
					t.Errorf("two-peak series %q on a band reading", n)
				}
			}
			if a.Found {
				doc.note(t, "2D/G")
				if !bytes.Contains(svg, []byte("Raman spectrum and the graphene bands read")) {
					t.Error("title does not name the material's bands")
				}
			}
			if bytes.Contains(svg, []byte("MoS2")) || bytes.Contains(svg, []byte("Lee et al.")) {
				t.Error("a graphene plot names MoS2")
			}
		})
	}
}

// TestProfileSVGFollowsTheGasLines: the process profile's flow panels are
// the run's gas lines, as the rig's layout names them (a graphene run: Ar,
// H2, CH4; nothing of the MoS2 rig's H2S).
func TestProfileSVGFollowsTheGasLines(t *testing.T) {
	var rows []LogRow
	for i := range 40 {
		tc, p := 25+25*float64(i), 5.0
		flows := map[string]float64{"Ar": 110, "H2": 20, "CH4": 0}
		if i >= 20 && i < 30 {
			flows["CH4"] = 10
		}
		rows = append(rows, LogRow{Elapsed: 60 * float64(i), Stage: []string{"purge", "anneal", "grow", "cool"}[i/10],
			TemperatureC: &tc, SetpointC: &tc, PressurePa: &p, Flows: flows})
	}
	svg := profileSVG("Process profile: graphene-cu", rows, nil)
	doc := readSVG(t, svg)
	for _, s := range []string{"flow Ar", "flow H2", "flow CH4"} {
		doc.has(t, s, 40)
	}
	if bytes.Contains(svg, []byte("H2S")) {
		t.Error("the graphene run's profile names H2S")
	}
	if !bytes.Contains(svg, []byte("CH4 flow (sccm)")) {
		t.Error("no CH4 flow panel")
	}
}
