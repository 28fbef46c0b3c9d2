package devicetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"hcp-edge/device"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeClockTimers(t *testing.T) {
	c := NewFakeClock(t0)
	a := c.After(10 * time.Millisecond)
	b := c.After(5 * time.Millisecond)
	tk := c.NewTicker(3 * time.Millisecond)
	now := c.After(0)
	select {
	case <-now:
	default:
		t.Fatal("After(0) did not fire at once")
	}
	if c.Waiters() != 3 {
		t.Fatalf("Waiters = %d; want 3", c.Waiters())
	}
	c.Advance(4 * time.Millisecond)
	if got := <-tk.C(); !got.Equal(t0.Add(3 * time.Millisecond)) {
		t.Fatalf("tick at %v", got)
	}
	select {
	case <-b:
		t.Fatal("5 ms timer fired after 4 ms")
	default:
	}
	c.Advance(6 * time.Millisecond)
	if got := <-b; !got.Equal(t0.Add(5 * time.Millisecond)) {
		t.Fatalf("b fired at %v", got)
	}
	if got := <-a; !got.Equal(t0.Add(10 * time.Millisecond)) {
		t.Fatalf("a fired at %v", got)
	}
	if got := <-tk.C(); !got.Equal(t0.Add(6 * time.Millisecond)) {
		t.Fatalf("second tick at %v; want the first due in the Advance (6 ms)", got)
	}
	tk.Stop()
	c.Advance(time.Second)
	select {
	case <-tk.C():
		t.Fatal("stopped ticker ticked")
	default:
	}
	if !c.Now().Equal(t0.Add(1010 * time.Millisecond)) {
		t.Fatalf("Now = %v", c.Now())
	}
	tk.Reset(time.Millisecond)
	c.Advance(time.Hour) // must not loop per tick
	if _, ok := <-tk.C(); !ok || c.Waiters() != 1 {
		t.Fatal("reset ticker did not tick once")
	}
}

func TestFakeClockBlockUntil(t *testing.T) {
	c := NewFakeClock(t0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		<-c.After(time.Minute)
		close(done)
	}()
	if err := c.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	<-done
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if err := c.BlockUntil(short, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("BlockUntil with no waiters: %v", err)
	}
}

func TestRealClock(t *testing.T) {
	c := RealClock()
	tk := c.NewTicker(0) // no panic
	tk.Stop()
	<-c.After(time.Millisecond)
	if c.Now().IsZero() {
		t.Fatal("zero Now")
	}
}

