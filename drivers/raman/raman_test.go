package raman_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/raman"
	"hcp-edge/drivers/serialline/serialtest"
)

const scale = 1000 // the fake integrates 1000× faster than wall-clock time

// makeBlock renders a data block the way the document describes it.
func makeBlock(n int, mutate func(i int, line string) string) string {
	var data strings.Builder
	for i := range n {
		shift := 150.0 + 0.5*float64(i)
		counts := 100 + int(1000*math.Exp(-math.Pow((shift-520.7)/3, 2)))
		line := fmt.Sprintf("%.1f %d", shift, counts)
		if mutate != nil {
			line = mutate(i, line)
		}
		data.WriteString(line + "\r\n")
	}
	crc := crc32.ChecksumIEEE([]byte(data.String()))
	return fmt.Sprintf("DATA %d\r\n%sEND %08x\r\n", n, data.String(), crc)
}

// fakeRaman is the instrument side, written from the document.
type fakeRaman struct {
	p *serialtest.Peer

	mu        sync.Mutex
	slow      bool // integrate in wall-clock time instead of 1000× faster
	closed    bool
	acquiring *time.Timer
	block     func() string // what an acquisition sends; nil: silence
	got       []string
}

func (f *fakeRaman) handle(req []byte) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := string(req)
	f.got = append(f.got, r)
	switch {
	case r == "*IDN?":
		return []byte("HCP-SIM,RAMAN-532,SN0001,1.0\r\n")
	case r == "STOP":
		if f.acquiring != nil && f.acquiring.Stop() {
			f.acquiring = nil
			return []byte("ERR 4 aborted\r\nOK\r\n")
		}
		return []byte("OK\r\n")
	case f.acquiring != nil:
		return []byte("ERR 3 busy\r\n")
	case strings.HasPrefix(r, "ACQ "):
		ms, err := strconv.Atoi(r[4:])
		if err != nil || ms < 10 || ms > 60000 {
			return []byte("ERR 2 bad argument\r\n")
		}
		block := f.block
		wall := time.Duration(ms) * time.Millisecond / scale
		if f.slow {
			wall = time.Duration(ms) * time.Millisecond
		}
		var t *time.Timer
		t = time.AfterFunc(wall, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.closed || f.acquiring != t {
				return
			}
			f.acquiring = nil
			if block != nil {
				f.p.Write([]byte(block()))
			}
		})
		f.acquiring = t
		return nil
	}
	return []byte("ERR 1 unknown command\r\n")
}

func (f *fakeRaman) set(fn func(f *fakeRaman)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeRaman) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func testOpts() raman.Opts {
	o := raman.DefaultOpts()
	o.TimeScale = scale
	o.Transfer = 500 * time.Millisecond
	o.Timeout = 300 * time.Millisecond
	return o
}

