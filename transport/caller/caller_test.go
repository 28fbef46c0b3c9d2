package caller_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func fastBackoff() tamqp.Backoff {
	return tamqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second, Jitter: 0.2}
}

func openDB(t *testing.T) *bolt.DB {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type callee struct {
	id   string
	ob   *outbox.Outbox
	echo *amqptest.Echo
	in   *tamqp.Inbox
	sup  *tamqp.Supervisor
}

func startCallee(t *testing.T, callerID string, events int, interval time.Duration) *callee {
	t.Helper()
	conn := amqptest.Dial(t, amqptest.URL())
	c := &callee{id: amqptest.CalleeID}
	// A fresh command queue: a test without a callee (the fake-callee tests)
	// leaves its submits there, and a callee that found them would answer
	// those first (TestEndToEnd failed on the second of -count=2).
	if ch, err := conn.Channel(); err == nil {
		_, _ = ch.QueueDelete(wire.CommandQueuePrefix+c.id, false, false, false)
		_ = ch.Close()
	}
	db := openDB(t)
	var err error
	if c.ob, err = outbox.New(db, outbox.Opts{}); err != nil {
		t.Fatal(err)
	}
	c.echo = amqptest.NewEcho(c.ob, events, interval)
	c.in, err = tamqp.NewInbox(db, c.ob, c.echo, tamqp.InboxOpts{CalleeID: c.id, Logger: quietLog,
		CallerOf: func(u string) (string, bool) { return callerID, u == amqptest.AlphaUser }})
	if err != nil {
		t.Fatal(err)
	}
	c.sup, err = tamqp.NewSupervisor(c.ob, tamqp.SupervisorOpts{URL: amqptest.URL(), Backoff: fastBackoff(), Logger: quietLog,
		Declare: func(ch *amqp091.Channel) error { return tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: c.id}) },
		Workers: []tamqp.Worker{c.in.Run}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.sup.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.sup.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.echo.Close()
		c.sup.Close()
		c.ob.Close()
		cleanupQueue(t, wire.CommandQueuePrefix+c.id)
	})
	return c
}

func cleanupQueue(t *testing.T, q string) {
	conn, err := amqp091.Dial(amqptest.AlphaURL()) // the caller deletes its own queue
	if err != nil {
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		ch.QueueDelete(q, false, false, false)
	}
}

func startCaller(t *testing.T, callerID, calleeID string, opts caller.Opts) *caller.Client {
	t.Helper()
	amqptest.Dial(t, amqptest.AlphaURL()) // skips loudly (fails under make ci) without a broker
	opts.URL, opts.CallerID, opts.CalleeID = amqptest.AlphaURL(), callerID, calleeID
	opts.Backoff, opts.Logger = fastBackoff(), quietLog
	cl, err := caller.New(openDB(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Supervisor().WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		cleanupQueue(t, wire.EventQueuePrefix+callerID)
	})
	return cl
}

