package lane

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

func queued(l *Lane, urgent, routine int) func() bool {
	return func() bool { u, r := l.Waiting(); return u == urgent && r == routine }
}

// TestOrder: while one transaction holds the lane, three routine ones and
// then two urgent ones come; the urgent ones go next, in their order, then
// the routine ones in theirs.
func TestOrder(t *testing.T) {
	var l Lane
	l.Lock(false)
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	take := func(name string, urgent bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Lock(urgent)
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			l.Unlock()
		}()
	}
	for i, name := range []string{"r1", "r2", "r3"} {
		take(name, false)
		waitFor(t, "routine not queued", queued(&l, 0, i+1))
	}
	take("u1", true)
	waitFor(t, "urgent not queued", queued(&l, 1, 3))
	take("u2", true)
	waitFor(t, "urgent not queued", queued(&l, 2, 3))
	l.Unlock()
	wg.Wait()
	if want := []string{"u1", "u2", "r1", "r2", "r3"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if l.Busy() {
		t.Fatal("lane still busy")
	}
}

// TestNoBarging: the holder unlocks and at once asks again; the one waiting
// goes first.
func TestNoBarging(t *testing.T) {
	var l Lane
	l.Lock(false)
	got := make(chan struct{})
	go func() {
		l.Lock(false)
		close(got)
		time.Sleep(10 * time.Millisecond)
		l.Unlock()
	}()
	waitFor(t, "waiter not queued", queued(&l, 0, 1))
	l.Unlock()
	l.Lock(false)
	select {
	case <-got:
	default:
		t.Fatal("the unlocking goroutine took the lane again before the one waiting")
	}
	l.Unlock()
}

// TestLockContext: a waiter whose context ends leaves the queue with the
// context's error; the others keep their turn; a done context gets its error
// even on a free lane.
func TestLockContext(t *testing.T) {
	var l Lane
	l.Lock(false)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- l.LockContext(ctx, true) }()
	waitFor(t, "urgent not queued", queued(&l, 1, 0))
	done := make(chan struct{})
	go func() { l.Lock(false); close(done) }()
	waitFor(t, "routine not queued", queued(&l, 1, 1))
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("LockContext = %v, want context.Canceled", err)
	}
	if u, r := l.Waiting(); u != 0 || r != 1 {
		t.Fatalf("waiting %d urgent, %d routine; want 0, 1", u, r)
	}
	l.Unlock()
	<-done
	l.Unlock()
	if err := l.LockContext(ctx, false); !errors.Is(err, context.Canceled) || l.Busy() {
		t.Fatalf("LockContext with a done ctx on a free lane = %v, busy %v", err, l.Busy())
	}
}

// TestExclusion: many goroutines, urgent and routine, some giving up; never
// two inside at once, and the lane ends free with nobody waiting.
func TestExclusion(t *testing.T) {
	var l Lane
	var inside atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*50*time.Microsecond)
			defer cancel()
			if i%3 == 0 {
				if l.LockContext(ctx, i%2 == 0) != nil {
					return
				}
			} else {
				l.Lock(i%2 == 0)
			}
			if n := inside.Add(1); n != 1 {
				t.Errorf("%d inside at once", n)
			}
			time.Sleep(20 * time.Microsecond)
			inside.Add(-1)
			l.Unlock()
		}()
	}
	wg.Wait()
	if u, r := l.Waiting(); u != 0 || r != 0 || l.Busy() {
		t.Fatalf("after: %d urgent, %d routine waiting, busy %v", u, r, l.Busy())
	}
}
