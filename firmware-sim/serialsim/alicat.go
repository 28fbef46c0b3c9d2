package serialsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// MFCVersion is what AVE answers after the unit id (MFCDefault; each
// variant has its own).
const MFCVersion = "10v05.0-R24"

// maxLine bounds a command line; longer input is kept only up to this length and
// the command is refused.
const maxLine = 256

// Alicat standard conditions, for the volumetric flow column.
const (
	stdPressurePSIA = 14.696
	stdTempK        = 298.15
)

// MFCOpts configures one mass-flow controller.
type MFCOpts struct {
	// Link is the symlink to create for the pty (e.g. <dir>/mfc-ar).
	Link string
	// Gas is the plant's name for the gas: "ar", "h2", "h2s" (or "ch4" on the
	// graphene rig). The write-log
	// device is "mfc-" + Gas.
	Gas string
	// UnitID is the controller's unit id ('A'..'Z'); 0 takes the rig's
	// default (A for ar, B for h2, C for h2s and ch4).
	UnitID byte
	// Seed seeds the corruption source.
	Seed uint64
	// Logger receives line failures; nil discards them.
	Logger *slog.Logger
	// Variant is the firmware and configuration emulated (MFCDefault: the
	// simulator's historic controller).
	Variant MFCVariant
}

// defaultUnitIDs are the rig's unit ids (configs/rig-protocols.md).
var defaultUnitIDs = map[string]byte{"ar": 'A', "h2": 'B', "h2s": 'C', "ch4": 'C'}

// MFC is a running Alicat-style mass-flow controller on its own pty.
type MFC struct {
	s  *server
	fw *mfcFirmware
}

// NewMFC opens a pty at o.Link and serves a mass-flow controller on it until
// Close or until ctx is done.
func NewMFC(ctx context.Context, p Plant, o MFCOpts) (*MFC, error) {
	fw, err := newMFCFirmware(p, o)
	if err != nil {
		return nil, err
	}
	s, err := serve(ctx, o.Link, o.Logger, func(w io.Writer, _ scheduler) firmware { fw.w = w; return fw })
	if err != nil {
		return nil, fmt.Errorf("serialsim: %s: %w", fw.dev, err)
	}
	return &MFC{s: s, fw: fw}, nil
}

// NVMWrites is how many times the controller has written a setpoint to its
// non-volatile memory: once per accepted setpoint in saved setpoint mode
// (MFCSavedSetpoint), never otherwise.
func (m *MFC) NVMWrites() int64 { return m.fw.nvm.Load() }

// Link is the symlink the controller is reached through.
func (m *MFC) Link() string { return m.s.line.Link() }

// Path is the pty slave device behind the link.
func (m *MFC) Path() string { return m.s.line.Path() }

// Close stops the controller, removes its link and waits for its goroutine.
func (m *MFC) Close() error { return m.s.Close() }

// mfcFirmware is the controller's command interpreter.
type mfcFirmware struct {
	p    Plant
	w    io.Writer
	gas  string
	dev  string
	id   byte
	rng  *rand.Rand
	buf  []byte
	over bool
	v    mfcModel
	nvm  atomic.Int64
	// total is the totalized mass in standard litres, and when it was
	// last advanced.
	total   float64
	totalAt time.Time
}

func newMFCFirmware(p Plant, o MFCOpts) (*mfcFirmware, error) {
	gas := strings.ToLower(o.Gas)
	if gas == "" {
		return nil, errors.New("serialsim: mfc: no gas given")
	}
	id := o.UnitID
	if id == 0 {
		id = defaultUnitIDs[gas]
	}
	if id < 'A' || id > 'Z' {
		return nil, fmt.Errorf("serialsim: mfc-%s: unit id %q is not a capital letter", gas, id)
	}
	v, ok := mfcVariants[o.Variant]
	if !ok {
		return nil, fmt.Errorf("serialsim: mfc-%s: unknown variant %q", gas, o.Variant)
	}
	return &mfcFirmware{p: p, gas: gas, dev: "mfc-" + gas, id: id, rng: newRand(o.Seed), buf: make([]byte, 0, maxLine), v: v}, nil
}

