package plot_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"hcp-edge/session/plot"
)

// elements parses doc as XML and returns every element's name and
// attributes, failing the test when it is not well-formed.
func elements(t *testing.T, doc []byte) []xml.StartElement {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var out []xml.StartElement
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			out = append(out, se.Copy())
		}
	}
}

func attr(se xml.StartElement, name string) string {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func TestFigureSVG(t *testing.T) {
	tests := []struct {
		name   string
		fig    plot.Figure
		series []string
		rules  []string
		spans  []string
	}{
		{name: "empty figure", fig: plot.Figure{Title: "nothing <yet> & more"}},
		{name: "lines, rules, spans", fig: plot.Figure{Title: "t", XLabel: "s", Notes: []string{"verdict: pass"},
			Spans: []plot.Span{{X0: 0, X1: 5, Label: "a"}, {X0: 5, X1: 10, Label: "b"}},
			Panels: []plot.Panel{
				{YLabel: "°C", Series: []plot.Series{{Name: "PV", X: []float64{0, 5, 10}, Y: []float64{20, math.NaN(), 700}},
					{Name: "SP", X: []float64{0, 10}, Y: []float64{700, 700}, Dashed: true}},
					Rules: []plot.Rule{{Y: 1050, Label: "max"}}},
				{YLabel: "Pa", LogY: true, Series: []plot.Series{{Name: "p", X: []float64{0, 5, 10}, Y: []float64{1e5, 0, 3}, Markers: true}},
					Segments: []plot.Segment{{Name: "fit", X0: 0, Y0: 3, X1: 10, Y1: 30}}},
			}},
			series: []string{"PV", "SP", "p", "fit"}, rules: []string{"max"}, spans: []string{"a", "b"}},
		{name: "single point and all NaN", fig: plot.Figure{Panels: []plot.Panel{{Series: []plot.Series{
			{Name: "one", X: []float64{3}, Y: []float64{4}, NoLine: true},
			{Name: "nan", X: []float64{math.NaN()}, Y: []float64{math.Inf(1)}}}}}},
			series: []string{"one", "nan"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.fig.SVG()
			els := elements(t, doc)
			if len(els) == 0 || els[0].Name.Local != "svg" {
				t.Fatalf("root is not <svg>")
			}
			got := map[string]map[string]bool{"series": {}, "rule": {}, "span": {}}
			for _, e := range els {
				switch e.Name.Local {
				case "script", "foreignObject", "image":
					t.Errorf("<%s> in a plain SVG", e.Name.Local)
				}
				for _, a := range e.Attr {
					if strings.HasPrefix(strings.ToLower(a.Name.Local), "on") || strings.Contains(a.Value, "javascript:") {
						t.Errorf("scripting attribute %s=%q", a.Name.Local, a.Value)
					}
				}
				for k := range got {
					if v := attr(e, "data-"+k); v != "" {
						got[k][v] = true
					}
				}
			}
			for k, want := range map[string][]string{"series": tt.series, "rule": tt.rules, "span": tt.spans} {
				for _, w := range want {
					if !got[k][w] {
						t.Errorf("%s %q missing; have %v", k, w, got[k])
					}
				}
			}
			if bytes.Contains(doc, []byte("NaN")) || bytes.Contains(doc, []byte("Inf")) {
				t.Errorf("non-finite number in the output:\n%s", doc)
			}
		})
	}
}

func ExampleFigure_SVG() {
	f := plot.Figure{Title: "rise", Panels: []plot.Panel{{YLabel: "Pa",
		Series: []plot.Series{{Name: "p", X: []float64{0, 60}, Y: []float64{1, 2}}}}}}
	doc := f.SVG()
	fmt.Println(bytes.HasPrefix(doc, []byte("<?xml")), bytes.Contains(doc, []byte(`data-series="p"`)))
	// Output: true true
}
