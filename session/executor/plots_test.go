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

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/session/analysis"
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
			doc := readSVG(t, ramanSVG(tt.sp, a))
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
