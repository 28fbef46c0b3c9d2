package jcamp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Spectrum is what Encode writes: Shift (Raman shift, cm⁻¹) strictly
// ascending, Counts (intensity, detector counts) one per shift.
type Spectrum struct {
	Shift  []float64
	Counts []float64
}

// Param is one acquisition parameter written as a user label
// (##$NAME=VALUE): the standard has no label for it.
type Param struct {
	Name  string // upper case by convention: "INTEGRATION TIME MS"
	Value string
}

// Meta is what a JCAMP-DX block says about its spectrum.
type Meta struct {
	Title      string    // ##TITLE (required)
	Origin     string    // ##ORIGIN: who made the data (required by the standard; "hcp-edge" if empty)
	Owner      string    // ##OWNER: who holds it ("" written as the standard's empty owner)
	Instrument string    // ##SPECTROMETER/DATA SYSTEM
	Sample     string    // ##SAMPLE DESCRIPTION
	Acquired   time.Time // ##LONGDATE (UTC), when the acquisition ended; zero: left out
	Source     string    // ##SOURCE REFERENCE: where the data is kept (a session's URI)
	Params     []Param   // ##$NAME=VALUE, in this order
}

// Sentinel errors.
var (
	// ErrSpectrum is a spectrum Encode cannot write: empty, lengths that
	// differ, a shift not above the one before, a value not finite.
	ErrSpectrum = errors.New("jcamp: invalid spectrum")
	// ErrMeta is a Meta without a title or a parameter with an unusable name.
	ErrMeta = errors.New("jcamp: invalid metadata")
)

// MIME is the media type of a JCAMP-DX file (as registered by the
// chemical MIME project).
const MIME = "chemical/x-jcamp-dx"

// maxDecimals bounds the decimals of x values and the scaling of y values.
const maxDecimals = 6

// lineMax is the longest data line the standard allows.
const lineMax = 80

