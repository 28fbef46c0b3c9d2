package serialsim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// The gauge controller is emulated from Pfeiffer Vacuum's "TPG 261
// SingleGauge Operating Instructions" BG 5195 BEN / A (2011-05), section 5
// "Communication", which covers the TPG 261 and 262 ("TPG 26x"), and from
// the corpus of replies in drivers/tpg/testdata/frames.tsv (read as a
// document: this package imports no product code). Page references are to
// that manual; [ours] marks a choice where it is silent.

// TPG control characters (p. 66-68).
const (
	tpgENQ = 0x05
	tpgACK = 0x06
	tpgNAK = 0x15
	tpgETX = 0x03

	// gaugeDevice is the write-log device name.
	gaugeDevice = "gauge"
)

// GaugeType is what TID reports for the simulated gauge head (a PKR 251
// Compact FullRange gauge); NoSensorID for a connector with none.
const (
	GaugeType  = "PKR"
	NoSensorID = "noSEn"
)

// The PKR's measuring range in mbar; outside it the status is underrange (1)
// or overrange (2) and the limit value is printed [ours: the PKR 251's range].
const (
	gaugeMinMbar = 5.0e-9
	gaugeMaxMbar = 1.0e3
)

// noSensorData is the measurement output of a connector without a gauge,
// verbatim from p. 71: "5 -> No sensor (output: 5,2.0000E-2 [mbar])" — no
// sign, a one-digit exponent.
const noSensorData = "5,2.0000E-2"

// Pressure units as UNI numbers them (0 mbar, 1 Torr, 2 Pa).
const (
	unitMbar = 0
	unitTorr = 1
	unitPa   = 2
)

// Error word bits (ERR; p. 67: sent for ENQ without a valid request).
const (
	errWordNone   = "0000"
	errWordSyntax = "0001"
)

// GaugeModel is the controller model emulated.
type GaugeModel string

// The models: the TPG 261 has one gauge connector (gauge 2 reports no
// sensor), the TPG 262 two, both reading the chamber [ours: the simulated
// rig has one chamber].
const (
	TPG261 GaugeModel = "tpg261"
	TPG262 GaugeModel = "tpg262"
)

// ParseGaugeModel parses a --gauge-model value ("": TPG261).
func ParseGaugeModel(s string) (GaugeModel, error) {
	switch GaugeModel(strings.ToLower(s)) {
	case "", TPG261:
		return TPG261, nil
	case TPG262:
		return TPG262, nil
	}
	return "", fmt.Errorf("serialsim: unknown gauge model %q (tpg261, tpg262)", s)
}

// continuousIntervals are COM's modes (p. 72): 0 100 ms, 1 1 s (default),
// 2 1 min.
var continuousIntervals = [3]time.Duration{100 * time.Millisecond, time.Second, time.Minute}

// GaugeVariant is the controller as found on the bench: its model and
// whether it was left in continuous output mode (COM).
type GaugeVariant struct {
	// Model is TPG261 ("" too) or TPG262.
	Model GaugeModel
	// Continuous starts the controller in continuous output mode at
	// ContinuousMode's interval, as if a previous user had sent COM and
	// left it so: every interval it sends "x,sx.xxxxEsxx,y,sy.yyyyEsyy"
	// unasked (p. 72).
	Continuous bool
	// ContinuousMode is COM's mode: 0 100 ms, 1 1 s (the manual's default,
	// and this field's zero value is mode 0: set it), 2 1 min.
	ContinuousMode int
}

// GaugeOpts configures the vacuum gauge controller.
type GaugeOpts struct {
	// Link is the symlink to create for the pty (e.g. <dir>/gauge).
	Link string
	// Seed seeds the corruption source.
	Seed uint64
	// Logger receives line failures; nil discards them.
	Logger *slog.Logger
	// Variant is the model and output mode ("": a TPG 261 answering only
	// what it is asked).
	Variant GaugeVariant
}

// Gauge is a running TPG 26x gauge controller on its own pty.
type Gauge struct {
	s *server
}

