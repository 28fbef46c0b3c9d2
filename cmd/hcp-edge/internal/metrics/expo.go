package metrics

import (
	"bufio"
	"cmp"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The exposition: the Prometheus text format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), written
// by hand. The agent needs counters and one histogram with fixed labels;
// github.com/prometheus/client_golang brought google.golang.org/protobuf
// and about 1.6 MB of the armv7 binary for them (docs/FOOTPRINT.md).

// contentType is the text format's media type.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// counterVec is a counter family with fixed label names; its children are
// created on first use and never removed (every label value is bounded by
// the caller: known causes, reasons, instruments).
type counterVec struct {
	name, help string
	labels     []string

	mu       sync.RWMutex
	children map[string]*counterChild // by joined label values
}

type counterChild struct {
	values []string
	n      atomic.Uint64
}

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, children: map[string]*counterChild{}}
}

// with returns the child of the label values (in the order of the names).
func (c *counterVec) with(values ...string) *atomic.Uint64 {
	key := strings.Join(values, "\xff")
	c.mu.RLock()
	ch, ok := c.children[key]
	c.mu.RUnlock()
	if ok {
		return &ch.n
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.children[key]; ok {
		return &ch.n
	}
	ch = &counterChild{values: slices.Clone(values)}
	c.children[key] = ch
	return &ch.n
}

func (c *counterVec) write(w *expoWriter) {
	c.mu.RLock()
	kids := make([]*counterChild, 0, len(c.children))
	for _, ch := range c.children {
		kids = append(kids, ch)
	}
	c.mu.RUnlock()
	sort.Slice(kids, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b *counterChild) int { return slices.Compare(a.values, b.values) }(kids[i], kids[j]) < 0
	})
	w.header(c.name, c.help, "counter")
	for _, ch := range kids {
		w.sample(c.name, "", c.labels, ch.values, "", "", float64(ch.n.Load()))
	}
}

// histogramVec is a histogram family with one label.
type histogramVec struct {
	name, help string
	label      string
	bounds     []float64

	mu       sync.RWMutex
	children map[string]*histogram
}

// histogram counts observations in fixed buckets; Observe allocates
// nothing and takes no lock.
type histogram struct {
	value   string
	buckets []atomic.Uint64 // non-cumulative, one per bound
	count   atomic.Uint64
	sumBits atomic.Uint64 // float64 bits
	bounds  []float64
}

func newHistogramVec(name, help, label string, bounds []float64) *histogramVec {
	return &histogramVec{name: name, help: help, label: label, bounds: bounds, children: map[string]*histogram{}}
}

func (h *histogramVec) with(value string) *histogram {
	h.mu.RLock()
	ch, ok := h.children[value]
	h.mu.RUnlock()
	if ok {
		return ch
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.children[value]; ok {
		return ch
	}
	ch = &histogram{value: value, buckets: make([]atomic.Uint64, len(h.bounds)), bounds: h.bounds}
	h.children[value] = ch
	return ch
}

// Observe records v.
func (h *histogram) Observe(v float64) {
	if i, _ := slices.BinarySearch(h.bounds, v); i < len(h.bounds) {
		h.buckets[i].Add(1)
	}
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	h.count.Add(1) // last: a scrape never sees a count below its buckets' sum
}

func (h *histogramVec) write(w *expoWriter) {
	h.mu.RLock()
	kids := make([]*histogram, 0, len(h.children))
	for _, ch := range h.children {
		kids = append(kids, ch)
	}
	h.mu.RUnlock()
	sort.Slice(kids, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b *histogram) int { return cmp.Compare(a.value, b.value) }(kids[i], kids[j]) < 0
	})
	w.header(h.name, h.help, "histogram")
	labels := []string{h.label}
	for _, ch := range kids {
		vals := []string{ch.value}
		count := ch.count.Load()
		var cum uint64
		for i, b := range h.bounds {
			cum += ch.buckets[i].Load()
			w.sample(h.name, "_bucket", labels, vals, "le", formatFloat(b), float64(min(cum, count)))
		}
		w.sample(h.name, "_bucket", labels, vals, "le", "+Inf", float64(count))
		w.sample(h.name, "_sum", labels, vals, "", "", math.Float64frombits(ch.sumBits.Load()))
		w.sample(h.name, "_count", labels, vals, "", "", float64(count))
	}
}

// expoWriter writes the text format; the first write error sticks.
type expoWriter struct {
	w   *bufio.Writer
	buf []byte
}

func newExpoWriter(w io.Writer) *expoWriter { return &expoWriter{w: bufio.NewWriter(w)} }

func (w *expoWriter) header(name, help, typ string) {
	w.buf = append(w.buf[:0], "# HELP "...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, ' ')
	w.buf = appendEscaped(w.buf, help, false)
	w.buf = append(w.buf, "\n# TYPE "...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, typ...)
	w.buf = append(w.buf, '\n')
	_, _ = w.w.Write(w.buf)
}

// gauge writes a family of one unlabelled sample.
func (w *expoWriter) single(name, help, typ string, v float64) {
	w.header(name, help, typ)
	w.sample(name, "", nil, nil, "", "", v)
}

// sample writes name+suffix{labels="values",extra="extraVal"} v.
func (w *expoWriter) sample(name, suffix string, labels, values []string, extra, extraVal string, v float64) {
	b := append(w.buf[:0], name...)
	b = append(b, suffix...)
	if len(labels) > 0 || extra != "" {
		b = append(b, '{')
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l...)
			b = append(b, `="`...)
			b = appendEscaped(b, values[i], true)
			b = append(b, '"')
		}
		if extra != "" {
			if len(labels) > 0 {
				b = append(b, ',')
			}
			b = append(b, extra...)
			b = append(b, `="`...)
			b = append(b, extraVal...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = append(b, formatFloat(v)...)
	b = append(b, '\n')
	w.buf = b
	_, _ = w.w.Write(b)
}

func (w *expoWriter) flush() error { return w.w.Flush() }

// appendEscaped escapes a HELP text (backslash, newline) or a label value
// (also the double quote).
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