// Encode returns s and m as one JCAMP-DX block; see Write.
func Encode(s Spectrum, m Meta) ([]byte, error) {
	var b bytes.Buffer
	if err := Write(&b, s, m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write writes s and m as one JCAMP-DX block (lines ending CRLF, as the
// standard's examples and most readers expect). A spectrum that is empty,
// has lengths that differ, a shift not strictly ascending or a value that
// is not finite is ErrSpectrum; a Meta without a title, ErrMeta. Nothing is
// written when the input is refused.
func Write(w io.Writer, s Spectrum, m Meta) error {
	if err := check(s, m); err != nil {
		return err
	}
	n := len(s.Shift)
	xd := decimalsOf(s.Shift)
	yd := decimalsOf(s.Counts)
	yfactor := math.Pow10(-yd)
	ys := make([]int64, n)
	for i, y := range s.Counts {
		ys[i] = int64(math.Round(y * math.Pow10(yd)))
	}
	bw := bufio.NewWriter(w)
	label := func(name, value string) { fmt.Fprintf(bw, "##%s=%s\r\n", name, oneLine(value)) }
	label("TITLE", m.Title)
	label("JCAMP-DX", "5.01")
	label("DATA TYPE", "RAMAN SPECTRUM")
	label("DATA CLASS", "XYDATA")
	origin := m.Origin
	if origin == "" {
		origin = "hcp-edge"
	}
	label("ORIGIN", origin)
	label("OWNER", m.Owner)
	if !m.Acquired.IsZero() {
		label("LONGDATE", m.Acquired.UTC().Format("2006/01/02 15:04:05")+" +0000")
	}
	if m.Instrument != "" {
		label("SPECTROMETER/DATA SYSTEM", m.Instrument)
	}
	if m.Sample != "" {
		label("SAMPLE DESCRIPTION", m.Sample)
	}
	if m.Source != "" {
		label("SOURCE REFERENCE", m.Source)
	}
	for _, p := range m.Params {
		label("$"+p.Name, p.Value)
	}
	minY, maxY := s.Counts[0], s.Counts[0]
	for _, y := range s.Counts {
		minY, maxY = min(minY, y), max(maxY, y)
	}
	fx := func(v float64) string { return strconv.FormatFloat(v, 'f', xd, 64) }
	fy := func(v float64) string { return strconv.FormatFloat(v, 'f', yd, 64) }
	label("XUNITS", "1/CM")
	label("YUNITS", "COUNTS")
	label("XFACTOR", "1")
	label("YFACTOR", strconv.FormatFloat(yfactor, 'g', -1, 64))
	label("FIRSTX", fx(s.Shift[0]))
	label("LASTX", fx(s.Shift[n-1]))
	even, dx := evenlySpaced(s.Shift, xd)
	if even {
		label("DELTAX", strconv.FormatFloat(dx, 'g', -1, 64))
	}
	label("FIRSTY", fy(s.Counts[0]))
	label("MINX", fx(s.Shift[0]))
	label("MAXX", fx(s.Shift[n-1]))
	label("MINY", fy(minY))
	label("MAXY", fy(maxY))
	label("NPOINTS", strconv.Itoa(n))
	if even {
		bw.WriteString("##XYDATA=(X++(Y..Y))\r\n")
		for i := 0; i < n; {
			line := fx(s.Shift[i])
			for first := true; i < n; first = false {
				y := strconv.FormatInt(ys[i], 10)
				if !first && len(line)+1+len(y) > lineMax {
					break
				}
				line += " " + y
				i++
			}
			bw.WriteString(line)
			bw.WriteString("\r\n")
		}
	} else {
		bw.WriteString("##XYPOINTS=(XY..XY)\r\n")
		for i := range n {
			fmt.Fprintf(bw, "%s, %d\r\n", fx(s.Shift[i]), ys[i])
		}
	}
	bw.WriteString("##END=\r\n")
	return bw.Flush()
}

func check(s Spectrum, m Meta) error {
	if strings.TrimSpace(m.Title) == "" {
		return fmt.Errorf("%w: no title", ErrMeta)
	}
	for _, p := range m.Params {
		if p.Name == "" || strings.ContainsAny(p.Name, "=\r\n") || strings.Contains(p.Name, "##") {
			return fmt.Errorf("%w: parameter name %q", ErrMeta, p.Name)
		}
	}
	if len(s.Shift) == 0 {
		return fmt.Errorf("%w: no points", ErrSpectrum)
	}
	if len(s.Shift) != len(s.Counts) {
		return fmt.Errorf("%w: %d shifts, %d counts", ErrSpectrum, len(s.Shift), len(s.Counts))
	}
	for i, x := range s.Shift {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(s.Counts[i]) || math.IsInf(s.Counts[i], 0) {
			return fmt.Errorf("%w: point %d not finite", ErrSpectrum, i+1)
		}
		if math.Abs(s.Counts[i]) > 1e12 {
			return fmt.Errorf("%w: point %d: count %g out of range", ErrSpectrum, i+1, s.Counts[i])
		}
		if i > 0 && x <= s.Shift[i-1] {
			return fmt.Errorf("%w: point %d: shift %g not above %g", ErrSpectrum, i+1, x, s.Shift[i-1])
		}
	}
	return nil
}

// decimalsOf is the fewest decimals (0..maxDecimals) at which every value
// is written exactly (within 1e-9 of a unit of the last digit).
func decimalsOf(vs []float64) int {
	for d := 0; d < maxDecimals; d++ {
		p := math.Pow10(d)
		ok := true
		for _, v := range vs {
			if s := v * p; math.Abs(s-math.Round(s)) > 1e-6 {
				ok = false
				break
			}
		}
		if ok {
			return d
		}
	}
	return maxDecimals
}

// evenlySpaced reports whether every x is within half a unit of its
// d-th decimal of xs[0] + i·dx, and dx.
func evenlySpaced(xs []float64, d int) (bool, float64) {
	n := len(xs)
	if n < 2 {
		return false, 0
	}
	dx := (xs[n-1] - xs[0]) / float64(n-1)
	tol := 0.5 * math.Pow10(-d)
	for i, x := range xs {
		if math.Abs(xs[0]+float64(i)*dx-x) >= tol {
			return false, 0
		}
	}
	return true, dx
}

// oneLine makes v one label value: line breaks and "##" become spaces.
func oneLine(v string) string {
	v = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(v)
	return strings.ReplaceAll(v, "##", "# ")
}
