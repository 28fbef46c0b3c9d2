package serialsim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// TPG control characters and the gauge's fixed answers.
const (
	tpgENQ = 0x05
	tpgACK = 0x06
	tpgNAK = 0x15
	tpgETX = 0x03

	// GaugeID is what TID answers.
	GaugeID = "PKR"

	// gaugeDevice is the write-log device name.
	gaugeDevice = "gauge"
)

// The gauge's measuring range in mbar; outside it the status is underrange (1)
// or overrange (2) and the limit value is printed.
const (
	gaugeMinMbar = 5.0e-9
	gaugeMaxMbar = 1.0e3
)

// Pressure units as the UNI mnemonic numbers them.
const (
	unitMbar = 0
	unitTorr = 1
	unitPa   = 2
)

// GaugeOpts configures the vacuum gauge.
type GaugeOpts struct {
	// Link is the symlink to create for the pty (e.g. <dir>/gauge).
	Link string
	// Seed seeds the corruption source.
	Seed uint64
	// Logger receives line failures; nil discards them.
	Logger *slog.Logger
}

// Gauge is a running TPG-style vacuum gauge on its own pty.
type Gauge struct {
	s *server
}

// NewGauge opens a pty at o.Link and serves the gauge on it until Close or
// until ctx is done. The unit after start is mbar.
func NewGauge(ctx context.Context, p Plant, o GaugeOpts) (*Gauge, error) {
	fw := newGaugeFirmware(p, o.Seed)
	s, err := serve(ctx, o.Link, o.Logger, func(w io.Writer, _ scheduler) firmware { fw.w = w; return fw })
	if err != nil {
		return nil, fmt.Errorf("serialsim: gauge: %w", err)
	}
	return &Gauge{s: s}, nil
}

// Link is the symlink the gauge is reached through.
func (g *Gauge) Link() string { return g.s.line.Link() }

// Path is the pty slave device behind the link.
func (g *Gauge) Path() string { return g.s.line.Path() }

// Close stops the gauge, removes its link and waits for its goroutine.
func (g *Gauge) Close() error { return g.s.Close() }

// gaugeFirmware is the gauge's mnemonic interpreter.
type gaugeFirmware struct {
	p       Plant
	w       io.Writer
	rng     *rand.Rand
	unit    int
	pending tpgCommand // last accepted command; op tpgNone when none
	buf     []byte
	over    bool
}

func newGaugeFirmware(p Plant, seed uint64) *gaugeFirmware {
	return &gaugeFirmware{p: p, rng: newRand(seed), unit: unitMbar, buf: make([]byte, 0, maxLine)}
}

func (f *gaugeFirmware) feed(b []byte, _ time.Time) {
	for _, c := range b {
		switch c {
		case tpgENQ:
			f.buf, f.over = f.buf[:0], false
			f.enq()
		case tpgETX: // clears the input buffer, as on a TPG 26x
			f.buf, f.over = f.buf[:0], false
		case '\n':
		case '\r':
			f.command(f.buf, f.over)
			f.buf, f.over = f.buf[:0], false
		default:
			if len(f.buf) < maxLine {
				f.buf = append(f.buf, c)
			} else {
				f.over = true
			}
		}
	}
}

func (f *gaugeFirmware) command(line []byte, over bool) {
	if f.p.FaultActive(faultSilent, gaugeDevice) {
		return
	}
	cmd, ok := parseTPG(line)
	if over {
		ok = false
	}
	if cmd.op == tpgSetUnit || cmd.op == tpgBadUnit {
		if cmd.op == tpgBadUnit {
			ok = false
		}
		f.p.RecordWrite(gaugeDevice, via, "unit", float64(cmd.unit), ok)
	}
	if !ok {
		f.send([]byte{tpgNAK, '\r', '\n'})
		return
	}
	if cmd.op == tpgSetUnit {
		f.unit = cmd.unit
	}
	f.pending = cmd
	f.send([]byte{tpgACK, '\r', '\n'})
}

func (f *gaugeFirmware) enq() {
	if f.p.FaultActive(faultSilent, gaugeDevice) {
		return
	}
	var data string
	switch f.pending.op {
	case tpgPR1:
		data = formatPressure(f.p.ChamberPressure(), f.unit)
	case tpgGetUnit, tpgSetUnit:
		data = strconv.Itoa(f.unit)
	case tpgTID:
		data = GaugeID
	case tpgERR:
		data = "0000"
	default:
		f.send([]byte{tpgNAK, '\r', '\n'})
		return
	}
	f.send([]byte(data + "\r\n"))
}

func (f *gaugeFirmware) send(b []byte) {
	if f.p.FaultActive(faultCorrupt, gaugeDevice) {
		b = corrupt(b, f.rng)
	}
	reply(f.w, b)
}

// formatPressure is the PR1 data: status digit, comma, value in unit
// (0,8.3400E-03). Pa outside the gauge's range gives status 1 or 2 with the
// limit value; a non-finite pressure gives status 3 (sensor error).
func formatPressure(pa float64, unit int) string {
	mbar := pa / 100
	status := 0
	switch {
	case math.IsNaN(mbar):
		return "3," + formatExp(gaugeMaxMbar, unit)
	case mbar < gaugeMinMbar:
		status, mbar = 1, gaugeMinMbar
	case mbar > gaugeMaxMbar:
		status, mbar = 2, gaugeMaxMbar
	}
	return strconv.Itoa(status) + "," + formatExp(mbar, unit)
}

// formatExp prints mbar converted to unit as x.xxxxEsxx.
func formatExp(mbar float64, unit int) string {
	v := mbar
	switch unit {
	case unitTorr:
		v = mbar * 0.750061683
	case unitPa:
		v = mbar * 100
	}
	return strconv.FormatFloat(v, 'E', 4, 64)
}

// tpgOp is a parsed TPG mnemonic.
type tpgOp int

const (
	tpgNone tpgOp = iota
	tpgPR1
	tpgGetUnit
	tpgSetUnit
	tpgBadUnit // UNI with a parameter that is not 0, 1 or 2
	tpgTID
	tpgERR
)

// tpgCommand is one parsed command line.
type tpgCommand struct {
	op   tpgOp
	unit int // tpgSetUnit: the new unit; tpgBadUnit: the number given, or badValue
}

// parseTPG parses a command line (without CR or LF); ok is false when the gauge
// must answer NAK. Spaces are ignored, as on a TPG 26x; mnemonics are upper case.
func parseTPG(line []byte) (cmd tpgCommand, ok bool) {
	s := make([]byte, 0, len(line))
	for _, c := range line {
		if c != ' ' {
			s = append(s, c)
		}
	}
	switch string(s) {
	case "PR1":
		return tpgCommand{op: tpgPR1}, true
	case "UNI":
		return tpgCommand{op: tpgGetUnit}, true
	case "TID":
		return tpgCommand{op: tpgTID}, true
	case "ERR":
		return tpgCommand{op: tpgERR}, true
	}
	if len(s) >= 4 && string(s[:4]) == "UNI," {
		arg := s[4:]
		if len(arg) == 1 && arg[0] >= '0' && arg[0] <= '2' {
			return tpgCommand{op: tpgSetUnit, unit: int(arg[0] - '0')}, true
		}
		unit := badValue
		if n, err := strconv.Atoi(string(arg)); err == nil && n >= 0 && n < 1000 {
			unit = n
		}
		return tpgCommand{op: tpgBadUnit, unit: unit}, false
	}
	return tpgCommand{op: tpgNone}, false
}
