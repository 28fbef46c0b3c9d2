package gpio

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"hcp-edge/device"
	"hcp-edge/device/devicetest"
)

// hang is a generous guard against hangs, not a timing assertion.
const hang = 5 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	return ctx
}

func setLevel(p *gpiotest.Pin, l pgpio.Level) {
	p.Lock()
	p.L = l
	p.Unlock()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func recv(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		return ev
	case <-time.After(hang):
		t.Fatal("no event")
	}
	return Event{}
}

func TestInputReadUnstarted(t *testing.T) {
	tests := []struct {
		name      string
		activeLow bool
		level     pgpio.Level
		want      bool
	}{
		{"active-low pressed", true, pgpio.Low, true},
		{"active-low released", true, pgpio.High, false},
		{"active-high on", false, pgpio.High, true},
		{"active-high off", false, pgpio.Low, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &gpiotest.Pin{N: "estop", EdgesChan: make(chan pgpio.Level)}
			opts := DefaultInputOpts("estop")
			opts.ActiveLow, opts.Debounce = tt.activeLow, 0
			in, err := NewInput(p, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			setLevel(p, tt.level)
			got, err := in.Read(testCtx(t))
			if err != nil || got != tt.want {
				t.Fatalf("Read = %t, %v; want %t", got, err, tt.want)
			}
		})
	}
}

