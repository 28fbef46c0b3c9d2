package serialsim

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// RamanIDN is what *IDN? answers.
const RamanIDN = "HCP-SIM,RAMAN-532,SN0001,1.0"

// Integration time limits of ACQ, in sim milliseconds.
const (
	MinIntegrationMS = 10
	MaxIntegrationMS = 60000
)

// Raman replies.
const (
	ramanDevice     = "raman"
	ramanOK         = "OK"
	ramanErrUnknown = "ERR 1 unknown command"
	ramanErrArg     = "ERR 2 bad argument"
	ramanErrBusy    = "ERR 3 busy"
	ramanErrAborted = "ERR 4 aborted"
)

// RamanOpts configures the spectrometer.
type RamanOpts struct {
	// Link is the symlink to create for the pty (e.g. <dir>/raman).
	Link string
	// Seed seeds the spectrum's noise and the corruption source: the same seed
	// and the same commands give the same spectra.
	Seed uint64
	// Logger receives line failures; nil discards them.
	Logger *slog.Logger
	// Window is the spectral window read (the zero value: TMDWindow). With
	// GrapheneWindow the sample is a copper foil with graphene on it
	// (graphene.go).
	Window Window
}

// Raman is a running Raman spectrometer on its own pty.
type Raman struct {
	s *server
}

// NewRaman opens a pty at o.Link and serves the spectrometer on it until Close
// or until ctx is done.
func NewRaman(ctx context.Context, p Plant, o RamanOpts) (*Raman, error) {
	fw := newRamanFirmware(p, o.Seed)
	if o.Window.Points > 0 {
		fw.window = o.Window
	}
	s, err := serve(ctx, o.Link, o.Logger, func(w io.Writer, sch scheduler) firmware {
		fw.w, fw.sch = w, sch
		return fw
	})
	if err != nil {
		return nil, fmt.Errorf("serialsim: raman: %w", err)
	}
	return &Raman{s: s}, nil
}

// Link is the symlink the spectrometer is reached through.
func (r *Raman) Link() string { return r.s.line.Link() }

// Path is the pty slave device behind the link.
func (r *Raman) Path() string { return r.s.line.Path() }

// Close stops the spectrometer (an acquisition in progress is dropped without
// a reply), removes its link and waits for its goroutine.
func (r *Raman) Close() error { return r.s.Close() }

// ramanFirmware is the spectrometer's command interpreter.
type ramanFirmware struct {
	p         Plant
	w         io.Writer
	sch       scheduler
	rng       *rand.Rand
	spikes    *rand.Rand // the cosmic-ray spikes' own stream
	sample    uint64     // seeds the sample's fluorescence background
	window    Window     // the grating's window
	acquiring bool
	acqMS     int
	gen       uint64 // acquisition number, so a late timer of an aborted one does nothing
	cancel    func()
	buf       []byte
	over      bool
}

func newRamanFirmware(p Plant, seed uint64) *ramanFirmware {
	return &ramanFirmware{p: p, rng: newRand(seed), spikes: spikeRand(seed), sample: seed,
		window: TMDWindow, buf: make([]byte, 0, maxLine)}
}