func TestFakes(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"furnace heats and halts", func(t *testing.T) {
			f := NewFakeFurnace("furnace")
			f.Clock = NewFakeClock(t0)
			f.SetResponse(0.5, device.Celsius(25))
			must(t, f.SetSetpoint(ctx, device.Celsius(225)))
			must(t, f.SetHeater(ctx, true))
			st, err := f.Status(ctx)
			must(t, err)
			if got := st.ProcessValue.Celsius(); got < 124.9 || got > 125.1 || !st.At.Equal(t0) || st.OutputPower != 100 {
				t.Fatalf("status %+v; want PV 125 °C halfway, output 100 %%", st)
			}
			must(t, f.Halt(ctx))
			if f.Snapshot().HeaterEnabled || f.Halted() != 1 {
				t.Fatal("Halt did not disable the heater")
			}
			if err := f.SetSetpoint(ctx, device.Celsius(1500)); !errors.Is(err, device.ErrOutOfRange) {
				t.Fatalf("SetSetpoint(1500 °C): %v", err)
			}
			f.SetAlarms(device.AlarmSensorBreak)
			if _, err := f.Status(ctx); !errors.Is(err, device.ErrSensor) {
				t.Fatalf("Status with sensor break: %v", err)
			}
			want := []string{"SetSetpoint", "SetHeater", "Status", "Halt", "SetSetpoint", "Status"}
			checkCalls(t, f.Calls(), want)
		}},
		{"furnace settable", func(t *testing.T) {
			f := NewFakeFurnace("furnace")
			f.SetProcessValue(device.Celsius(700))
			must(t, f.KickWatchdog(ctx))
			st, err := f.Status(ctx)
			must(t, err)
			if st.ProcessValue != device.Celsius(700) || f.Count("KickWatchdog") != 1 {
				t.Fatalf("status %+v", st)
			}
			if err := f.SetRampRate(ctx, -1); !errors.Is(err, device.ErrOutOfRange) {
				t.Fatalf("SetRampRate(-1): %v", err)
			}
		}},
		{"flow", func(t *testing.T) {
			f := NewFakeFlow("mfc-ar", "Ar", device.SCCM(500))
			must(t, f.SetFlow(ctx, device.SCCM(25)))
			st, err := f.ReadFlow(ctx)
			must(t, err)
			if st.Flow != device.SCCM(25) || st.Setpoint != device.SCCM(25) || st.Gas != "Ar" {
				t.Fatalf("status %+v", st)
			}
			over := device.SCCM(600)
			f.SetMeasured(&over)
			f.SetFlags("MOV")
			st, _ = f.ReadFlow(ctx)
			if st.Flow != over || len(st.Flags) != 1 {
				t.Fatalf("status %+v; want the override", st)
			}
			for _, bad := range []device.Flow{-1, 501, device.Flow(nan())} {
				if err := f.SetFlow(ctx, bad); !errors.Is(err, device.ErrOutOfRange) {
					t.Fatalf("SetFlow(%v): %v", bad, err)
				}
			}
			must(t, f.Halt(ctx))
			if f.Setpoint() != 0 || f.FullScale() != device.SCCM(500) {
				t.Fatal("Halt did not zero the setpoint")
			}
		}},
		{"gauge", func(t *testing.T) {
			g := NewFakeGauge("gauge")
			g.SetReading(0.01*device.Millibar, device.GaugeUnderrange)
			r, err := g.ReadPressure(ctx)
			if err != nil || r.Status != device.GaugeUnderrange {
				t.Fatalf("reading %+v, %v", r, err)
			}
			g.SetReading(0, device.GaugeSensorError)
			if _, err := g.ReadPressure(ctx); !errors.Is(err, device.ErrSensor) {
				t.Fatalf("sensor error: %v", err)
			}
			must(t, g.Halt(ctx))
		}},
		{"switch", func(t *testing.T) {
			s := NewFakeSwitch("relay", false)
			must(t, s.Set(ctx, true))
			if on, err := s.State(ctx); err != nil || !on {
				t.Fatalf("State = %t, %v", on, err)
			}
			must(t, s.Halt(ctx))
			if s.Level() || s.SafeState() {
				t.Fatal("Halt did not reach the safe state")
			}
			s.Stick(true)
			if err := s.Halt(ctx); !errors.Is(err, device.ErrReadback) {
				t.Fatalf("Halt of a welded relay: %v", err)
			}
			s.Unstick()
			must(t, s.Halt(ctx))
			if s.Halted() != 3 {
				t.Fatalf("Halted = %d; want 3", s.Halted())
			}
		}},
		{"input", func(t *testing.T) {
			in := NewFakeInput("estop", false)
			in.Set(true)
			if v, err := in.Read(ctx); err != nil || !v || in.String() != "estop" {
				t.Fatalf("Read = %t, %v", v, err)
			}
		}},
		{"spectrometer", func(t *testing.T) {
			s := NewFakeSpectrometer("raman")
			sp, err := s.Acquire(ctx, time.Second)
			if err != nil || len(sp.Shift) != 801 || len(sp.Counts) != 801 || sp.Integration != time.Second {
				t.Fatalf("spectrum %d points, %v", len(sp.Shift), err)
			}
			s.SetSpectrum([]float64{385, 405}, []float64{10, 20})
			sp, _ = s.Acquire(ctx, time.Millisecond)
			if len(sp.Shift) != 2 {
				t.Fatal("SetSpectrum ignored")
			}
			if _, err := s.Acquire(ctx, 0); !errors.Is(err, device.ErrOutOfRange) {
				t.Fatalf("Acquire(0): %v", err)
			}
			must(t, s.Halt(ctx))
		}},
		{"injected error and done context", func(t *testing.T) {
			s := NewFakeSwitch("valve", false)
			boom := errors.New("boom")
			s.SetErr("Halt", boom)
			if err := s.Halt(ctx); !errors.Is(err, boom) || s.Halted() != 1 {
				t.Fatalf("Halt: %v (halted %d)", err, s.Halted())
			}
			s.SetErr("Halt", nil)
			must(t, s.Halt(ctx))
			done, cancel := context.WithCancel(ctx)
			cancel()
			if err := s.Set(done, true); !errors.Is(err, device.ErrTimeout) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Set with a done context: %v", err)
			}
			if s.Level() {
				t.Fatal("a failed Set changed the level")
			}
			s.ResetCalls()
			if len(s.Calls()) != 0 {
				t.Fatal("ResetCalls left calls")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func nan() float64 { var z float64; return z / z }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func checkCalls(t *testing.T, calls []Call, want []string) {
	t.Helper()
	var got []string
	for _, c := range calls {
		got = append(got, c.Method)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls %v; want %v", got, want)
	}
}

// spyTB records Errorf instead of failing the test, to test Playback's failures.
type spyTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (s *spyTB) Helper() {}
func (s *spyTB) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

func TestPlayback(t *testing.T) {
	frames := []Frame{
		{W: []byte("A\r"), R: []byte("A +014.70\r")},
		{W: []byte("AS25\r"), R: []byte("A +025.00\r")},
		{W: []byte("AVE\r")}, // silent
	}
	tests := []struct {
		name     string
		writes   []string
		chunk    int
		wantRead string
		wantErr  error // from a write
		closeErr error
	}{
		{"whole frames", []string{"A\r", "AS25\r", "AVE\r"}, 0, "A +014.70\rA +025.00\r", nil, nil},
		{"writes in pieces", []string{"A", "\rAS", "25\rAVE\r"}, 0, "A +014.70\rA +025.00\r", nil, nil},
		{"reads in pieces", []string{"A\r", "AS25\r", "AVE\r"}, 3, "A +014.70\rA +025.00\r", nil, nil},
		{"unexpected write", []string{"B\r"}, 0, "", ErrUnexpectedWrite, ErrUnconsumed},
		{"frames left", []string{"A\r"}, 0, "A +014.70\r", nil, ErrUnconsumed},
		{"write past the end", []string{"A\r", "AS25\r", "AVE\r", "x"}, 0, "A +014.70\rA +025.00\r", ErrUnexpectedWrite, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spy := &spyTB{TB: t}
			p := NewPlayback(spy, frames...)
			p.ReadChunk = tt.chunk
			var werr error
			for _, w := range tt.writes {
				if _, err := p.Write([]byte(w)); err != nil {
					werr = err
					break
				}
			}
			if !errors.Is(werr, tt.wantErr) || (werr == nil) != (tt.wantErr == nil) {
				t.Fatalf("write error %v; want %v", werr, tt.wantErr)
			}
			var got bytes.Buffer
			buf := make([]byte, 64)
			for {
				n, err := p.Read(buf)
				got.Write(buf[:n])
				if tt.chunk > 0 && n > tt.chunk {
					t.Fatalf("Read returned %d bytes; chunk %d", n, tt.chunk)
				}
				if errors.Is(err, ErrNoResponse) {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatal("ErrNoResponse does not wrap os.ErrDeadlineExceeded")
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if got.String() != tt.wantRead {
				t.Fatalf("read %q; want %q", got.String(), tt.wantRead)
			}
			cerr := p.Close()
			if !errors.Is(cerr, tt.closeErr) || (cerr == nil) != (tt.closeErr == nil) {
				t.Fatalf("Close: %v; want %v", cerr, tt.closeErr)
			}
			wantFailures := 0
			if tt.wantErr != nil {
				wantFailures++
			}
			if tt.closeErr != nil {
				wantFailures++
			}
			if len(spy.errs) != wantFailures {
				t.Fatalf("test failures reported %q; want %d", spy.errs, wantFailures)
			}
			if _, err := p.Write([]byte("A\r")); !errors.Is(err, device.ErrClosed) {
				t.Fatalf("Write after Close: %v", err)
			}
		})
	}
}

func TestPlaybackUnreadAndUnsolicited(t *testing.T) {
	spy := &spyTB{TB: t}
	p := NewPlayback(spy, Frame{R: []byte("HELLO\r")}, Frame{W: []byte("X"), R: []byte("Y")})
	buf := make([]byte, 6)
	if n, err := p.Read(buf); err != nil || string(buf[:n]) != "HELLO\r" {
		t.Fatalf("unsolicited read %q, %v", buf[:n], err)
	}
	if _, err := p.Write([]byte("X")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); !errors.Is(err, ErrUnconsumed) {
		t.Fatalf("Close with unread bytes: %v", err)
	}
	p2 := NewPlayback(nil, Frame{W: []byte("X"), R: []byte("Y")})
	p2.AllowUnread = true
	p2.Write([]byte("X"))
	if err := p2.Close(); err != nil {
		t.Fatalf("Close with AllowUnread: %v", err)
	}
}

// echoInstrument answers each CR-terminated command with "OK <cmd>\r".
type echoInstrument struct{ out bytes.Buffer }

func (e *echoInstrument) Write(b []byte) (int, error) {
	e.out.WriteString("OK " + string(b))
	return len(b), nil
}
func (e *echoInstrument) Read(b []byte) (int, error) {
	if e.out.Len() == 0 {
		return 0, io.EOF
	}
	return e.out.Read(b)
}

func TestRecordThenPlayback(t *testing.T) {
	rec := NewRecord(&echoInstrument{})
	exchange := func(rw io.ReadWriter) string {
		var got bytes.Buffer
		for _, cmd := range []string{"PR1\r", "UNI\r"} {
			if _, err := io.WriteString(rw, cmd); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 3) // read in pieces
			for n := 0; n < len("OK ")+len(cmd); {
				k, err := rw.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				got.Write(buf[:k])
				n += k
			}
		}
		return got.String()
	}
	want := exchange(rec)
	frames := rec.Frames()
	if len(frames) != 2 || string(frames[0].W) != "PR1\r" || string(frames[0].R) != "OK PR1\r" {
		t.Fatalf("recorded %q", frames)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	p := NewPlayback(t, frames...)
	if got := exchange(p); got != want {
		t.Fatalf("playback %q; recorded %q", got, want)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
