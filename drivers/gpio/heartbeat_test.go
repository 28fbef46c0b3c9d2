package gpio

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"hcp-edge/device"
	"hcp-edge/device/devicetest"
)

// beatPin is a periph gpiotest.Pin that records every write on a channel and
// fails while failing is set.
type beatPin struct {
	gpiotest.Pin
	writes chan pgpio.Level

	mu      sync.Mutex
	failing error
}

func newBeatPin() *beatPin {
	return &beatPin{Pin: gpiotest.Pin{N: "heartbeat"}, writes: make(chan pgpio.Level, 64)}
}

func (b *beatPin) Out(l pgpio.Level) error {
	b.mu.Lock()
	err := b.failing
	b.mu.Unlock()
	if err != nil {
		return err
	}
	_ = b.Pin.Out(l)
	b.writes <- l
	return nil
}

func (b *beatPin) fail(err error) {
	b.mu.Lock()
	b.failing = err
	b.mu.Unlock()
}

// next returns the next write, failing the test if none comes.
func (b *beatPin) next(t *testing.T) pgpio.Level {
	t.Helper()
	select {
	case l := <-b.writes:
		return l
	case <-time.After(5 * time.Second):
		t.Fatal("no write")
		return pgpio.Low
	}
}

// none fails the test if a write arrives within d.
func (b *beatPin) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case l := <-b.writes:
		t.Fatalf("unexpected write %v", l)
	case <-time.After(d):
	}
}

// advance moves the fake clock by d once the heartbeat has armed its timer.
func advance(t *testing.T, clk *devicetest.FakeClock, armed int, d time.Duration) {
	t.Helper()
	if err := clk.BlockUntil(testCtx(t), armed); err != nil {
		t.Fatal("the heartbeat armed no timer:", err)
	}
	clk.Advance(d)
}

