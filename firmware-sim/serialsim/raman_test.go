package serialsim

import (
	"context"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
)

func startRaman(t *testing.T, p *fakePlant) *client {
	t.Helper()
	r, err := NewRaman(context.Background(), p, RamanOpts{Link: linkIn(t, "raman"), Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return dial(t, r.Link())
}

// block is a data block as a careful client reads it.
type block struct {
	shifts []float64
	counts []uint64
}

// readBlock reads DATA n, n lines and END crc; it fails on any format or CRC
// error (returned, not fatal, so corruption tests can use it).
func (c *client) readBlock() (block, error) {
	c.t.Helper()
	head := c.readTo('\n')
	var n int
	if _, err := fmt.Sscanf(head, "DATA %d\r\n", &n); err != nil {
		return block{}, fmt.Errorf("head %q: %v", head, err)
	}
	var b block
	crc := crc32.NewIEEE()
	var bad error
	for i := 0; i < n; i++ {
		line := c.readTo('\n')
		crc.Write([]byte(line))
		f := strings.Fields(strings.TrimSuffix(line, "\r\n"))
		if len(f) != 2 || !strings.HasSuffix(line, "\r\n") {
			bad = fmt.Errorf("line %d %q", i, line)
			continue
		}
		x, err1 := strconv.ParseFloat(f[0], 64)
		y, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil || !strings.Contains(f[0], ".") || len(f[0])-strings.Index(f[0], ".") != 2 {
			bad = fmt.Errorf("line %d %q", i, line)
			continue
		}
		b.shifts = append(b.shifts, x)
		b.counts = append(b.counts, y)
	}
	tail := c.readTo('\n')
	want := fmt.Sprintf("END %08x\r\n", crc.Sum32())
	if bad != nil {
		return b, bad
	}
	if tail != want {
		return b, fmt.Errorf("tail %q, want %q", tail, want)
	}
	return b, nil
}

func TestRamanCommands(t *testing.T) {
	p := newFakePlant()
	c := startRaman(t, p)
	tests := []struct {
		name   string
		send   string
		want   string
		writes []write
	}{
		{"identify", "*IDN?\r\n", RamanIDN + "\r\n", nil},
		{"identify lower case, CR only", "*idn?\r", RamanIDN + "\r\n", nil},
		{"stop when idle", "STOP\r\n", "OK\r\n", []write{{"raman", "serial", "stop", 0, true}}},
		{"unknown", "LASER ON\r\n", "ERR 1 unknown command\r\n", nil},
		{"identify with argument", "*IDN? 1\r\n", "ERR 1 unknown command\r\n", nil},
		{"acq without argument", "ACQ\r\n", "ERR 2 bad argument\r\n", []write{{"raman", "serial", "acquire", badValue, false}}},
		{"acq too short", "ACQ 9\r\n", "ERR 2 bad argument\r\n", []write{{"raman", "serial", "acquire", 9, false}}},
		{"acq too long", "ACQ 60001\r\n", "ERR 2 bad argument\r\n", []write{{"raman", "serial", "acquire", 60001, false}}},
		{"acq not a number", "ACQ 1e3\r\n", "ERR 2 bad argument\r\n", []write{{"raman", "serial", "acquire", badValue, false}}},
		{"acq negative", "ACQ -100\r\n", "ERR 2 bad argument\r\n", []write{{"raman", "serial", "acquire", badValue, false}}},
		{"acq two arguments", "ACQ 100 200\r\n", "ERR 2 bad argument\r\n", []write{{"raman", "serial", "acquire", badValue, false}}},
		{"acq huge", "ACQ 99999999999999999999\r\n", "ERR 2 bad argument\r\n", []write{{"raman", "serial", "acquire", badValue, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			c.send(tt.send)
			if got := c.readTo('\n'); got != tt.want {
				t.Fatalf("reply %q, want %q", got, tt.want)
			}
			if got := p.takeWrites(); !equalWrites(got, tt.writes) {
				t.Fatalf("writes %+v, want %+v", got, tt.writes)
			}
		})
	}
}

func TestRamanAcquisition(t *testing.T) {
	p := newFakePlant()
	c := startRaman(t, p)
	for _, ms := range []string{"10", "1000", "60000"} {
		c.send("ACQ " + ms + "\r\n")
		b, err := c.readBlock()
		if err != nil {
			t.Fatalf("ACQ %s: %v", ms, err)
		}
		if len(b.shifts) != ShiftPoints || b.shifts[0] != 150.0 || b.shifts[ShiftPoints-1] != 550.0 {
			t.Fatalf("ACQ %s: %d points from %v", ms, len(b.shifts), b.shifts[:1])
		}
		for i, x := range b.shifts {
			if x != ShiftAt(i) {
				t.Fatalf("point %d at %v, want %v", i, x, ShiftAt(i))
			}
		}
	}
	w := p.takeWrites()
	if len(w) != 3 || w[2] != (write{"raman", "serial", "acquire", 60000, true}) {
		t.Fatalf("writes %+v", w)
	}
	// The instrument is idle again.
	c.send("*IDN?\r\n")
	if got := c.readTo('\n'); got != RamanIDN+"\r\n" {
		t.Fatalf("after acquisitions: %q", got)
	}
}

func TestRamanBusyAndStop(t *testing.T) {
	p := newFakePlant()
	p.set(func(p *fakePlant) { p.scale = 1 }) // ACQ 60000 lasts a minute
	c := startRaman(t, p)
	c.send("ACQ 60000\r\n")
	for _, cmd := range []string{"*IDN?", "ACQ 100", "ACQ x", "NONSENSE"} {
		c.send(cmd + "\r\n")
		if got := c.readTo('\n'); got != "ERR 3 busy\r\n" {
			t.Fatalf("%s while acquiring: %q", cmd, got)
		}
	}
	c.send("STOP\r\n")
	if got := c.readTo('\n'); got != "ERR 4 aborted\r\n" {
		t.Fatalf("STOP while acquiring: %q", got)
	}
	c.send("STOP\r\n")
	if got := c.readTo('\n'); got != "OK\r\n" {
		t.Fatalf("STOP when idle: %q", got)
	}
	want := []write{
		{"raman", "serial", "acquire", 60000, true},
		{"raman", "serial", "acquire", 100, false},
		{"raman", "serial", "acquire", badValue, false},
		{"raman", "serial", "stop", 0, true},
		{"raman", "serial", "stop", 0, true},
	}
	if got := p.takeWrites(); !equalWrites(got, want) {
		t.Fatalf("writes %+v, want %+v", got, want)
	}
	// A new acquisition after the abort runs normally.
	p.set(func(p *fakePlant) { p.scale = 300 })
	c.send("ACQ 100\r\n")
	if _, err := c.readBlock(); err != nil {
		t.Fatal(err)
	}
}

func TestRamanSilentFault(t *testing.T) {
	p := newFakePlant()
	c := startRaman(t, p)
	p.setFault("silent", "raman", true)
	c.send("*IDN?\r\nACQ 10\r\n")
	c.expectNothing(100 * time.Millisecond)
	if w := p.takeWrites(); len(w) != 0 {
		t.Fatalf("silent spectrometer executed %+v", w)
	}
	// Silent while an acquisition ends: the block is lost.
	p.setFault("silent", "raman", false)
	p.set(func(p *fakePlant) { p.scale = 1 })
	c.send("ACQ 200\r\n")
	deadline := time.Now().Add(3 * time.Second)
	for len(p.takeWrites()) == 0 { // wait until the acquisition has started
		if time.Now().After(deadline) {
			t.Fatal("ACQ not received")
		}
		time.Sleep(time.Millisecond)
	}
	p.setFault("silent", "raman", true)
	c.expectNothing(400 * time.Millisecond)
	p.setFault("silent", "raman", false)
	c.send("*IDN?\r\n")
	if got := c.readTo('\n'); got != RamanIDN+"\r\n" {
		t.Fatalf("after clear: %q", got)
	}
}

func TestRamanCorruptFault(t *testing.T) {
	p := newFakePlant()
	p.set(func(p *fakePlant) { p.layers = 1 })
	c := startRaman(t, p)
	p.setFault("corrupt", "raman", true)
	for i := range 12 {
		c.send("ACQ 100\r\n")
		if _, err := c.readBlock(); err == nil {
			t.Fatalf("corrupted block %d passed the CRC and format checks", i)
		}
	}
	c.send("*IDN?\r\n")
	if got := c.readTo('\n'); got == RamanIDN+"\r\n" {
		t.Fatal("IDN reply not corrupted")
	}
	p.setFault("corrupt", "raman", false)
	c.send("ACQ 100\r\n")
	if _, err := c.readBlock(); err != nil {
		t.Fatalf("after clear: %v", err)
	}
}

// peakIn returns the position of the highest point in [lo, hi], refined by a
// parabola through it and its neighbours.
func peakIn(b block, lo, hi float64) float64 {
	best := -1
	for i, x := range b.shifts {
		if x >= lo && x <= hi && (best < 0 || b.counts[i] > b.counts[best]) {
			best = i
		}
	}
	if best <= 0 || best >= len(b.counts)-1 {
		return b.shifts[best]
	}
	y0, y1, y2 := float64(b.counts[best-1]), float64(b.counts[best]), float64(b.counts[best+1])
	den := y0 - 2*y1 + y2
	if den == 0 {
		return b.shifts[best]
	}
	return b.shifts[best] + ShiftStep*0.5*(y0-y2)/den
}

func TestRamanPeakPositions(t *testing.T) {
	tests := []struct {
		name   string
		layers float64
		delta  float64
	}{
		{"monolayer", 1, 18.7},
		{"bilayer", 2, 21.5},
		{"three layers", 3, 23.0},
		{"bulk", 4, 25.0},
		{"thick bulk", 9, 25.0},
	}
	p := newFakePlant()
	c := startRaman(t, p)
	var siPrev uint64 = math.MaxUint64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			p.set(func(p *fakePlant) { p.layers = tt.layers })
			c.send("ACQ 2000\r\n")
			b, err := c.readBlock()
			if err != nil {
				t.Fatal(err)
			}
			e2g, a1g := peakIn(b, 370, 395), peakIn(b, 396, 420)
			if d := a1g - e2g; math.Abs(d-tt.delta) > 0.6 {
				t.Fatalf("E2g %.2f A1g %.2f: distance %.2f, want %.1f", e2g, a1g, d, tt.delta)
			}
			if si := peakIn(b, 510, 530); math.Abs(si-520.7) > 0.3 {
				t.Fatalf("Si peak at %.2f", si)
			}
			siHeight := b.counts[int((520.5-ShiftFirst)/ShiftStep)]
			if siHeight >= siPrev {
				t.Fatalf("Si peak %d did not weaken (was %d)", siHeight, siPrev)
			}
			siPrev = siHeight
		})
	}
}