func setup(t *testing.T) (*raman.Spectrometer, *fakeRaman, *serialtest.Peer) {
	t.Helper()
	p := serialtest.NewPeer(t)
	f := &fakeRaman{p: p, block: func() string { return makeBlock(801, nil) }}
	t.Cleanup(func() {
		f.mu.Lock()
		f.closed = true
		if f.acquiring != nil {
			f.acquiring.Stop()
		}
		f.mu.Unlock()
	})
	p.Serve(serialtest.SplitOn([]byte("\r\n")), f.handle)
	s, err := raman.Open(p.Path(), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, f, p
}

func TestAcquire(t *testing.T) {
	s, f, _ := setup(t)
	sp, err := s.Acquire(context.Background(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Shift) != 801 || len(sp.Counts) != 801 || sp.Shift[0] != 150 || sp.Shift[800] != 550 {
		t.Fatalf("spectrum of %d points, %v..%v", len(sp.Shift), sp.Shift[0], sp.Shift[len(sp.Shift)-1])
	}
	if sp.Integration != 2*time.Second || sp.At.IsZero() || sp.Counts[0] != 100 {
		t.Fatalf("integration %v at %v counts[0] %v", sp.Integration, sp.At, sp.Counts[0])
	}
	if got := f.requests(); len(got) != 1 || got[0] != "ACQ 2000" {
		t.Fatalf("requests %q", got)
	}
	if s.String() != "raman" {
		t.Fatal(s.String())
	}
	// Again: the line is clean after a full block.
	if _, err := s.Acquire(context.Background(), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

func TestAcquireRange(t *testing.T) {
	s, f, _ := setup(t)
	for _, d := range []time.Duration{0, 9 * time.Millisecond, 61 * time.Second, -time.Second} {
		if _, err := s.Acquire(context.Background(), d); !errors.Is(err, device.ErrOutOfRange) {
			t.Errorf("Acquire(%v) err = %v", d, err)
		}
	}
	if got := f.requests(); len(got) != 0 {
		t.Fatalf("sent %q", got)
	}
}

func TestBadBlocks(t *testing.T) {
	flip := func(i int, line string) string {
		if i == 400 {
			return strings.Replace(line, "350.0", "351.0", 1)
		}
		return line
	}
	tests := []struct {
		name  string
		block func() string
		want  error
	}{
		{"bad crc", func() string {
			b := makeBlock(801, nil)
			return b[:len(b)-4] + "00\r\n"
		}, device.ErrChecksum},
		{"corrupted line", func() string {
			// Flipped after the CRC was computed: a transmission error.
			return strings.Replace(makeBlock(801, nil), "350.0 ", "351.0 ", 1)
		}, device.ErrChecksum},
		{"not increasing", func() string {
			return makeBlock(801, func(i int, l string) string {
				if i == 10 {
					return "100.0 5"
				}
				return l
			})
		}, device.ErrFrame},
		{"duplicate shift", func() string { return makeBlock(801, flip) }, device.ErrFrame},
		{"bad counts", func() string {
			return makeBlock(801, func(i int, l string) string {
				if i == 3 {
					return "151.5 -7"
				}
				return l
			})
		}, device.ErrFrame},
		{"too few lines", func() string {
			b := makeBlock(801, nil)
			return strings.Replace(b, "DATA 801", "DATA 802", 1)
		}, device.ErrFrame},
		{"too many lines", func() string {
			b := makeBlock(801, nil)
			return strings.Replace(b, "DATA 801", "DATA 800", 1)
		}, device.ErrFrame},
		{"garbage header", func() string { return "D\x00TA 801\r\n" + makeBlock(801, nil)[10:] }, device.ErrFrame},
		{"huge count", func() string { return "DATA 99999999\r\n" }, device.ErrFrame},
		{"no crc", func() string { b := makeBlock(3, nil); return b[:strings.Index(b, "END")] + "END\r\n" }, device.ErrFrame},
		{"silence", nil, device.ErrTimeout},
		{"cut short", func() string { return makeBlock(801, nil)[:2000] }, device.ErrTimeout},
		{"busy", func() string { return "ERR 3 busy\r\n" }, device.ErrRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, f, _ := setup(t)
			f.set(func(f *fakeRaman) { f.block = tc.block })
			start := time.Now()
			_, err := s.Acquire(context.Background(), time.Second)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatal("deadline not honoured")
			}
			if tc.want == device.ErrTimeout {
				if got := f.requests(); got[len(got)-1] != "STOP" {
					t.Fatalf("no STOP after a timeout: %q", got)
				}
			}
			// Recovery.
			f.set(func(f *fakeRaman) { f.block = func() string { return makeBlock(801, nil) } })
			if _, err := s.Acquire(context.Background(), time.Second); err != nil {
				t.Fatalf("after %s: %v", tc.name, err)
			}
		})
	}
}

func TestBusyIsTyped(t *testing.T) {
	s, f, _ := setup(t)
	f.set(func(f *fakeRaman) { f.block = func() string { return "ERR 3 busy\r\n" } })
	_, err := s.Acquire(context.Background(), time.Second)
	var e *raman.Error
	if !errors.As(err, &e) || e.Code != raman.CodeBusy || e.Message != "busy" {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelSendsStop(t *testing.T) {
	s, f, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := s.Acquire(ctx, 60*time.Second) // 60 ms wall at the fake's scale
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	if got := f.requests(); strings.Join(got, ",") != "ACQ 60000,STOP" {
		t.Fatalf("requests %q", got)
	}
	// The line is clean: the next acquisition works.
	if _, err := s.Acquire(context.Background(), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

func TestDeadlineCoversIntegration(t *testing.T) {
	// A 60 s integration at time scale 1000 takes 60 ms wall, longer than the
	// per-exchange timeout used for short commands but within the expected
	// duration plus transfer: it must succeed.
	s, _, _ := setup(t)
	o := testOpts()
	if exp := s.Expected(60 * time.Second); exp != 60*time.Millisecond {
		t.Fatalf("expected %v", exp)
	}
	if _, err := s.Acquire(context.Background(), 60*time.Second); err != nil {
		t.Fatalf("with timeout %v: %v", o.Timeout, err)
	}
}

func TestHaltDuringAcquire(t *testing.T) {
	p := serialtest.NewPeer(t)
	f := &fakeRaman{p: p, slow: true, block: func() string { return makeBlock(801, nil) }}
	t.Cleanup(func() {
		f.mu.Lock()
		f.closed = true
		if f.acquiring != nil {
			f.acquiring.Stop()
		}
		f.mu.Unlock()
	})
	p.Serve(serialtest.SplitOn([]byte("\r\n")), f.handle)
	o := testOpts()
	o.TimeScale = 1 // a 10 s acquisition in wall-clock time
	o.Transfer = time.Second
	s, err := raman.Open(p.Path(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { _, err := s.Acquire(context.Background(), 10*time.Second); done <- err }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := s.Halt(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("halt took %v", d)
	}
	if err := <-done; err == nil {
		t.Fatal("acquisition survived Halt")
	}
	got := f.requests()
	if len(got) < 2 || got[0] != "ACQ 10000" || got[1] != "STOP" {
		t.Fatalf("requests %q", got)
	}
	// Halt when idle.
	if err := s.Halt(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestHaltSilent(t *testing.T) {
	p := serialtest.NewPeer(t) // nobody answers
	s, err := raman.Open(p.Path(), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Halt(context.Background()); !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
}

func TestErrReplies(t *testing.T) {
	tests := []struct {
		name string
		line string
		code int
	}{
		{"unknown", "ERR 1 unknown command", raman.CodeUnknownCommand},
		{"bad argument", "ERR 2 bad argument", raman.CodeBadArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := raman.ParseBlock([]byte(tc.line+"\r\n"), 1000)
			var e *raman.Error
			if !errors.As(err, &e) || e.Code != tc.code || !errors.Is(err, device.ErrRejected) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestIdentify(t *testing.T) {
	s, _, _ := setup(t)
	if id, err := s.Identify(context.Background()); err != nil || id != "HCP-SIM,RAMAN-532,SN0001,1.0" {
		t.Fatalf("%q, %v", id, err)
	}
}

func TestReplug(t *testing.T) {
	s, _, p := setup(t)
	p.Replace()
	var err error
	for range 5 {
		if _, err = s.Identify(context.Background()); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("after replug: %v", err)
	}
}

func TestPlayback(t *testing.T) {
	block := makeBlock(5, nil)
	rec := []serialtest.Exchange{
		{Req: "*IDN?", Reply: "HCP-SIM,RAMAN-532,SN0001,1.0\r\n"},
		{Req: "ACQ 500", Reply: block},
		{Req: "STOP", Reply: "OK\r\n"},
	}
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn([]byte("\r\n")), serialtest.NewScript(t, rec).Handler)
	s, err := raman.Open(p.Path(), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Identify(ctx); err != nil {
		t.Fatal(err)
	}
	sp, err := s.Acquire(ctx, 500*time.Millisecond)
	if err != nil || len(sp.Shift) != 5 {
		t.Fatalf("%d points, %v", len(sp.Shift), err)
	}
	if err := s.Halt(ctx); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseBlock(f *testing.F) {
	f.Add([]byte(makeBlock(3, nil)))
	f.Add([]byte(makeBlock(1, nil)))
	f.Add([]byte("ERR 3 busy\r\n"))
	f.Add([]byte("ERR x\r\n"))
	f.Add([]byte("DATA 2\r\n150.0 1\r\n150.0 2\r\nEND 00000000\r\n"))
	f.Add([]byte("DATA 1\r\n-1.5 18446744073709551615\r\nEND 00000000\r\n"))
	f.Add([]byte("DATA 0\r\nEND 00000000\r\n"))
	f.Add([]byte(strings.Replace(makeBlock(3, nil), "150.0", "150.O", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		shift, counts, err := raman.ParseBlock(b, 1000)
		if err != nil {
			if !errors.Is(err, device.ErrFrame) && !errors.Is(err, device.ErrChecksum) && !errors.Is(err, device.ErrRejected) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		// Accepted: re-render the block and compare byte for byte, and check the
		// CRC independently.
		if len(shift) == 0 || len(shift) != len(counts) {
			t.Fatalf("accepted %d shifts, %d counts", len(shift), len(counts))
		}
		s := string(b)
		lines := strings.Split(strings.TrimSuffix(s, "\r\n"), "\r\n")
		if len(lines) != len(shift)+2 || lines[0] != "DATA "+strconv.Itoa(len(shift)) {
			t.Fatalf("accepted %q", s)
		}
		var data strings.Builder
		for i := range shift {
			if i > 0 && shift[i] <= shift[i-1] {
				t.Fatalf("shifts not increasing in %q", s)
			}
			want := lines[1+i]
			ws, wc, _ := strings.Cut(want, " ")
			sv, _ := strconv.ParseFloat(ws, 64)
			cv, _ := strconv.ParseUint(wc, 10, 64)
			if sv != shift[i] || float64(cv) != counts[i] || counts[i] < 0 {
				t.Fatalf("line %q parsed as %v %v", want, shift[i], counts[i])
			}
			data.WriteString(want + "\r\n")
		}
		if end := fmt.Sprintf("END %08x", crc32.ChecksumIEEE([]byte(data.String()))); lines[len(lines)-1] != end {
			t.Fatalf("accepted %q, want %q", lines[len(lines)-1], end)
		}
	})
}