func submit(t *testing.T, cl *caller.Client) *caller.Task {
	t.Helper()
	task, err := cl.Submit(context.Background(), &wire.TaskSubmit{Capability: "echo", Intent: "echo", Inputs: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// collect reads a task's messages until the channel closes and checks the
// stream: task_accepted, events 1…n contiguous, task_completed.
func collect(t *testing.T, task *caller.Task, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	var got []*wire.Envelope
	for done := false; !done; {
		select {
		case env, ok := <-task.Messages():
			if !ok {
				done = true
				break
			}
			got = append(got, env)
		case <-deadline:
			t.Fatalf("stream incomplete after %v: %d messages", within, len(got))
		}
	}
	if len(got) != n+2 {
		t.Fatalf("%d messages, want %d", len(got), n+2)
	}
	if got[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("first message %s", got[0].Type)
	}
	sid, _ := task.Session()
	for i, env := range got[1 : n+1] {
		ev, err := env.Event()
		if err != nil || ev.Sequence != uint64(i+1) || *env.SessionID != sid {
			t.Fatalf("message %d: %+v %v", i+1, ev, err)
		}
	}
	if last := got[n+1]; last.Type != wire.TypeTaskCompleted || task.Final() != last {
		t.Fatalf("last message %s", last.Type)
	}
}

// TestEndToEnd: submit through the caller client, the inbox, an echo engine
// and the outbox publisher; the caller sees every message once, in order,
// with L1's routing keys and properties.
func TestEndToEnd(t *testing.T) {
	callerID := amqptest.AlphaID
	c := startCallee(t, callerID, 100, 0)
	cl := startCaller(t, callerID, c.id, caller.Opts{})
	task := submit(t, cl)
	collect(t, task, 100, 30*time.Second)
	s := cl.Stats()
	if s.PropertyViolations != 0 || s.Invalid != 0 || s.Skipped != 0 {
		t.Fatalf("caller stats %+v", s)
	}
	if c.echo.Sessions() != 1 {
		t.Fatalf("%d sessions", c.echo.Sessions())
	}
	t.Logf("caller %+v, inbox %+v", s, c.in.Stats())
}

// TestResubmitUntilAnswered: a submit sent while the callee is away is
// republished with the same message_id; the callee, once up, answers once per
// copy from its window, runs one session, and the caller delivers one answer.
func TestResubmitUntilAnswered(t *testing.T) {
	callerID := amqptest.AlphaID
	c := startCallee(t, callerID, 5, 0)
	c.sup.Close() // the callee goes away; its queue stays
	cl := startCaller(t, callerID, c.id, caller.Opts{ResubmitInterval: 100 * time.Millisecond})
	task := submit(t, cl)
	deadline := time.Now().Add(10 * time.Second)
	for cl.Stats().Resubmits < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no resubmits")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The callee comes back on the same state.
	sup, err := tamqp.NewSupervisor(c.ob, tamqp.SupervisorOpts{URL: amqptest.URL(), Backoff: fastBackoff(), Logger: quietLog,
		Declare: func(ch *amqp091.Channel) error { return tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: c.id}) },
		Workers: []tamqp.Worker{c.in.Run}})
	if err != nil {
		t.Fatal(err)
	}
	sup.Start()
	t.Cleanup(func() { sup.Close() })
	collect(t, task, 5, 20*time.Second)
	if c.echo.Sessions() != 1 {
		t.Fatalf("%d sessions for one submit", c.echo.Sessions())
	}
	if s := c.in.Stats(); s.Handled != 1 || s.Duplicates < 3 {
		t.Fatalf("inbox %+v", s)
	}
	t.Logf("caller %+v, inbox %+v", cl.Stats(), c.in.Stats())
}

// TestBrokerRestart: rabbitmqctl stop_app / start_app mid-stream; the caller
// sees every event exactly once, in order.
func TestBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the broker")
	}
	if err := amqptest.CanRestart(); err != nil {
		amqptest.MissingPeer(t, "rabbitmqctl for the local broker: "+err.Error(), "run as root or the rabbitmq user")
	}
	amqptest.HoldExclusive(t) // no other package's broker test runs while the broker is down
	callerID := amqptest.AlphaID
	const n = 300
	c := startCallee(t, callerID, n, 10*time.Millisecond)
	cl := startCaller(t, callerID, c.id, caller.Opts{})
	task := submit(t, cl)
	// Wait until the stream is under way, then restart the broker.
	got := 0
	for got < 30 {
		select {
		case _, ok := <-task.Messages():
			if !ok {
				t.Fatal("stream ended early")
			}
			got++
		case <-time.After(10 * time.Second):
			t.Fatal("stream did not start")
		}
	}
	results := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		if err := amqptest.StopApp(ctx); err != nil {
			results <- err
			return
		}
		time.Sleep(time.Second)
		results <- amqptest.StartApp(ctx, amqptest.URL())
	}()
	// Keep reading; the remaining stream must be contiguous.
	seq := uint64(got - 1) // got includes task_accepted
	var restartErr error
	restartDone := false
	deadline := time.After(55 * time.Second)
	for {
		select {
		case env, ok := <-task.Messages():
			if !ok {
				if !restartDone {
					restartErr = <-results
				}
				if restartErr != nil {
					t.Fatal(restartErr)
				}
				if seq != n || task.Final() == nil || task.Final().Type != wire.TypeTaskCompleted {
					t.Fatalf("ended at sequence %d, final %v", seq, task.Final())
				}
				st := cl.Stats()
				t.Logf("caller %+v; callee reconnects %d, caller reconnects %d", st, c.sup.State().Reconnects, cl.Supervisor().State().Reconnects)
				if c.sup.State().Reconnects == 0 {
					t.Fatal("the callee never reconnected: the restart missed the stream")
				}
				return
			}
			if env.Type == wire.TypeEvent {
				ev, _ := env.Event()
				if ev.Sequence != seq+1 {
					t.Fatalf("sequence %d after %d", ev.Sequence, seq)
				}
				seq = ev.Sequence
			}
		case restartErr = <-results:
			restartDone = true
			if restartErr != nil {
				t.Fatal(restartErr)
			}
		case <-deadline:
			t.Fatalf("stream stuck at sequence %d (callee %+v, caller %+v)", seq, c.sup.State(), cl.Supervisor().State())
		}
	}
}