func TestHeartbeatToggles(t *testing.T) {
	pin := newBeatPin()
	clk := devicetest.NewFakeClock(time.Unix(0, 0))
	o := DefaultHeartbeatOpts("hb")
	o.Clock = clk
	h, err := NewHeartbeat(pin, o)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Start(testCtx(t), 250*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Start: Low then High, an edge whatever the line was, before it returns.
	if a, b := pin.next(t), pin.next(t); a != pgpio.Low || b != pgpio.High {
		t.Fatalf("start wrote %v, %v; want Low, High", a, b)
	}
	want := pgpio.Low
	for i := 0; i < 6; i++ {
		advance(t, clk, 1, 249*time.Millisecond)
		pin.none(t, 20*time.Millisecond)
		clk.Advance(time.Millisecond)
		if got := pin.next(t); got != want {
			t.Fatalf("beat %d wrote %v; want %v", i, got, want)
		}
		want = !want
	}
	// The pin records a write before Out returns, and the goroutine counts
	// it after: once it has armed the next beat's timer, the count is done.
	if err := clk.BlockUntil(testCtx(t), 1); err != nil {
		t.Fatal("the heartbeat armed no timer after its sixth beat:", err)
	}
	if s := h.Stats(); s.Beats != 7 || s.Failures != 0 || !s.Running || !s.LastBeat.Equal(time.Unix(0, 0).Add(6*250*time.Millisecond)) {
		t.Fatalf("stats %+v", s)
	}
}

func TestHeartbeatCloseStopsAndWaits(t *testing.T) {
	pin := newBeatPin()
	clk := devicetest.NewFakeClock(time.Unix(0, 0))
	o := DefaultHeartbeatOpts("hb")
	o.Clock = clk
	h, _ := NewHeartbeat(pin, o)
	if err := h.Start(testCtx(t), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	pin.next(t)
	pin.next(t)
	if err := h.Start(testCtx(t), 100*time.Millisecond); err == nil {
		t.Fatal("second Start succeeded")
	}
	if err := clk.BlockUntil(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if h.Stats().Running {
		t.Fatal("running after Close returned")
	}
	clk.Advance(time.Second)
	pin.none(t, 50*time.Millisecond)
	if err := h.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := h.Start(testCtx(t), 100*time.Millisecond); !errors.Is(err, device.ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

func TestHeartbeatStopsWithItsContext(t *testing.T) {
	pin := newBeatPin()
	h, _ := NewHeartbeat(pin, DefaultHeartbeatOpts("hb"))
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.Start(ctx, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	pin.next(t)
	pin.next(t)
	pin.next(t) // the goroutine beats on the real clock
	cancel()
	waitFor(t, "the goroutine to stop", func() bool { return !h.Stats().Running })
	for len(pin.writes) > 0 {
		<-pin.writes
	}
	pin.none(t, 50*time.Millisecond)
}

func TestHeartbeatWriteFailures(t *testing.T) {
	pin := newBeatPin()
	clk := devicetest.NewFakeClock(time.Unix(0, 0))
	var logs bytes.Buffer
	errs := make(chan error, 16)
	o := DefaultHeartbeatOpts("hb")
	o.Clock = clk
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	o.OnError = func(err error) { errs <- err }
	h, _ := NewHeartbeat(pin, o)
	defer h.Close()
	if err := h.Start(testCtx(t), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	pin.next(t)
	pin.next(t) // High
	broken := errors.New("line broken")
	pin.fail(broken)
	for i := 0; i < 3; i++ {
		advance(t, clk, 1, 100*time.Millisecond)
		select {
		case err := <-errs:
			if !errors.Is(err, broken) || !strings.Contains(err.Error(), "hb: write") {
				t.Fatalf("OnError got %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("OnError not called")
		}
	}
	if s := h.Stats(); s.Failures != 3 || !errors.Is(s.LastErr, broken) || s.Beats != 1 || !s.Running {
		t.Fatalf("stats %+v", s)
	}
	pin.fail(nil)
	advance(t, clk, 1, 100*time.Millisecond)
	// The failed edge is retried: the first write after recovery is Low.
	if got := pin.next(t); got != pgpio.Low {
		t.Fatalf("after recovery wrote %v; want Low (the edge that failed)", got)
	}
	waitFor(t, "the recovery to be counted", func() bool { return h.Stats().Beats == 2 })
	if s := h.Stats(); s.LastErr != nil {
		t.Fatalf("LastErr %v after a success", s.LastErr)
	}
	if n := strings.Count(logs.String(), "heartbeat write failed"); n != 1 {
		t.Fatalf("%d failure warnings for one run of failures; logs:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "heartbeat writes succeed again") {
		t.Fatalf("no recovery notice; logs:\n%s", logs.String())
	}
}

func TestHeartbeatStartFailure(t *testing.T) {
	pin := newBeatPin()
	broken := errors.New("no line")
	pin.fail(broken)
	h, _ := NewHeartbeat(pin, DefaultHeartbeatOpts("hb"))
	defer h.Close()
	if err := h.Start(testCtx(t), 10*time.Millisecond); !errors.Is(err, broken) {
		t.Fatalf("Start on a broken line: %v", err)
	}
	if s := h.Stats(); s.Running || s.Failures != 1 {
		t.Fatalf("stats after a failed Start %+v", s)
	}
	pin.fail(nil)
	if err := h.Start(testCtx(t), 10*time.Millisecond); err != nil {
		t.Fatalf("Start again once the line works: %v", err)
	}
	if !h.Stats().Running {
		t.Fatal("not running")
	}
}

func TestHeartbeatRejects(t *testing.T) {
	if _, err := NewHeartbeat(nil, DefaultHeartbeatOpts("hb")); !errors.Is(err, device.ErrOutOfRange) {
		t.Fatalf("nil pin: %v", err)
	}
	o := DefaultHeartbeatOpts("hb")
	o.IOTimeout = -1
	if _, err := NewHeartbeat(newBeatPin(), o); !errors.Is(err, device.ErrOutOfRange) {
		t.Fatalf("negative IOTimeout: %v", err)
	}
	h, _ := NewHeartbeat(newBeatPin(), DefaultHeartbeatOpts(""))
	defer h.Close()
	if h.String() != "heartbeat" {
		t.Fatalf("default name %q", h.String())
	}
	for _, p := range []time.Duration{0, -time.Second, MinHeartbeatPeriod - 1} {
		if err := h.Start(testCtx(t), p); !errors.Is(err, device.ErrOutOfRange) {
			t.Fatalf("period %v: %v", p, err)
		}
	}
}

// blockingPin is a ContextWriter whose writes block until their context ends.
type blockingPin struct {
	gpiotest.Pin
	block   chan struct{} // closed: writes block
	entered chan struct{}
}

func (b *blockingPin) OutContext(ctx context.Context, l pgpio.Level) error {
	select {
	case <-b.block:
		select {
		case b.entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	default:
		return b.Pin.Out(l)
	}
}

func TestHeartbeatCloseCutsAWriteShort(t *testing.T) {
	pin := &blockingPin{Pin: gpiotest.Pin{N: "heartbeat"}, block: make(chan struct{}), entered: make(chan struct{}, 1)}
	o := DefaultHeartbeatOpts("hb")
	o.IOTimeout = time.Hour
	errs := make(chan error, 4)
	o.OnError = func(err error) { errs <- err }
	h, _ := NewHeartbeat(pin, o)
	if err := h.Start(testCtx(t), 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	close(pin.block)
	select {
	case <-pin.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no write began")
	}
	done := make(chan struct{})
	go func() { _ = h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not cut the blocked write short")
	}
	if len(errs) != 0 {
		t.Fatalf("a write stopped by Close was reported: %v", <-errs)
	}
}

func TestHeartbeatIOTimeoutBoundsAWrite(t *testing.T) {
	pin := &blockingPin{Pin: gpiotest.Pin{N: "heartbeat"}, block: make(chan struct{}), entered: make(chan struct{}, 1)}
	o := DefaultHeartbeatOpts("hb")
	o.IOTimeout = 20 * time.Millisecond
	errs := make(chan error, 4)
	o.OnError = func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	h, _ := NewHeartbeat(pin, o)
	defer h.Close()
	if err := h.Start(testCtx(t), 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	close(pin.block)
	select {
	case err := <-errs:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("OnError got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write blocked past IOTimeout was not reported")
	}
}
