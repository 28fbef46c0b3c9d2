package serialline_test

import (
	"bytes"
	"context"
	"errors"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"go.bug.st/serial"

	"hcp-edge/device"
	"hcp-edge/drivers/serialline"
	"hcp-edge/drivers/serialline/serialtest"
)

var cr = []byte("\r")

func echo(req []byte) []byte { return append([]byte("re:"+string(req)), '\r') }

func openLine(t *testing.T, p *serialtest.Peer) *serialline.Line {
	t.Helper()
	o := serialline.DefaultOpts()
	o.Name = "test-line"
	o.Timeout = 300 * time.Millisecond
	o.MaxFrame = 32
	l, err := serialline.Open(p.Path(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func ask(ctx context.Context, l *serialline.Line, cmd string) (string, error) {
	var out string
	err := l.Do(ctx, func(tx *serialline.Tx) error {
		if err := tx.Write(ctx, []byte(cmd+"\r")); err != nil {
			return err
		}
		b, err := tx.ReadUntil(ctx, cr)
		out = string(b)
		return err
	})
	return out, err
}

func TestRoundTrip(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), echo)
	l := openLine(t, p)
	for i := 0; i < 20; i++ {
		got, err := ask(context.Background(), l, "hello")
		if err != nil || got != "re:hello" {
			t.Fatalf("ask = %q, %v", got, err)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		handler serialtest.Handler
		want    error
	}{
		{"silence", func([]byte) []byte { return nil }, device.ErrTimeout},
		{"no terminator", func([]byte) []byte { return []byte("partial") }, device.ErrTimeout},
		{"too long", func([]byte) []byte { return bytes.Repeat([]byte("x"), 100) }, device.ErrFrame},
		{"too long with terminator", func([]byte) []byte { return append(bytes.Repeat([]byte("x"), 40), '\r') }, device.ErrFrame},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := serialtest.NewPeer(t)
			p.Serve(serialtest.SplitOn(cr), tc.handler)
			l := openLine(t, p)
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := ask(ctx, l, "x")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("took %v: the deadline did not reach the read", d)
			}
			// The line still works once the peer behaves.
			p.SetHandler(echo)
			if got, err := ask(context.Background(), l, "again"); err != nil || got != "re:again" {
				t.Fatalf("after error: %q, %v", got, err)
			}
		})
	}
}

func TestDefaultTimeoutWithoutDeadline(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), func([]byte) []byte { return nil })
	l := openLine(t, p)
	start := time.Now()
	_, err := ask(context.Background(), l, "x")
	if !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestCancelStopsRead(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), func([]byte) []byte { return nil })
	l := openLine(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	_, err := ask(ctx, l, "x")
	if !errors.Is(err, context.Canceled) || errors.Is(err, device.ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestStaleInputDiscarded(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), echo)
	l := openLine(t, p)
	p.Write([]byte("stale reply\r"))
	time.Sleep(20 * time.Millisecond)
	got, err := ask(context.Background(), l, "fresh")
	if err != nil || got != "re:fresh" {
		t.Fatalf("ask = %q, %v", got, err)
	}
}

func TestSeveralFramesInOneRead(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), func([]byte) []byte { return []byte("one\rtwo\rthree\r") })
	l := openLine(t, p)
	var got []string
	err := l.Do(context.Background(), func(tx *serialline.Tx) error {
		if err := tx.Write(context.Background(), []byte("x\r")); err != nil {
			return err
		}
		for range 3 {
			b, err := tx.ReadUntil(context.Background(), cr)
			if err != nil {
				return err
			}
			got = append(got, string(b))
		}
		return nil
	})
	if err != nil || strings.Join(got, ",") != "one,two,three" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestOneTransactionAtATime(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), echo)
	l := openLine(t, p)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := strings.Repeat("a", i+1)
			got, err := ask(context.Background(), l, cmd)
			if err == nil && got != "re:"+cmd {
				err = errors.New("crossed reply " + got + " for " + cmd)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestReopenAfterIOError(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), echo)
	l := openLine(t, p)
	if _, err := ask(context.Background(), l, "a"); err != nil {
		t.Fatal(err)
	}
	p.Replace()
	// The first exchange may fail on the dead pty; a later one must succeed
	// on the new one without reopening the Line by hand.
	var err error
	var got string
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		got, err = ask(ctx, l, "b")
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil || got != "re:b" {
		t.Fatalf("after replace: %q, %v", got, err)
	}
}

