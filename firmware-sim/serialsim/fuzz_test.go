package serialsim

import (
	"bytes"
	"io"
	"math"
	"testing"
	"time"
)

// nowScheduler runs scheduled work at once (tests without a pty).
type nowScheduler struct{ pending []func() }

func (s *nowScheduler) schedule(_ time.Duration, fn func()) func() {
	s.pending = append(s.pending, fn)
	return func() {}
}

func (s *nowScheduler) run() {
	for len(s.pending) > 0 {
		fn := s.pending[0]
		s.pending = s.pending[1:]
		fn()
	}
}

// faultyPlant returns a fake plant with faults driven by the fuzz input.
func faultyPlant(mode byte) *fakePlant {
	p := newFakePlant()
	for _, d := range []string{"mfc-ar", "gauge", "raman"} {
		p.faults["silent/"+d] = mode&1 != 0
		p.faults["corrupt/"+d] = mode&2 != 0
	}
	p.mfcs["ar"].StuckOpen = mode&4 != 0
	return p
}

func FuzzParseMFC(f *testing.F) {
	for _, s := range []string{"A", "AS25.5", "AS 25.5", "AHC", "AC", "AVE", "AS-1", "ASabc", "AS", "B", "", "as1e9", "AS.", "AS+.5"} {
		f.Add([]byte(s), byte(0))
	}
	f.Fuzz(func(t *testing.T, line []byte, mode byte) {
		cmd, ours := parseMFC(line, 'A')
		if cmd.op == mfcSetpoint && cmd.valid && (math.IsNaN(cmd.value) || math.IsInf(cmd.value, 0)) {
			t.Fatalf("%q parsed to %v", line, cmd.value)
		}
		if ours && (len(line) == 0 || (line[0] != 'A' && line[0] != 'a')) {
			t.Fatalf("%q taken as ours", line)
		}
		fw, err := newMFCFirmware(faultyPlant(mode), MFCOpts{Gas: "ar", Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		fw.w = &out
		fw.feed(append(line, '\r'), time.Now())
		if mode&3 == 0 && ours && !bytes.HasSuffix(out.Bytes(), []byte("\r")) {
			t.Fatalf("%q: reply %q", line, out.Bytes())
		}
		if mode&1 != 0 && out.Len() > 0 {
			t.Fatalf("silent controller answered %q", out.Bytes())
		}
	})
}

func FuzzParseTPG(f *testing.F) {
	for _, s := range []string{"PR1\r", "UNI\r\n", "UNI,1\r", "UNI,9\r", "TID\r", "ERR\r", "\x05", "PR1\r\x05\x05", "X\x03PR1\r\x05", "UNI,\r"} {
		f.Add([]byte(s), byte(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, mode byte) {
		cmd, ok := parseTPG(in)
		if ok && (cmd.op == tpgNone || cmd.op == tpgBadUnit) {
			t.Fatalf("%q accepted as %+v", in, cmd)
		}
		if cmd.op == tpgSetUnit && (cmd.unit < 0 || cmd.unit > 2) {
			t.Fatalf("%q sets unit %d", in, cmd.unit)
		}
		fw := newGaugeFirmware(faultyPlant(mode), 1)
		var out bytes.Buffer
		fw.w = &out
		fw.feed(in, time.Now())
		if fw.unit < 0 || fw.unit > 2 {
			t.Fatalf("unit %d after %q", fw.unit, in)
		}
		if mode&1 != 0 && out.Len() > 0 {
			t.Fatalf("silent gauge answered %q", out.Bytes())
		}
	})
}

func FuzzParseRaman(f *testing.F) {
	for _, s := range []string{"*IDN?\r\n", "ACQ 100\r\n", "ACQ\r\n", "ACQ 5\r\n", "STOP\r\n", "ACQ 100\r\nSTOP\r\n", "ACQ 10\r\n*IDN?\r\n", "foo\r", "ACQ 99999999999\n"} {
		f.Add([]byte(s), byte(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, mode byte) {
		cmd := parseRaman(string(in))
		if cmd.op == ramanAcq && (cmd.ms < MinIntegrationMS || cmd.ms > MaxIntegrationMS) {
			t.Fatalf("%q accepted %d ms", in, cmd.ms)
		}
		p := faultyPlant(mode)
		p.layers = float64(mode) / 16
		fw := newRamanFirmware(p, 1)
		var sch nowScheduler
		fw.w, fw.sch = io.Discard, &sch
		fw.feed(in, time.Now())
		sch.run()
		if fw.acquiring {
			t.Fatalf("%q: still acquiring after its timer ran", in)
		}
	})
}

func FuzzCorrupt(f *testing.F) {
	for _, s := range []string{"A +014.70 Ar\r", "\x06\r\n", "\r\n", "", "END 0badf00d\r\n"} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, msg []byte, seed uint64) {
		out := corrupt(msg, newRand(seed))
		if len(out) != len(msg) {
			t.Fatalf("length %d -> %d", len(msg), len(out))
		}
		body := bytes.TrimRight(msg, "\r\n")
		if len(body) > 0 && bytes.Equal(out, msg) {
			t.Fatalf("%q not corrupted", msg)
		}
		if !bytes.Equal(out[len(body):], msg[len(body):]) {
			t.Fatalf("terminator changed: %q -> %q", msg, out)
		}
	})
}