func (f *mfcFirmware) feed(b []byte, _ time.Time) {
	for _, c := range b {
		switch c {
		case '\n':
			// stray LF after the CR: ignored
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

func (f *mfcFirmware) command(line []byte, over bool) {
	if f.p.FaultActive(faultSilent, f.dev) {
		return
	}
	cmd, ours := parseMFC(line, f.id)
	if !ours {
		return
	}
	if over {
		cmd = mfcCommand{op: mfcBad}
	}
	switch cmd.op {
	case mfcPoll:
		f.sendFrame()
	case mfcSetpoint:
		sccm := cmd.value
		if f.v.slpm {
			sccm *= 1000
		}
		ok := cmd.valid && sccm >= 0
		if ok {
			if st, found := f.p.MFC(f.gas); found && sccm > st.FullScaleSCCM {
				ok = false
			}
		}
		if f.v.lss == "A" {
			// The analog input is the source: the command is not
			// accepted, the frame shows the setpoint unchanged.
			f.p.RecordWrite(f.dev, via, "setpoint", sccm, false)
			f.sendFrame()
			return
		}
		if ok && f.p.SetMFCSetpoint(f.gas, sccm) != nil {
			ok = false
		}
		v := sccm
		if !cmd.valid {
			v = badValue
		}
		f.p.RecordWrite(f.dev, via, "setpoint", v, ok)
		if ok && f.v.lss == "S" {
			f.nvm.Add(1)
			f.p.RecordWrite(f.dev, via, "setpoint_nvm", v, true)
		}
		if ok {
			f.sendFrame()
		} else {
			f.sendBad()
		}
	case mfcHold, mfcCancel:
		hold := cmd.op == mfcHold
		err := f.p.SetMFCHold(f.gas, hold)
		v := 0.0
		if hold {
			v = 1
		}
		f.p.RecordWrite(f.dev, via, "hold", v, err == nil)
		if err != nil {
			f.sendBad()
			return
		}
		f.sendFrame()
	case mfcVersion:
		f.send(string(f.id) + f.v.version)
	case mfcDescribe:
		for _, l := range f.v.description(f.id) {
			f.send(l)
		}
	case mfcManufacturer:
		st, ok := f.p.MFC(f.gas)
		if !ok {
			f.sendBad()
			return
		}
		for _, l := range f.v.manufacturing(f.id, st.FullScaleSCCM) {
			f.send(l)
		}
	case mfcUnits:
		vol, mass, code := f.v.flowUnits()
		switch {
		case !f.v.dcu || cmd.arg2:
			f.sendBad()
		case cmd.stat == 5 || cmd.stat == 37:
			f.send(fmt.Sprintf("%c %d %s", f.id, code, mass))
		case cmd.stat == 4:
			f.send(fmt.Sprintf("%c %d %s", f.id, code, vol))
		case cmd.stat == 2:
			f.send(fmt.Sprintf("%c 10 PSIA", f.id))
		case cmd.stat == 3:
			f.send(fmt.Sprintf("%c 2 `C", f.id))
		default:
			f.sendBad()
		}
	case mfcSource:
		if f.v.lss == "" || cmd.arg2 {
			f.sendBad()
			return
		}
		f.send(string(f.id) + " " + f.v.lss)
	default:
		f.sendBad()
	}
}

func (f *mfcFirmware) sendBad() { f.send(string(f.id) + " ?") }

func (f *mfcFirmware) sendFrame() {
	st, ok := f.p.MFC(f.gas)
	if !ok {
		f.sendBad()
		return
	}
	now := time.Now()
	if f.v.total && !f.totalAt.IsZero() {
		f.total += math.Max(st.FlowSCCM, 0) / 1000 * now.Sub(f.totalAt).Minutes()
	}
	f.totalAt = now
	f.send(f.v.frame(f.id, st.Gas, st.FullScaleSCCM, st.PressurePSIA, st.TempC,
		st.FlowSCCM, st.SetpointSCCM, f.total, st.Hold, st.StuckOpen))
}

func (f *mfcFirmware) send(s string) {
	b := []byte(s + "\r")
	if f.p.FaultActive(faultCorrupt, f.dev) {
		b = corrupt(b, f.rng)
	}
	reply(f.w, b)
}

// frame builds a data frame (without its CR) as the variant prints it:
// pressure, temperature, volumetric flow, mass flow, setpoint, [total], gas,
// status codes; the flows in sccm/ccm or SLPM/LPM.
func (v mfcModel) frame(id byte, gas string, fullScale, psia, tempC, massFlow, setpoint, total float64, hold, stuckOpen bool) string {
	vol := massFlow
	if psia > 0 && tempC > -273.15 {
		vol = massFlow * (stdPressurePSIA / psia) * ((tempC + 273.15) / stdTempK)
	}
	div := 1.0
	if v.slpm {
		div = 1000
	}
	var b strings.Builder
	b.WriteByte(id)
	for _, n := range []string{mfcNumber(psia, 2, false), mfcNumber(tempC, 2, false),
		mfcNumber(vol/div, v.flowDec, false), mfcNumber(massFlow/div, v.flowDec, false),
		mfcNumber(setpoint/div, v.flowDec, v.unsigned)} {
		b.WriteByte(' ')
		b.WriteString(n)
	}
	if v.total {
		b.WriteByte(' ')
		b.WriteString(mfcNumberWidth(total, 1, 9, false))
	}
	b.WriteByte(' ')
	if v.pad > 0 {
		fmt.Fprintf(&b, "%*s", v.pad, gas)
	} else {
		b.WriteString(gas)
	}
	if hold {
		b.WriteString(" HLD")
	}
	if stuckOpen || massFlow > fullScale {
		b.WriteString(" MOV")
	}
	return b.String()
}

// mfcNumber formats v with dec decimals, zero-padded to six characters after
// its sign (+014.70, +0000.1, +00.025); wider values are printed in full. A
// value that rounds to zero is positive; a non-finite one prints as zero.
// unsigned drops the sign of a positive value, as firmware before 6v prints
// the setpoint ("0116.3").
func mfcNumber(v float64, dec int, unsigned bool) string {
	return mfcNumberWidth(v, dec, 6, unsigned)
}

func mfcNumberWidth(v float64, dec, width int, unsigned bool) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	s := strconv.FormatFloat(math.Abs(v), 'f', dec, 64)
	sign := "+"
	if v < 0 && strings.Trim(s, "0.") != "" {
		sign = "-"
	}
	for len(s) < width {
		s = "0" + s
	}
	if unsigned && sign == "+" {
		return s
	}
	return sign + s
}

// mfcOp is a parsed MFC command.
type mfcOp int

const (
	mfcBad mfcOp = iota
	mfcPoll
	mfcSetpoint
	mfcHold
	mfcCancel
	mfcVersion
	mfcDescribe     // ??D*
	mfcManufacturer // ??M*
	mfcUnits        // DCU <stat>
	mfcSource       // LSS
)

// mfcCommand is one parsed command line.
type mfcCommand struct {
	op    mfcOp
	value float64 // setpoint
	valid bool    // value is a number
	stat  int     // DCU's statistic
	arg2  bool    // a set form (DCU <stat> <unit>, LSS <mode>): refused
}

// parseMFC parses a command line (without its CR) for unit id. ours is false
// when the line is empty or addressed to another unit (no reply then). Like a
// real Alicat, letters are not case sensitive.
func parseMFC(line []byte, id byte) (cmd mfcCommand, ours bool) {
	if len(line) == 0 || upper(line[0]) != id {
		return mfcCommand{}, false
	}
	rest := strings.ToUpper(string(line[1:]))
	switch {
	case rest == "":
		return mfcCommand{op: mfcPoll}, true
	case rest == "HC":
		return mfcCommand{op: mfcHold}, true
	case rest == "C":
		return mfcCommand{op: mfcCancel}, true
	case rest == "VE":
		return mfcCommand{op: mfcVersion}, true
	case rest == "??D*":
		return mfcCommand{op: mfcDescribe}, true
	case rest == "??M*":
		return mfcCommand{op: mfcManufacturer}, true
	case rest == "LSS" || strings.HasPrefix(rest, "LSS "):
		return mfcCommand{op: mfcSource, arg2: rest != "LSS"}, true
	case strings.HasPrefix(rest, "DCU "):
		f := strings.Fields(rest[4:])
		if len(f) == 0 {
			return mfcCommand{op: mfcBad}, true
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			return mfcCommand{op: mfcBad}, true
		}
		return mfcCommand{op: mfcUnits, stat: n, arg2: len(f) > 1}, true
	case rest[0] == 'S':
		arg := strings.TrimPrefix(rest[1:], " ")
		v, ok := parseDecimal(arg)
		return mfcCommand{op: mfcSetpoint, value: v, valid: ok}, true
	}
	return mfcCommand{op: mfcBad}, true
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// parseDecimal accepts an optional sign and digits with at most one decimal
// point (25, 25.5, .5, 25.), nothing else: no exponent, no inf or nan.
func parseDecimal(s string) (float64, bool) {
	t := s
	if t != "" && (t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	digits, points := 0, 0
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] >= '0' && t[i] <= '9':
			digits++
		case t[i] == '.':
			points++
		default:
			return 0, false
		}
	}
	if digits == 0 || points > 1 {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	if v == 0 {
		v = 0 // no negative zero
	}
	return v, true
}