func (f *ramanFirmware) feed(b []byte, _ time.Time) {
	for _, c := range b {
		switch c {
		case '\r', '\n':
			if len(f.buf) > 0 || f.over {
				f.command(string(f.buf), f.over)
			}
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

func (f *ramanFirmware) command(line string, over bool) {
	if f.p.FaultActive(faultSilent, ramanDevice) {
		return
	}
	cmd := parseRaman(line)
	if over {
		cmd = ramanCommand{op: ramanUnknown}
	}
	if f.acquiring && cmd.op != ramanStop {
		if cmd.op == ramanAcq || cmd.op == ramanBadArg {
			f.p.RecordWrite(ramanDevice, via, "acquire", float64(cmd.ms), false)
		}
		f.sendLine(ramanErrBusy)
		return
	}
	switch cmd.op {
	case ramanNone:
	case ramanIDN:
		f.sendLine(RamanIDN)
	case ramanAcq:
		f.p.RecordWrite(ramanDevice, via, "acquire", float64(cmd.ms), true)
		f.acquiring, f.acqMS = true, cmd.ms
		f.gen++
		gen := f.gen
		f.cancel = f.sch.schedule(wallDuration(cmd.ms, f.p.TimeScale()), func() { f.finish(gen) })
	case ramanBadArg:
		f.p.RecordWrite(ramanDevice, via, "acquire", float64(cmd.ms), false)
		f.sendLine(ramanErrArg)
	case ramanStop:
		f.p.RecordWrite(ramanDevice, via, "stop", 0, true)
		if f.acquiring {
			f.acquiring = false
			f.cancel()
			f.sendLine(ramanErrAborted)
			return
		}
		f.sendLine(ramanOK)
	default:
		f.sendLine(ramanErrUnknown)
	}
}

// wallDuration is how long an integration of ms sim milliseconds takes on the
// wall clock at scale (sim seconds per wall second; not positive or not finite
// counts as 1).
func wallDuration(ms int, scale float64) time.Duration {
	if !(scale > 0) || math.IsInf(scale, 0) {
		scale = 1
	}
	return time.Duration(float64(ms) * float64(time.Millisecond) / scale)
}

// finish ends acquisition gen when its integration time is over: the data
// block, unless it was aborted meanwhile or the instrument is silent.
func (f *ramanFirmware) finish(gen uint64) {
	if !f.acquiring || f.gen != gen {
		return
	}
	f.acquiring = false
	if f.p.FaultActive(faultSilent, ramanDevice) {
		return
	}
	e := Effects{SpectrumFaults: f.p.SpectrumFaults(), Sample: f.sample}
	var counts []uint64
	if f.window == GrapheneWindow {
		counts = synthGraphene(f.p.Film(), f.acqMS, f.window, f.rng, f.spikes, e)
	} else {
		counts = synthWith(f.p.Film(), f.acqMS, f.rng, f.spikes, e)
	}
	reply(f.w, f.dataBlock(counts, f.p.FaultActive(faultCorrupt, ramanDevice)))
}

// dataBlock formats DATA n, the n data lines and END <crc>. When corrupted,
// either the CRC is wrong or one data line is mangled (the CRC then still
// covers the original lines).
func (f *ramanFirmware) dataBlock(counts []uint64, corrupted bool) []byte {
	lines := make([][]byte, len(counts))
	crc := crc32.NewIEEE()
	for i, c := range counts {
		lines[i] = fmt.Appendf(nil, "%s %d\r\n", strconv.FormatFloat(f.window.At(i), 'f', 1, 64), c)
		_, _ = crc.Write(lines[i])
	}
	sum := crc.Sum32()
	if corrupted {
		if f.rng.IntN(2) == 0 {
			sum ^= 1 << f.rng.IntN(32)
		} else {
			i := f.rng.IntN(len(lines))
			lines[i] = corrupt(lines[i], f.rng)
		}
	}
	out := fmt.Appendf(nil, "DATA %d\r\n", len(lines))
	for _, l := range lines {
		out = append(out, l...)
	}
	return fmt.Appendf(out, "END %08x\r\n", sum)
}

func (f *ramanFirmware) sendLine(s string) {
	b := []byte(s + "\r\n")
	if f.p.FaultActive(faultCorrupt, ramanDevice) {
		b = corrupt(b, f.rng)
	}
	reply(f.w, b)
}

// ramanOp is a parsed spectrometer command.
type ramanOp int

const (
	ramanNone ramanOp = iota // empty line: ignored
	ramanIDN
	ramanAcq
	ramanStop
	ramanBadArg
	ramanUnknown
)

// ramanCommand is one parsed command line.
type ramanCommand struct {
	op ramanOp
	ms int // ramanAcq: integration; ramanBadArg: the number given, or badValue
}

// parseRaman parses a command line (without CR LF). Keywords are not case
// sensitive (SCPI habit); fields are separated by white space.
func parseRaman(line string) ramanCommand {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return ramanCommand{op: ramanNone}
	}
	kw := strings.ToUpper(fields[0])
	switch {
	case kw == "*IDN?" && len(fields) == 1:
		return ramanCommand{op: ramanIDN}
	case kw == "STOP" && len(fields) == 1:
		return ramanCommand{op: ramanStop}
	case kw == "ACQ":
		if len(fields) != 2 {
			return ramanCommand{op: ramanBadArg, ms: badValue}
		}
		n, ok := parseMS(fields[1])
		if !ok {
			return ramanCommand{op: ramanBadArg, ms: badValue}
		}
		if n < MinIntegrationMS || n > MaxIntegrationMS {
			return ramanCommand{op: ramanBadArg, ms: n}
		}
		return ramanCommand{op: ramanAcq, ms: n}
	}
	return ramanCommand{op: ramanUnknown}
}

// parseMS accepts up to 9 decimal digits and nothing else.
func parseMS(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}