func TestClosed(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), func([]byte) []byte { return nil })
	l := openLine(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := ask(ctx, l, "x"); done <- err }()
	time.Sleep(30 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, device.ErrClosed) {
		t.Fatalf("in-flight: %v, want ErrClosed", err)
	}
	if _, err := ask(ctx, l, "x"); !errors.Is(err, device.ErrClosed) {
		t.Fatalf("after close: %v, want ErrClosed", err)
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := serialline.Open(t.TempDir()+"/nope", serialline.DefaultOpts()); err == nil {
		t.Fatal("open of a missing path succeeded")
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want serial.Mode
		ok   bool
	}{
		{"8N1", "19200 8N1", serial.Mode{BaudRate: 19200, DataBits: 8, Parity: serial.NoParity, StopBits: serial.OneStopBit}, true},
		{"8E1", "19200 8E1", serial.Mode{BaudRate: 19200, DataBits: 8, Parity: serial.EvenParity, StopBits: serial.OneStopBit}, true},
		{"7O2", "9600 7O2", serial.Mode{BaudRate: 9600, DataBits: 7, Parity: serial.OddParity, StopBits: serial.TwoStopBits}, true},
		{"empty", "", serial.Mode{}, false},
		{"bad baud", "fast 8N1", serial.Mode{}, false},
		{"bad bits", "9600 9N1", serial.Mode{}, false},
		{"bad parity", "9600 8X1", serial.Mode{}, false},
		{"bad stop", "9600 8N3", serial.Mode{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := serialline.ParseMode(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseMode(%q) = %+v, %v", tc.in, got, err)
			}
		})
	}
}

// TestLateReplyNotTakenForTheNext: a reply that comes after its
// transaction timed out is discarded by the next transaction's settling,
// not read as that transaction's answer.
func TestLateReplyNotTakenForTheNext(t *testing.T) {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn(cr), func(req []byte) []byte {
		if string(req) == "slow" {
			time.Sleep(350 * time.Millisecond) // the asker gives up at 300 ms
		}
		return echo(req)
	})
	o := serialline.DefaultOpts()
	o.Timeout, o.Settle = 300*time.Millisecond, true
	l, err := serialline.Open(p.Path(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if got, err := ask(context.Background(), l, "slow"); !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("slow = %q, %v; want a timeout", got, err)
	}
	// The next transaction starts at once; "re:slow" arrives about 50 ms
	// into it, well inside the quarter of its 4 s that settling may take
	// (however slow the machine, it comes either then or before the
	// transaction starts, when the input reset drops it).
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	if got, err := ask(ctx, l, "fast"); err != nil || got != "re:fast" {
		t.Fatalf("fast = %q, %v; want re:fast (the late reply was taken for it)", got, err)
	}
	// Settled: the line answers at once again.
	start := time.Now()
	if got, err := ask(context.Background(), l, "again"); err != nil || got != "re:again" {
		t.Fatalf("again = %q, %v", got, err)
	}
	t.Logf("after settling, a transaction took %v", time.Since(start))
}

