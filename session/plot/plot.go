package plot

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Series is one named line of a panel. X and Y have the same length.
type Series struct {
	Name   string
	X, Y   []float64
	Color  string // CSS colour; empty picks one from the palette
	Dashed bool
	// Markers draws a dot at every point (measured samples), Line false
	// with Markers true draws the dots alone.
	Markers bool
	NoLine  bool
}

// Rule is a horizontal line across a panel at Y: a limit or a threshold.
type Rule struct {
	Y     float64
	Label string
	Color string // empty: red
}

// Span shades the x range [X0, X1] across every panel (a recipe step).
type Span struct {
	X0, X1 float64
	Label  string
}

// Panel is one y axis with its series and rules.
type Panel struct {
	YLabel string
	LogY   bool
	Height int // pixels; 0: 220
	Series []Series
	Rules  []Rule
	// Segments are straight lines between two points (a fitted rate drawn
	// from its start to its end), named like series.
	Segments []Segment
}

// Segment is a named straight line from (X0, Y0) to (X1, Y1).
type Segment struct {
	Name           string
	X0, Y0, X1, Y1 float64
	Color          string
	Dashed         bool
}

// Figure is a stack of panels sharing the x axis.
type Figure struct {
	Title  string
	Notes  []string // lines under the title (verdicts, fitted values)
	XLabel string
	Width  int // pixels; 0: 960
	Panels []Panel
	Spans  []Span
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"}

const (
	marginL   = 78
	marginR   = 250 // legend
	titleH    = 28
	noteH     = 17
	panelGap  = 26
	axisH     = 44
	defHeight = 220
	defWidth  = 960
)

// SVG renders the figure as a standalone SVG document.
func (f Figure) SVG() []byte {
	w := f.Width
	if w <= 0 {
		w = defWidth
	}
	top := titleH + noteH*len(f.Notes) + 14
	if len(f.Spans) > 0 {
		top += 14 // span labels
	}
	h := top
	for i, p := range f.Panels {
		if i > 0 {
			h += panelGap
		}
		h += p.height()
	}
	h += axisH
	x0, x1 := f.xRange()
	plotW := float64(w - marginL - marginR)
	sx := func(x float64) float64 { return marginL + (x-x0)/(x1-x0)*plotW }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", esc(f.Title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text class="title" x="%d" y="20" font-size="16" font-weight="bold">%s</text>`+"\n", marginL, esc(f.Title))
	for i, n := range f.Notes {
		fmt.Fprintf(&b, `<text class="note" x="%d" y="%d">%s</text>`+"\n", marginL, titleH+noteH*(i+1)-2, esc(n))
	}
	y := top
	for i, p := range f.Panels {
		if i > 0 {
			y += panelGap
		}
		ph := p.height()
		f.panel(&b, p, i, y, ph, sx, x0, x1, plotW)
		y += ph
	}
	// The shared x axis under the last panel.
	for _, t := range ticks(x0, x1) {
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333"/>`, num(sx(t)), y, num(sx(t)), y+5)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num(sx(t)), y+18, label(t))
	}
	fmt.Fprintf(&b, `<text class="xlabel" x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num(marginL+plotW/2), y+36, esc(f.XLabel))
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func (p Panel) height() int {
	if p.Height > 0 {
		return p.Height
	}
	return defHeight
}

// xRange is the x extent of every series, segment and span.
func (f Figure) xRange() (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if finite(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, p := range f.Panels {
		for _, s := range p.Series {
			for _, v := range s.X {
				see(v)
			}
		}
		for _, s := range p.Segments {
			see(s.X0)
			see(s.X1)
		}
	}
	for _, s := range f.Spans {
		see(s.X0)
		see(s.X1)
	}
	return widen(lo, hi)
}

func widen(lo, hi float64) (float64, float64) {
	switch {
	case !finite(lo) || !finite(hi):
		return 0, 1
	case hi-lo < 1e-12*math.Max(1, math.Abs(hi)):
		d := math.Max(math.Abs(lo)*0.05, 0.5)
		return lo - d, hi + d
	}
	return lo, hi
}

// yRange is the y extent of a panel's data and rules, padded; in log10
// units for a logarithmic panel.
func (p Panel) yRange() (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if p.LogY {
			if !(v > 0) {
				return
			}
			v = math.Log10(v)
		}
		if finite(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, s := range p.Series {
		for _, v := range s.Y {
			see(v)
		}
	}
	for _, s := range p.Segments {
		see(s.Y0)
		see(s.Y1)
	}
	for _, r := range p.Rules {
		see(r.Y)
	}
	lo, hi = widen(lo, hi)
	if p.LogY {
		return math.Floor(lo), math.Ceil(hi)
	}
	pad := (hi - lo) * 0.06
	if lo >= 0 && lo-pad < 0 {
		return 0, hi + pad
	}
	return lo - pad, hi + pad
}

func (f Figure) panel(b *bytes.Buffer, p Panel, idx, top, ph int, sx func(float64) float64, x0, x1, plotW float64) {
	y0, y1 := p.yRange()
	sy := func(v float64) (float64, bool) {
		if p.LogY {
			if !(v > 0) {
				return 0, false
			}
			v = math.Log10(v)
		}
		if !finite(v) {
			return 0, false
		}
		return float64(top) + (y1-v)/(y1-y0)*float64(ph), true
	}
	id := fmt.Sprintf("panel-%d", idx)
	fmt.Fprintf(b, `<g class="panel" id="%s" data-ylabel="%s">`+"\n", id, esc(p.YLabel))
	fmt.Fprintf(b, `<clipPath id="%s-clip"><rect x="%d" y="%d" width="%s" height="%d"/></clipPath>`+"\n", id, marginL, top, num(plotW), ph)
	// Spans (steps), alternately shaded, labelled above the first panel.
	for i, s := range f.Spans {
		a, c := sx(math.Max(s.X0, x0)), sx(math.Min(s.X1, x1))
		if !(c > a) {
			continue
		}
		fill := "#f2f2f2"
		if i%2 == 1 {
			fill = "#e4ecf5"
		}
		fmt.Fprintf(b, `<rect class="span" data-span="%s" x="%s" y="%d" width="%s" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
			esc(s.Label), num(a), top, num(c-a), ph, fill, esc(s.Label))
		if idx == 0 && c-a >= 28 {
			fmt.Fprintf(b, `<text class="span-label" x="%s" y="%d" font-size="10" text-anchor="middle" fill="#555">%s</text>`+"\n",
				num((a+c)/2), top-4, esc(s.Label))
		}
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%s" height="%d" fill="none" stroke="#333"/>`+"\n", marginL, top, num(plotW), ph)
	// Y ticks and grid.
	var yt []float64
	if p.LogY {
		for d := y0; d <= y1+1e-9; d++ {
			yt = append(yt, math.Pow(10, d))
		}
	} else {
		yt = ticks(y0, y1)
	}
	for _, t := range yt {
		y, ok := sy(t)
		if !ok {
			continue
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`, marginL, num(y), num(marginL+plotW), num(y))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", marginL-5, num(y+4), label(t))
	}
	fmt.Fprintf(b, `<text class="ylabel" transform="translate(16,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+ph/2, esc(p.YLabel))
	fmt.Fprintf(b, `<g clip-path="url(#%s-clip)">`+"\n", id)
	legend := []struct{ name, color, dash string }{}
	var labels []float64 // y of the rule labels drawn
	for _, r := range p.Rules {
		y, ok := sy(r.Y)
		if !ok {
			continue
		}
		c := r.Color
		if c == "" {
			c = "#d62728"
		}
		fmt.Fprintf(b, `<line class="rule" data-rule="%s" data-value="%s" x1="%d" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"><title>%s</title></line>`+"\n",
			esc(r.Label), strconv.FormatFloat(r.Y, 'g', -1, 64), marginL, num(y), num(marginL+plotW), num(y), c, esc(r.Label))
		ty := y - 3
		if ty-float64(top) < 11 { // at the top edge: label under the line
			ty = y + 11
		}
		for slices.ContainsFunc(labels, func(u float64) bool { return math.Abs(u-ty) < 11 }) {
			ty += 11 // two limits close together: stack their labels
		}
		labels = append(labels, ty)
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" font-size="10" fill="%s">%s</text>`+"\n", num(marginL+plotW-4), num(ty), c, esc(r.Label))
	}
	for i, s := range p.Series {
		c := s.Color
		if c == "" {
			c = palette[i%len(palette)]
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		n := min(len(s.X), len(s.Y))
		if !s.NoLine {
			var d bytes.Buffer
			pen := false
			drawn := 0
			for k := 0; k < n; k++ {
				yy, ok := sy(s.Y[k])
				if !ok || !finite(s.X[k]) {
					pen = false
					continue
				}
				cmd := "L"
				if !pen {
					cmd = "M"
				}
				fmt.Fprintf(&d, "%s%s %s ", cmd, num(sx(s.X[k])), num(yy))
				pen = true
				drawn++
			}
			fmt.Fprintf(b, `<path class="series" data-series="%s" data-points="%d" d="%s" fill="none" stroke="%s" stroke-width="1.6"%s><title>%s</title></path>`+"\n",
				esc(s.Name), drawn, bytes.TrimSpace(d.Bytes()), c, dash, esc(s.Name))
		}
		if s.Markers || s.NoLine {
			attr := ""
			if !s.NoLine {
				attr = `-markers`
			}
			fmt.Fprintf(b, `<g class="series%s" data-series="%s" fill="%s">`, attr, esc(s.Name), c)
			for k := 0; k < n; k++ {
				yy, ok := sy(s.Y[k])
				if !ok || !finite(s.X[k]) {
					continue
				}
				fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.6"/>`, num(sx(s.X[k])), num(yy))
			}
			b.WriteString("</g>\n")
		}
		legend = append(legend, struct{ name, color, dash string }{s.Name, c, dash})
	}
	for i, s := range p.Segments {
		c := s.Color
		if c == "" {
			c = palette[(len(p.Series)+i)%len(palette)]
		}
		ya, oka := sy(s.Y0)
		yb, okb := sy(s.Y1)
		if !oka || !okb {
			continue
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(b, `<path class="series" data-series="%s" data-points="2" d="M%s %s L%s %s" fill="none" stroke="%s" stroke-width="1.8"%s><title>%s</title></path>`+"\n",
			esc(s.Name), num(sx(s.X0)), num(ya), num(sx(s.X1)), num(yb), c, dash, esc(s.Name))
		legend = append(legend, struct{ name, color, dash string }{s.Name, c, dash})
	}
	b.WriteString("</g>\n")
	lx := marginL + plotW + 12
	for i, l := range legend {
		ly := float64(top + 10 + 16*i)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, num(lx), num(ly), num(lx+18), num(ly), l.color, l.dash)
		fmt.Fprintf(b, `<text class="legend" x="%s" y="%s">%s</text>`+"\n", num(lx+23), num(ly+4), esc(l.name))
	}
	b.WriteString("</g>\n")
}

// ticks returns about five round values in [lo, hi].
func ticks(lo, hi float64) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	var out []float64
	for t := math.Ceil(lo/step) * step; t <= hi+step*1e-9 && len(out) < 50; t += step {
		if math.Abs(t) < step*1e-9 {
			t = 0
		}
		out = append(out, t)
	}
	return out
}

func label(v float64) string {
	a := math.Abs(v)
	if a != 0 && (a >= 1e5 || a < 1e-3) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// esc escapes s for XML text and attribute values as encoding/xml's
// EscapeText does, byte for byte (TestEscAsXML): the five markup
// characters and tab, newline and carriage return as character
// references, and what XML cannot hold (invalid UTF-8, control
// characters, U+FFFE, U+FFFF) as U+FFFD. Written here so that the binary
// does not link encoding/xml for one function (docs/FOOTPRINT.md).
func esc(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '"':
			b.WriteString("&#34;")
		case r == '\'':
			b.WriteString("&#39;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '\t':
			b.WriteString("&#x9;")
		case r == '\n':
			b.WriteString("&#xA;")
		case r == '\r':
			b.WriteString("&#xD;")
		case r == utf8.RuneError && n == 1, !xmlChar(r):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// xmlChar reports whether r is in XML 1.0's Char production.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}