// NewGauge opens a pty at o.Link and serves the gauge controller on it until
// Close or until ctx is done. The unit after start is mbar.
func NewGauge(ctx context.Context, p Plant, o GaugeOpts) (*Gauge, error) {
	if _, err := ParseGaugeModel(string(o.Variant.Model)); err != nil {
		return nil, err
	}
	if m := o.Variant.ContinuousMode; m < 0 || m >= len(continuousIntervals) {
		return nil, fmt.Errorf("serialsim: gauge: continuous output mode %d (0, 1, 2)", m)
	}
	fw := newGaugeFirmware(p, o.Seed)
	fw.dual = o.Variant.Model == TPG262
	s, err := serve(ctx, o.Link, o.Logger, func(w io.Writer, sch scheduler) firmware {
		fw.w, fw.sch = w, sch
		if o.Variant.Continuous {
			fw.startContinuous(o.Variant.ContinuousMode)
		}
		return fw
	})
	if err != nil {
		return nil, fmt.Errorf("serialsim: gauge: %w", err)
	}
	return &Gauge{s: s}, nil
}

// Link is the symlink the gauge is reached through.
func (g *Gauge) Link() string { return g.s.line.Link() }

// Path is the pty slave device behind the link.
func (g *Gauge) Path() string { return g.s.line.Path() }

// Close stops the gauge, removes its link and waits for its goroutines.
func (g *Gauge) Close() error { return g.s.Close() }

// gaugeFirmware is the controller's mnemonic interpreter.
type gaugeFirmware struct {
	p       Plant
	w       io.Writer
	sch     scheduler
	rng     *rand.Rand
	dual    bool // a TPG 262: gauge 2 is connected
	unit    int
	errWord string     // the ERROR word, cancelled when read out (ERR)
	pending tpgCommand // last accepted command; op tpgNone when none
	buf     []byte
	over    bool
	// continuous output: the interval, and the generation of its timer
	// chain (a new COM restarts it).
	every time.Duration
	gen   int
}

func newGaugeFirmware(p Plant, seed uint64) *gaugeFirmware {
	return &gaugeFirmware{p: p, rng: newRand(seed), unit: unitMbar, errWord: errWordNone, buf: make([]byte, 0, maxLine)}
}

