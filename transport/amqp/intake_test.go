package amqp_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// gate is a test Intake.
type gate struct {
	mu      sync.Mutex
	open    bool
	changed chan struct{}
}

func newGate(open bool) *gate { return &gate{open: open, changed: make(chan struct{})} }

func (g *gate) Open() (bool, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open, g.changed
}

func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open != open {
		g.open = open
		close(g.changed)
		g.changed = make(chan struct{})
	}
}

// failingEngine wraps an Engine: while fail is set, every Record fails with
// a wrapped ENOSPC (a local write failure) after the engine decided. It
// counts the redelivered commands it sees.
type failingEngine struct {
	next        tamqp.Engine
	fail        atomic.Bool
	redelivered atomic.Int64
}

func (f *failingEngine) Handle(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	if cmd.Redelivered {
		f.redelivered.Add(1)
	}
	out, err := f.next.Handle(ctx, cmd)
	if err != nil || !f.fail.Load() {
		return out, err
	}
	out.Committed = nil // the transaction will not commit: nothing starts
	out.Record = func(*bolt.Tx) ([]tamqp.Reply, error) {
		return nil, fmt.Errorf("write state.db: %w", syscall.ENOSPC)
	}
	return out, nil
}

// TestInboxIntakeAndLocalFailure: with Intake closed the inbox consumes
// nothing (the commands stay ready in the queue, no consumer); a local
// write failure holds the delivery unacked and closes intake through
// LocalError, and the delivery is handled once intake opens again; closing
// intake while consuming cancels the consumer. Nothing is nacked or
// redelivered and the connection is never dropped.
func TestInboxIntakeAndLocalFailure(t *testing.T) {
	caller := amqptest.AlphaID
	g := newGate(false)
	eng := &failingEngine{}
	c := startCalleeWrapped(t, 0, tamqp.InboxOpts{Intake: g, LocalError: func(err error) bool {
		if !errors.Is(err, syscall.ENOSPC) {
			return false
		}
		g.set(false) // as the disk watcher does
		return true
	}}, func(e tamqp.Engine) tamqp.Engine { eng.next = e; return eng })
	alpha := amqptest.Dial(t, amqptest.AlphaURL())
	ds := eventQueue(t, alpha, caller)
	edge := amqptest.Dial(t, amqptest.URL())
	q, _ := wire.CommandQueue(c.id)
	depth := func() (ready, consumers int) {
		t.Helper()
		ch, err := edge.Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st.Messages, st.Consumers
	}
	submit := func(k int) {
		for i := 0; i < k; i++ {
			env, body := submitBody(t, caller)
			publish(t, alpha, c.id, amqptest.AlphaUser, commandPublishing(env, body))
		}
	}
	replies := func(k int) {
		t.Helper()
		got := map[wire.Type]int{}
		for i := 0; i < 2*k; i++ {
			_, rep := next(t, ds, 10*time.Second)
			got[rep.Type]++
		}
		if got[wire.TypeTaskAccepted] != k || got[wire.TypeTaskCompleted] != k {
			t.Fatalf("replies %v, want %d task_accepted and %d task_completed", got, k, k)
		}
	}

	// Closed from the start: nothing consumed.
	submit(2)
	time.Sleep(500 * time.Millisecond)
	if r, n := depth(); r != 2 || n != 0 || eng.next.(*amqptest.Echo).Calls() != 0 {
		t.Fatalf("intake closed: %d ready, %d consumers; want 2, 0", r, n)
	}
	// Open, with the disk failing: the first delivery is held.
	eng.fail.Store(true)
	g.set(true)
	time.Sleep(700 * time.Millisecond)
	quiet(t, ds, 100*time.Millisecond)
	if s := c.in.Stats(); s.Held != 1 || s.Handled != 0 {
		t.Fatalf("while failing: %+v", s)
	}
	// Space returns: everything is handled, once.
	eng.fail.Store(false)
	g.set(true)
	replies(2)
	// Closed while consuming: the consumer is cancelled, commands wait.
	g.set(false)
	time.Sleep(300 * time.Millisecond)
	submit(3)
	time.Sleep(300 * time.Millisecond)
	if r, n := depth(); r != 3 || n != 0 {
		t.Fatalf("paused: %d ready, %d consumers; want 3, 0", r, n)
	}
	g.set(true)
	replies(3)
	s := c.in.Stats()
	if s.Handled != 5 || s.Paused < 1 || eng.redelivered.Load() != 0 {
		t.Fatalf("stats %+v, %d redelivered", s, eng.redelivered.Load())
	}
	if r := c.sup.State().Reconnects; r != 0 {
		t.Fatalf("%d reconnects", r)
	}
	t.Logf("stats %+v", s)
}

// TestInboxHoldMax: a local write failure that outlasts HoldMax requeues
// the held delivery, and the ones behind it at once; intake being closed,
// they wait ready in the queue (redelivered once) and are handled when it
// opens.
func TestInboxHoldMax(t *testing.T) {
	caller := amqptest.AlphaID
	g := newGate(true)
	eng := &failingEngine{}
	c := startCalleeWrapped(t, 0, tamqp.InboxOpts{Intake: g, HoldMax: 400 * time.Millisecond, Prefetch: 4,
		LocalError: func(err error) bool {
			if !errors.Is(err, syscall.ENOSPC) {
				return false
			}
			g.set(false)
			return true
		}}, func(e tamqp.Engine) tamqp.Engine { eng.next = e; return eng })
	alpha := amqptest.Dial(t, amqptest.AlphaURL())
	ds := eventQueue(t, alpha, caller)
	eng.fail.Store(true)
	for i := 0; i < 3; i++ {
		env, body := submitBody(t, caller)
		publish(t, alpha, c.id, amqptest.AlphaUser, commandPublishing(env, body))
	}
	time.Sleep(1500 * time.Millisecond)
	ch, err := amqptest.Dial(t, amqptest.URL()).Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	q, _ := wire.CommandQueue(c.id)
	st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages != 3 || st.Consumers != 0 {
		t.Fatalf("after HoldMax: %d ready, %d consumers; want 3, 0", st.Messages, st.Consumers)
	}
	eng.fail.Store(false)
	g.set(true)
	got := map[wire.Type]int{}
	for i := 0; i < 6; i++ {
		_, rep := next(t, ds, 10*time.Second)
		got[rep.Type]++
	}
	if got[wire.TypeTaskAccepted] != 3 || eng.redelivered.Load() != 3 || c.sup.State().Reconnects != 0 {
		t.Fatalf("replies %v, %d redelivered (want 3), %d reconnects", got, eng.redelivered.Load(), c.sup.State().Reconnects)
	}
}