func TestInputReadDebouncedUnstarted(t *testing.T) {
	clk := devicetest.NewFakeClock(time.Unix(0, 0))
	p := &gpiotest.Pin{N: "leak", EdgesChan: make(chan pgpio.Level), L: pgpio.Low}
	opts := DefaultInputOpts("leak")
	opts.Clock, opts.Debounce = clk, 20*time.Millisecond
	in, err := NewInput(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	type res struct {
		v   bool
		err error
	}
	done := make(chan res, 1)
	go func() {
		v, err := in.Read(testCtx(t))
		done <- res{v, err}
	}()
	for step := 0; ; step++ {
		var r res
		got := false
		waitFor(t, "armed timer or result", func() bool {
			select {
			case r = <-done:
				got = true
				return true
			default:
				return clk.Waiters() >= 1
			}
		})
		if got {
			if r.err != nil || !r.v {
				t.Fatalf("Read = %t, %v; want true", r.v, r.err)
			}
			// Samples at 5, 10 (bounce High), 15 (Low again), 20, 25, 30, 35 ms:
			// the level has held 20 ms from 15 ms on after the 7th Advance.
			if step != 7 {
				t.Fatalf("Read returned after %d Advances of 5 ms; want 7", step)
			}
			return
		}
		if step == 1 {
			setLevel(p, pgpio.High) // a bounce restarts the debounce
		}
		if step == 2 {
			setLevel(p, pgpio.Low)
		}
		clk.Advance(5 * time.Millisecond)
	}
}

func TestInputWatcherDebounces(t *testing.T) {
	clk := devicetest.NewFakeClock(time.Unix(0, 0))
	p := &gpiotest.Pin{N: "estop", EdgesChan: make(chan pgpio.Level), L: pgpio.High}
	opts := DefaultInputOpts("estop")
	opts.Clock, opts.Wait = clk, 5*time.Millisecond
	in, err := NewInput(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx := testCtx(t)
	if err := in.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ch, cancel := in.Subscribe()
	defer cancel()
	if v, err := in.Read(ctx); err != nil || v {
		t.Fatalf("initial Read = %t, %v; want false", v, err)
	}

	// A bounce: Low then back High before the debounce time has passed.
	p.EdgesChan <- pgpio.Low
	waitFor(t, "pending Low", in.pending)
	p.EdgesChan <- pgpio.High
	waitFor(t, "bounce discarded", func() bool { return !in.pending() })
	clk.Advance(time.Second)
	if v, _ := in.Read(ctx); v {
		t.Fatal("a bounce was reported as pressed")
	}

	// A real press: Low held for the debounce time.
	p.EdgesChan <- pgpio.Low
	waitFor(t, "pending Low", in.pending)
	clk.Advance(20 * time.Millisecond)
	ev := recv(t, ch)
	if !ev.Active || ev.Err != nil {
		t.Fatalf("event %+v; want active", ev)
	}
	if v, err := in.Read(ctx); err != nil || !v {
		t.Fatalf("Read = %t, %v; want true", v, err)
	}
	select {
	case ev := <-ch:
		t.Fatalf("unexpected second event %+v (the bounce must not be reported)", ev)
	default:
	}
}

func TestInputNewestStateNotLost(t *testing.T) {
	p := &gpiotest.Pin{N: "leak", EdgesChan: make(chan pgpio.Level), L: pgpio.High}
	opts := DefaultInputOpts("leak")
	opts.Debounce, opts.Wait = 0, 5*time.Millisecond
	in, err := NewInput(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx := testCtx(t)
	if err := in.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ch, cancel := in.Subscribe()
	defer cancel()
	for _, l := range []pgpio.Level{pgpio.Low, pgpio.High, pgpio.Low} {
		p.EdgesChan <- l
		want := l == pgpio.Low
		waitFor(t, "state "+l.String(), func() bool { v, _ := in.Read(ctx); return v == want })
	}
	// The subscriber never read: it holds only the newest state.
	if ev := recv(t, ch); !ev.Active {
		t.Fatalf("event %+v; want the newest state (active)", ev)
	}
	select {
	case ev := <-ch:
		t.Fatalf("stale event %+v", ev)
	default:
	}
}

func TestInputPollsWithoutEdges(t *testing.T) {
	// gpiotest.Pin refuses edge detection without EdgesChan: the Input polls.
	p := &gpiotest.Pin{N: "door", L: pgpio.Low}
	opts := DefaultInputOpts("door")
	opts.ActiveLow, opts.Debounce, opts.Wait = false, 0, 2*time.Millisecond
	in, err := NewInput(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := in.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ch, cancel := in.Subscribe()
	defer cancel()
	setLevel(p, pgpio.High)
	if ev := recv(t, ch); !ev.Active {
		t.Fatalf("event %+v; want active", ev)
	}
}

// flakyPin is a PinIn whose reads go over a link that can fail.
type flakyPin struct {
	gpiotest.Pin
	mu  sync.Mutex
	err error
}

func (f *flakyPin) ReadContext(ctx context.Context) (pgpio.Level, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return pgpio.Low, f.err
	}
	return f.Read(), nil
}

func (f *flakyPin) setErr(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func TestInputReadErrors(t *testing.T) {
	p := &flakyPin{Pin: gpiotest.Pin{N: "estop", L: pgpio.High}}
	opts := DefaultInputOpts("estop")
	opts.Debounce, opts.Wait = 0, 2*time.Millisecond
	in, err := NewInput(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx := testCtx(t)
	if err := in.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ch, cancel := in.Subscribe()
	defer cancel()

	p.setErr(device.ErrTimeout)
	ev := recv(t, ch)
	if !errors.Is(ev.Err, device.ErrTimeout) {
		t.Fatalf("event %+v; want an error wrapping ErrTimeout", ev)
	}
	if _, err := in.Read(ctx); !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("Read error %v; want ErrTimeout", err)
	}
	p.setErr(nil)
	if ev := recv(t, ch); ev.Err != nil || ev.Active {
		t.Fatalf("recovery event %+v; want inactive, no error", ev)
	}
	if _, err := in.Read(ctx); err != nil {
		t.Fatalf("Read after recovery: %v", err)
	}
}

func TestInputClose(t *testing.T) {
	p := &gpiotest.Pin{N: "estop", EdgesChan: make(chan pgpio.Level), L: pgpio.High}
	in, err := NewInput(p, DefaultInputOpts("estop"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if err := in.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := in.Start(ctx); err == nil {
		t.Fatal("second Start succeeded")
	}
	ch, _ := in.Subscribe()
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; ok {
		t.Fatal("subscription not closed by Close")
	}
	if _, err := in.Read(ctx); !errors.Is(err, device.ErrClosed) {
		t.Fatalf("Read after Close: %v; want ErrClosed", err)
	}
	if err := in.Start(ctx); !errors.Is(err, device.ErrClosed) {
		t.Fatalf("Start after Close: %v; want ErrClosed", err)
	}
	if err := in.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, ok := <-func() <-chan Event { c, _ := in.Subscribe(); return c }(); ok {
		t.Fatal("Subscribe after Close returned an open channel")
	}
}

func TestNewInputRejects(t *testing.T) {
	good := func() InputOpts { return DefaultInputOpts("x") }
	tests := []struct {
		name string
		pin  pgpio.PinIn
		opts func() InputOpts
	}{
		{"nil pin", nil, good},
		{"zero wait", &gpiotest.Pin{N: "x"}, func() InputOpts { o := good(); o.Wait = 0; return o }},
		{"negative debounce", &gpiotest.Pin{N: "x"}, func() InputOpts { o := good(); o.Debounce = -1; return o }},
		{"bad pin", pgpio.INVALID, good},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewInput(tt.pin, tt.opts()); err == nil {
				t.Fatal("NewInput succeeded")
			}
		})
	}
}

func TestInputContextDone(t *testing.T) {
	p := &gpiotest.Pin{N: "estop", L: pgpio.High}
	in, err := NewInput(p, DefaultInputOpts("estop"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := in.Read(ctx); !errors.Is(err, device.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a done context: %v; want ErrTimeout and context.Canceled", err)
	}
}
