package jcamp

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readBack is a minimal reader of what Write writes (AFFN XYDATA or
// XYPOINTS), for the round trip; the peer test reads it with jcampconverter.
func readBack(t testing.TB, text string) (labels map[string]string, xs, ys []float64) {
	t.Helper()
	labels = map[string]string{}
	var mode string
	for _, line := range strings.Split(text, "\r\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "##") {
			k, v, _ := strings.Cut(line[2:], "=")
			labels[k] = v
			mode = k
			continue
		}
		if len(line) > lineMax {
			t.Fatalf("data line of %d characters: %q", len(line), line)
		}
		f := strings.Fields(strings.ReplaceAll(line, ",", " "))
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v
		}
		yf := num(labels["YFACTOR"])
		switch mode {
		case "XYDATA":
			first, _ := strconv.ParseFloat(labels["FIRSTX"], 64)
			dx, _ := strconv.ParseFloat(labels["DELTAX"], 64)
			x0 := num(f[0])
			tol := 1e-9
			if _, frac, ok := strings.Cut(f[0], "."); ok {
				tol += 1.5 * math.Pow10(-len(frac))
			}
			if i := len(xs); math.Abs(first+float64(i)*dx-x0) > tol {
				t.Fatalf("line starts at x %v, point %d is at %v", x0, i, first+float64(i)*dx)
			}
			for _, s := range f[1:] {
				xs = append(xs, first+float64(len(xs))*dx)
				ys = append(ys, num(s)*yf)
			}
		case "XYPOINTS":
			xs = append(xs, num(f[0]))
			ys = append(ys, num(f[1])*yf)
		default:
			t.Fatalf("data outside a data label: %q", line)
		}
	}
	return labels, xs, ys
}

func linspace(a, step float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Round((a+float64(i)*step)*10) / 10
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	uneven := []float64{100, 100.5, 101.25, 103, 110}
	tests := []struct {
		name   string
		s      Spectrum
		form   string
		digits float64 // precision of the y values
	}{
		{"instrument: one-decimal shifts, whole counts", Spectrum{Shift: linspace(150, 0.5, 1001), Counts: counts(1001, 1)}, "XYDATA", 0},
		{"fractional counts", Spectrum{Shift: linspace(300, 1, 200), Counts: counts(200, 0.125)}, "XYDATA", 1e-9},
		{"uneven axis", Spectrum{Shift: uneven, Counts: []float64{1, -2, 3, 4e6, 5}}, "XYPOINTS", 0},
		{"one point", Spectrum{Shift: []float64{384.2}, Counts: []float64{77}}, "XYPOINTS", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.s, Meta{Title: "t", Acquired: time.Date(2026, 11, 29, 3, 12, 0, 0, time.UTC), Params: []Param{{"INTEGRATION TIME MS", "1000"}}})
			if err != nil {
				t.Fatal(err)
			}
			labels, xs, ys := readBack(t, string(b))
			if _, ok := labels[tt.form]; !ok {
				t.Fatalf("no ##%s in\n%s", tt.form, b)
			}
			if labels["NPOINTS"] != strconv.Itoa(len(tt.s.Shift)) || labels["XUNITS"] != "1/CM" || labels["YUNITS"] != "COUNTS" ||
				labels["LONGDATE"] != "2026/11/29 03:12:00 +0000" || labels["$INTEGRATION TIME MS"] != "1000" || labels["END"] != "" {
				t.Fatalf("labels %v", labels)
			}
			if len(xs) != len(tt.s.Shift) {
				t.Fatalf("read %d points, wrote %d", len(xs), len(tt.s.Shift))
			}
			for i := range xs {
				if math.Abs(xs[i]-tt.s.Shift[i]) > 1e-9 || math.Abs(ys[i]-tt.s.Counts[i]) > tt.digits+1e-9 {
					t.Fatalf("point %d: read (%v, %v), wrote (%v, %v)", i, xs[i], ys[i], tt.s.Shift[i], tt.s.Counts[i])
				}
			}
		})
	}
}

func counts(n int, unit float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Round(1000+900*math.Sin(float64(i)/7)+float64(i%13)*37) * unit
	}
	return out
}