// TestWaitingReadsHoldNoThread: a read waiting for a reply parks its
// goroutine in the runtime's netpoller instead of blocking an OS thread in
// select(2) (go.bug.st/serial's Read), so the idle agent's four serial
// pollers keep no thread in a syscall and no P from the scheduler
// (docs/FOOTPRINT.md). With blocking reads, n lines waiting at once need n
// threads.
func TestWaitingReadsHoldNoThread(t *testing.T) {
	const n = 24
	lines := make([]*serialline.Line, n)
	for i := range lines {
		p := serialtest.NewPeer(t)
		p.Serve(serialtest.SplitOn(cr), func([]byte) []byte { return nil })
		lines[i] = openLine(t, p)
	}
	threads := pprof.Lookup("threadcreate")
	before := threads.Count()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, l := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := ask(ctx, l, "x")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, device.ErrTimeout) {
			t.Fatalf("silent peer: %v, want ErrTimeout", err)
		}
	}
	if grew := threads.Count() - before; grew >= n/2 {
		t.Fatalf("%d reads waiting at once created %d OS threads: the reads block threads", n, grew)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

func waiting(l *serialline.Line, urgent, routine int) func() bool {
	return func() bool { u, r := l.Waiting(); return u == urgent && r == routine }
}

// TestUrgentGoesBeforeWaitingPolls: while a poll is on the line, two routine
// polls, a routine setpoint and then an urgent write (a halt,
// device.WithUrgent) come to it; once the poll ends, the urgent write goes
// first and the routine ones follow in their order of arrival. With the
// sync.Mutex the line had before, any of them could go next, the goroutine
// that had just unlocked first.
func TestUrgentGoesBeforeWaitingPolls(t *testing.T) {
	p := serialtest.NewPeer(t)
	onLine, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // a failed test must not leave the first poll on the line
	var mu sync.Mutex
	var order []string
	p.Serve(serialtest.SplitOn(cr), func(req []byte) []byte {
		if string(req) == "poll0" {
			close(onLine)
			<-release
		}
		mu.Lock()
		order = append(order, string(req))
		mu.Unlock()
		return echo(req)
	})
	l := openLine(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	run := func(ctx context.Context, cmd string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := ask(ctx, l, cmd); err != nil || got != "re:"+cmd {
				t.Errorf("%s: %q, %v", cmd, got, err)
			}
		}()
	}
	run(ctx, "poll0")
	<-onLine
	run(ctx, "poll1")
	waitFor(t, "poll1 not waiting", waiting(l, 0, 1))
	run(ctx, "set2")
	waitFor(t, "set2 not waiting", waiting(l, 0, 2))
	run(ctx, "poll3")
	waitFor(t, "poll3 not waiting", waiting(l, 0, 3))
	run(device.WithUrgent(ctx), "halt")
	waitFor(t, "halt not waiting", waiting(l, 1, 3))
	unblock()
	wg.Wait()
	if want := []string{"poll0", "halt", "poll1", "set2", "poll3"}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("order %v, want %v", order, want)
	}
	if u, r := l.Waiting(); u != 0 || r != 0 {
		t.Fatalf("after: %d urgent, %d routine waiting", u, r)
	}
}

// TestWaitGivesUpAtTheDeadline: a transaction waiting for the line behind one
// that holds it fails with device.ErrTimeout at its own deadline, not when
// the line is free, and leaves the queue; nothing of it reaches the line.
func TestWaitGivesUpAtTheDeadline(t *testing.T) {
	p := serialtest.NewPeer(t)
	onLine, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	var mu sync.Mutex
	var got []string
	p.Serve(serialtest.SplitOn(cr), func(req []byte) []byte {
		mu.Lock()
		got = append(got, string(req))
		mu.Unlock()
		if string(req) == "slow" {
			close(onLine)
			<-release
		}
		return echo(req)
	})
	l := openLine(t, p)
	slow := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := ask(ctx, l, "slow")
		slow <- err
	}()
	<-onLine
	ctx, cancel := context.WithTimeout(device.WithUrgent(context.Background()), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ask(ctx, l, "waiter")
	if took := time.Since(start); !errors.Is(err, device.ErrTimeout) || took > 5*time.Second {
		t.Fatalf("waiter: %v after %v, want device.ErrTimeout at its deadline", err, took)
	}
	if u, r := l.Waiting(); u != 0 || r != 0 {
		t.Fatalf("after giving up: %d urgent, %d routine waiting", u, r)
	}
	unblock()
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if got, err := ask(context.Background(), l, "next"); err != nil || got != "re:next" {
		t.Fatalf("next: %q, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, ",") != "slow,next" {
		t.Fatalf("requests %q", got)
	}
}