func (f *gaugeFirmware) feed(b []byte, _ time.Time) {
	for _, c := range b {
		switch c {
		case tpgENQ:
			f.buf, f.over = f.buf[:0], false
			f.enq()
		case tpgETX: // clears the input buffer (p. 67)
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
	if cmd.op == tpgCOM {
		f.p.RecordWrite(gaugeDevice, via, "continuous", float64(cmd.unit), ok)
	}
	if !ok {
		// A refused string sets the syntax bit of the ERROR word (the TPG
		// 300 manual's example: NAK, then ERR answers 0001) and leaves no
		// valid request for ENQ [ours: p. 67-68 say no more].
		f.errWord, f.pending = errWordSyntax, tpgCommand{}
		f.send([]byte{tpgNAK, '\r', '\n'})
		return
	}
	switch cmd.op {
	case tpgSetUnit:
		f.unit = cmd.unit
	case tpgCOM:
		f.send([]byte{tpgACK, '\r', '\n'})
		f.pending = tpgCommand{}
		f.startContinuous(cmd.unit)
		return
	}
	f.pending = cmd
	f.send([]byte{tpgACK, '\r', '\n'})
}

// enq answers ENQ: the data of the last accepted command, again for each
// ENQ (p. 67: "additional strings ... by repetitive transmission of ENQ");
// without a valid request, the ERROR word.
func (f *gaugeFirmware) enq() {
	if f.p.FaultActive(faultSilent, gaugeDevice) {
		return
	}
	var data string
	switch f.pending.op {
	case tpgPR:
		data = f.gaugeData(f.pending.gauge)
	case tpgPRX:
		data = f.gaugeData(1) + "," + f.gaugeData(2)
	case tpgGetUnit, tpgSetUnit:
		data = strconv.Itoa(f.unit)
	case tpgTID:
		data = GaugeType + "," + f.id2()
	case tpgERR:
		data, f.errWord = f.errWord, errWordNone // cancelled when read out
	default:
		data = f.errWord
	}
	f.send([]byte(data + "\r\n"))
}

// id2 is TID's second field: the TPG 261 reports its second connector too.
func (f *gaugeFirmware) id2() string {
	if f.dual {
		return GaugeType
	}
	return NoSensorID
}

// gaugeData is gauge n's measurement: the chamber, or the no-sensor output
// on a TPG 261's second connector.
func (f *gaugeFirmware) gaugeData(n int) string {
	if n == 2 && !f.dual {
		return noSensorData
	}
	return formatPressure(f.p.ChamberPressure(), f.unit)
}

// startContinuous starts (or restarts) continuous output at mode's interval.
func (f *gaugeFirmware) startContinuous(mode int) {
	if f.sch == nil || mode < 0 || mode >= len(continuousIntervals) {
		return
	}
	f.gen++
	f.every = continuousIntervals[mode]
	f.tick(f.gen)
}

// tick sends one line of continuous output and schedules the next (the
// firmware lock is held).
func (f *gaugeFirmware) tick(gen int) {
	if gen != f.gen {
		return
	}
	f.sch.schedule(f.every, func() {
		if gen != f.gen {
			return
		}
		if !f.p.FaultActive(faultSilent, gaugeDevice) {
			f.send([]byte(f.gaugeData(1) + "," + f.gaugeData(2) + "\r\n"))
		}
		f.tick(gen)
	})
}

func (f *gaugeFirmware) send(b []byte) {
	if f.p.FaultActive(faultCorrupt, gaugeDevice) {
		b = corrupt(b, f.rng)
	}
	reply(f.w, b)
}

// formatPressure is a gauge's measurement data: status digit, comma, the
// value in unit as "sx.xxxxEsxx" with its sign (p. 71: 0,+8.3400E-03). The
// PKR is a logarithmic gauge: "the 3rd and 4th decimal are always 0".
// Outside the range the status is 1 or 2 with the limit value; a
// non-finite pressure is status 3 (sensor error) [ours: the value printed
// then is the upper limit].
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

// formatExp prints mbar converted to unit as sx.xx00Esxx.
func formatExp(mbar float64, unit int) string {
	v := mbar
	switch unit {
	case unitTorr:
		v = mbar * 0.750061683
	case unitPa:
		v = mbar * 100
	}
	s := strconv.FormatFloat(v, 'E', 2, 64) // 8.34E-03: two decimals, then 00
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.HasPrefix(mant, "-") {
		mant = "+" + mant
	}
	return mant + "00E" + exp
}

// tpgOp is a parsed TPG mnemonic.
type tpgOp int

const (
	tpgNone tpgOp = iota
	tpgPR         // PR1, PR2: one gauge
	tpgPRX        // both gauges
	tpgGetUnit
	tpgSetUnit
	tpgBadUnit // UNI with a parameter that is not 0, 1 or 2
	tpgTID
	tpgERR
	tpgCOM // continuous output, mode in unit
)

// tpgCommand is one parsed command line.
type tpgCommand struct {
	op    tpgOp
	gauge int // tpgPR: 1 or 2
	unit  int // tpgSetUnit: the new unit; tpgBadUnit: the number given, or badValue; tpgCOM: the mode
}

// parseTPG parses a command line (without CR or LF); ok is false when the
// controller must answer NAK. Spaces are ignored (p. 67); mnemonics are
// upper case.
func parseTPG(line []byte) (cmd tpgCommand, ok bool) {
	s := make([]byte, 0, len(line))
	for _, c := range line {
		if c != ' ' {
			s = append(s, c)
		}
	}
	switch string(s) {
	case "PR1":
		return tpgCommand{op: tpgPR, gauge: 1}, true
	case "PR2":
		return tpgCommand{op: tpgPR, gauge: 2}, true
	case "PRX":
		return tpgCommand{op: tpgPRX}, true
	case "UNI":
		return tpgCommand{op: tpgGetUnit}, true
	case "TID":
		return tpgCommand{op: tpgTID}, true
	case "ERR":
		return tpgCommand{op: tpgERR}, true
	case "COM":
		return tpgCommand{op: tpgCOM, unit: 1}, true // mode 1 (1 s) by default, p. 72
	}
	if len(s) >= 4 && string(s[:4]) == "COM," {
		if len(s) == 5 && s[4] >= '0' && s[4] <= '2' {
			return tpgCommand{op: tpgCOM, unit: int(s[4] - '0')}, true
		}
		return tpgCommand{op: tpgNone}, false
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