func TestRefused(t *testing.T) {
	ok := Spectrum{Shift: []float64{1, 2}, Counts: []float64{3, 4}}
	tests := []struct {
		name string
		s    Spectrum
		m    Meta
		want error
	}{
		{"no title", ok, Meta{}, ErrMeta},
		{"bad parameter name", ok, Meta{Title: "t", Params: []Param{{"A=B", "1"}}}, ErrMeta},
		{"empty", Spectrum{}, Meta{Title: "t"}, ErrSpectrum},
		{"lengths differ", Spectrum{Shift: []float64{1, 2}, Counts: []float64{1}}, Meta{Title: "t"}, ErrSpectrum},
		{"not ascending", Spectrum{Shift: []float64{2, 2}, Counts: []float64{1, 1}}, Meta{Title: "t"}, ErrSpectrum},
		{"NaN", Spectrum{Shift: []float64{1, 2}, Counts: []float64{math.NaN(), 1}}, Meta{Title: "t"}, ErrSpectrum},
		{"huge", Spectrum{Shift: []float64{1, 2}, Counts: []float64{1e13, 1}}, Meta{Title: "t"}, ErrSpectrum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := Write(&b, tt.s, tt.m); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if b.Len() != 0 {
				t.Fatalf("wrote %d bytes for a refused input", b.Len())
			}
		})
	}
}

func TestValuesStayOnOneLine(t *testing.T) {
	b, err := Encode(Spectrum{Shift: []float64{1}, Counts: []float64{1}}, Meta{Title: "a\r\n##END=\nb", Sample: "x\ny"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "##END=") != 1 || !strings.Contains(string(b), "##TITLE=a # END= b\r\n") {
		t.Fatalf("%q", b)
	}
}

func FuzzEncode(f *testing.F) {
	f.Add(150.0, 0.5, 1000.0, uint8(40), "MoS2")
	f.Add(-3.25, 1e-3, 0.001, uint8(3), "##")
	f.Fuzz(func(t *testing.T, x0, dx, y float64, n uint8, title string) {
		if n == 0 || !(dx > 1e-7) || dx > 1e6 || math.Abs(x0) > 1e6 || math.IsNaN(y) || math.Abs(y) > 1e6 {
			t.Skip()
		}
		s := Spectrum{}
		for i := range int(n) {
			s.Shift = append(s.Shift, x0+float64(i)*dx)
			s.Counts = append(s.Counts, y*float64(i%5))
		}
		b, err := Encode(s, Meta{Title: "t" + title})
		if errors.Is(err, ErrSpectrum) {
			return // shifts that round to equal float64s
		}
		if err != nil {
			t.Fatal(err)
		}
		_, xs, ys := readBack(t, string(b))
		if len(xs) != len(s.Shift) {
			t.Fatalf("read %d points, wrote %d", len(xs), len(s.Shift))
		}
		for i := range xs {
			if math.Abs(ys[i]-s.Counts[i]) > 1e-6*max(1, math.Abs(s.Counts[i])) {
				t.Fatalf("point %d: y %v, wrote %v", i, ys[i], s.Counts[i])
			}
		}
	})
}

func ExampleEncode() {
	b, _ := Encode(Spectrum{Shift: []float64{380, 381, 382, 383}, Counts: []float64{120, 340, 150, 90}},
		Meta{Title: "MoS2 on SiO2/Si", Owner: "lab", Params: []Param{{"INTEGRATION TIME MS", "1000"}}})
	fmt.Print(strings.ReplaceAll(string(b), "\r\n", "\n"))
	// Output:
	// ##TITLE=MoS2 on SiO2/Si
	// ##JCAMP-DX=5.01
	// ##DATA TYPE=RAMAN SPECTRUM
	// ##DATA CLASS=XYDATA
	// ##ORIGIN=hcp-edge
	// ##OWNER=lab
	// ##$INTEGRATION TIME MS=1000
	// ##XUNITS=1/CM
	// ##YUNITS=COUNTS
	// ##XFACTOR=1
	// ##YFACTOR=1
	// ##FIRSTX=380
	// ##LASTX=383
	// ##DELTAX=1
	// ##FIRSTY=120
	// ##MINX=380
	// ##MAXX=383
	// ##MINY=90
	// ##MAXY=340
	// ##NPOINTS=4
	// ##XYDATA=(X++(Y..Y))
	// 380 120 340 150 90
	// ##END=
}