func TestRamanBareSubstrateHasNoMoS2(t *testing.T) {
	rates := expectedRates(plant.Film{MoS2: 0.1})
	base := rates[int((395-ShiftFirst)/ShiftStep)]
	for _, x := range []float64{385, 404} {
		if r := rates[int((x-ShiftFirst)/ShiftStep)]; r > base*1.05 {
			t.Fatalf("rate at %v = %v above background %v", x, r, base)
		}
	}
	if e, a := MoS2Peaks(1.5); math.Abs(e-384.5) > 1e-9 || math.Abs(a-404.6) > 1e-9 {
		t.Fatalf("MoS2Peaks(1.5) = %v, %v", e, a)
	}
}

func TestSynthSpectrumDeterministic(t *testing.T) {
	a := synthSpectrum(plant.Film{MoS2: 1.3}, 500, newRand(42))
	b := synthSpectrum(plant.Film{MoS2: 1.3}, 500, newRand(42))
	c := synthSpectrum(plant.Film{MoS2: 1.3}, 500, newRand(43))
	same, differ := true, false
	for i := range a {
		same = same && a[i] == b[i]
		differ = differ || a[i] != c[i]
	}
	if !same || !differ {
		t.Fatalf("same seed same spectrum: %v; other seed differs: %v", same, differ)
	}
	// Counts scale with integration time.
	short, long := synthSpectrum(plant.Film{MoS2: 1}, 100, newRand(1)), synthSpectrum(plant.Film{MoS2: 1}, 10000, newRand(1))
	i := int((520.5 - ShiftFirst) / ShiftStep)
	if r := float64(long[i]) / float64(short[i]); r < 80 || r > 120 {
		t.Fatalf("Si counts ratio %v for 100x the integration", r)
	}
}
