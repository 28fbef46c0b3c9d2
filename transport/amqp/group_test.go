package amqp_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// poisonEngine wraps an Engine: a task_submit whose intent is "poison" has
// a Record that fails (an engine error, not a local write failure).
type poisonEngine struct{ next tamqp.Engine }

func (p *poisonEngine) Handle(ctx context.Context, cmd tamqp.Command) (tamqp.Outcome, error) {
	out, err := p.next.Handle(ctx, cmd)
	if err != nil {
		return out, err
	}
	if ts, terr := cmd.Envelope.TaskSubmit(); terr == nil && ts.Intent == "poison" {
		out.Committed = nil
		out.Record = func(*bolt.Tx) ([]tamqp.Reply, error) { return nil, errors.New("engine: poison") }
	}
	return out, nil
}

// publishMany publishes ps on one confirming channel, pipelined.
func publishMany(t testing.TB, conn *amqp091.Connection, callee string, ps []amqp091.Publishing) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var dcs []*amqp091.DeferredConfirmation
	for _, p := range ps {
		p.UserId, p.DeliveryMode = amqptest.AlphaUser, amqp091.Persistent
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, wire.CommandsExchange, callee, false, false, p)
		if err != nil {
			t.Fatal(err)
		}
		dcs = append(dcs, dc)
	}
	for _, dc := range dcs {
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("publish not confirmed: %v %v", ok, err)
		}
	}
}

// TestInboxGroupCommit: commands waiting together share transactions
// (fewer commits than commands), each is answered once; a message_id
// published twice in a row is decided once and answered twice from the
// window. Then a command whose Record fails inside a shared transaction
// fails alone (nacked, requeued once, then dropped) while the others of its
// group are recorded.
func TestInboxGroupCommit(t *testing.T) {
	caller := amqptest.AlphaID
	g := newGate(false) // publish everything first: the inbox finds it waiting
	var echo *amqptest.Echo
	var bursts, burstMax, burstMin atomic.Int64 // the groups Burst is told of
	burstMin.Store(1 << 30)
	burst := func(n int) {
		bursts.Add(1)
		for m := burstMax.Load(); int64(n) > m && !burstMax.CompareAndSwap(m, int64(n)); m = burstMax.Load() {
		}
		for m := burstMin.Load(); int64(n) < m && !burstMin.CompareAndSwap(m, int64(n)); m = burstMin.Load() {
		}
	}
	c := startCalleeWrapped(t, 0, tamqp.InboxOpts{Intake: g, Burst: burst}, func(e tamqp.Engine) tamqp.Engine {
		echo = e.(*amqptest.Echo)
		return &poisonEngine{next: e}
	})
	alpha := amqptest.Dial(t, amqptest.AlphaURL())
	ds := eventQueue(t, alpha, caller)
	// batch publishes n submits (the one at poisonAt, if any, a poison; the
	// one at dupAt twice in a row), opens intake, and returns the
	// task_accepted per message_id once n answered sessions have completed.
	batch := func(n, dupAt, poisonAt int) (got map[string]int, dupID, poisonID string) {
		t.Helper()
		var ps []amqp091.Publishing
		for i := range n {
			intent := "echo"
			if i == poisonAt {
				intent = "poison"
			}
			env, err := wire.NewEnvelope(nil, &wire.TaskSubmit{Capability: "echo", CallerID: caller, Intent: intent, Inputs: []byte(`{}`)}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			body, err := wire.Encode(env)
			if err != nil {
				t.Fatal(err)
			}
			p := commandPublishing(env, body)
			ps = append(ps, p)
			switch i {
			case poisonAt:
				poisonID = p.MessageId
			case dupAt:
				dupID = p.MessageId
				ps = append(ps, p) // the same message_id again, right behind it
			}
		}
		g.set(false)
		publishMany(t, alpha, c.id, ps)
		g.set(true)
		answered := n
		if poisonAt >= 0 {
			answered-- // never answered
		}
		got = map[string]int{}
		completed := 0
		// Each session: task_accepted (the duplicate's twice), then Echo's
		// task_completed.
		for range 2*answered + 1 {
			d, rep := next(t, ds, 30*time.Second)
			switch rep.Type {
			case wire.TypeTaskAccepted:
				irt, _ := d.Headers[wire.HeaderInReplyTo].(string)
				got[irt]++
			case wire.TypeTaskCompleted:
				completed++
			default:
				t.Fatalf("reply %s", rep.Type)
			}
		}
		quiet(t, ds, 500*time.Millisecond)
		if completed != answered || len(got) != answered || got[dupID] != 2 || got[poisonID] != 0 {
			t.Fatalf("%d completed, %d answered (want %d), duplicate answered %d×, poison %d×", completed, len(got), answered, got[dupID], got[poisonID])
		}
		return got, dupID, poisonID
	}

	const n = 300
	batch(n, 10, -1)
	s := c.in.Stats()
	if calls := echo.Calls(); calls != n { // the duplicate never reached the engine
		t.Errorf("engine saw %d commands, want %d", calls, n)
	}
	if s.Handled != n || s.Duplicates != 1 || s.Failed != 0 {
		t.Errorf("stats %+v: want %d handled, 1 duplicate", s, n)
	}
	if s.Commits > s.Handled/4 {
		t.Errorf("%d commits for %d commands: not grouped", s.Commits, s.Handled)
	}
	t.Logf("%d commands in %d commits (%.1f a commit)", s.Handled, s.Commits, float64(s.Handled)/float64(s.Commits))
	// Burst is told of the groups, never of a command alone, never of more
	// than GroupMax.
	if bursts.Load() == 0 || burstMin.Load() < 2 || burstMax.Load() > 128 {
		t.Errorf("Burst told of %d groups, sizes %d..%d: want groups of 2..128", bursts.Load(), burstMin.Load(), burstMax.Load())
	}

	// A poison in the middle of a group: it alone fails, twice (its
	// redelivery), and is dropped; the others are recorded and answered.
	const m = 50
	batch(m, 5, m/2)
	s2 := c.in.Stats()
	if s2.Handled-s.Handled != m-1 || s2.Failed != 2 || s2.Duplicates != 2 {
		t.Errorf("stats %+v after the poison: want %d more handled, 2 failed", s2, m-1)
	}
	if calls := echo.Calls(); calls != n+m+1 {
		t.Errorf("engine saw %d commands, want %d", calls, n+m+1)
	}
	if r := c.sup.State().Reconnects; r != 0 {
		t.Errorf("%d reconnects", r)
	}
}
