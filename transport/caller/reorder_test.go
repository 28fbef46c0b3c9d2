package caller_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// fakeCallee publishes event-channel messages for a session straight to
// hcp.events, in any order.
type fakeCallee struct {
	// userID is the user_id of what it publishes ("": the callee's login;
	// "-": none).
	userID string
	t      *testing.T
	ch     *amqp091.Channel
	caller string
	sid    uuid.UUID
	sent   map[uint64]*wire.Envelope
}

func (f *fakeCallee) send(env *wire.Envelope, inReplyTo string) {
	f.t.Helper()
	m, err := outbox.MessageFor(f.caller, env, inReplyTo)
	if err != nil {
		f.t.Fatal(err)
	}
	p := amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding, DeliveryMode: 2,
		MessageId: m.MessageID, Type: m.Type, CorrelationId: m.CorrelationID, Body: m.Body,
		UserId: amqptest.EdgeUser} // the client accepts only the callee's messages
	switch f.userID {
	case "":
	case "-":
		p.UserId = ""
	default:
		p.UserId = f.userID
	}
	if inReplyTo != "" {
		p.Headers = amqp091.Table{wire.HeaderInReplyTo: inReplyTo}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dc, err := f.ch.PublishWithDeferredConfirmWithContext(ctx, wire.EventsExchange, m.RoutingKey, false, false, p)
	if err != nil {
		f.t.Fatal(err)
	}
	if ok, err := dc.WaitContext(ctx); !ok || err != nil {
		f.t.Fatal("not confirmed", err)
	}
}

// event sends sequence seq; the same seq twice sends the same message again.
func (f *fakeCallee) event(seq uint64) {
	env := f.sent[seq]
	if env == nil {
		var err error
		env, err = wire.NewEnvelope(&f.sid, &wire.Event{EventType: wire.EventProgress, Sequence: seq, Data: json.RawMessage(`{}`)}, time.Now())
		if err != nil {
			f.t.Fatal(err)
		}
		f.sent[seq] = env
	}
	f.send(env, "")
}

func newFake(t *testing.T, callerID string) *fakeCallee {
	conn := amqptest.Dial(t, amqptest.URL())
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	ch.Confirm(false)
	return &fakeCallee{t: t, ch: ch, caller: callerID, sid: uuid.New(), sent: map[uint64]*wire.Envelope{}}
}

func sequences(t *testing.T, task *caller.Task, within time.Duration) (seqs []uint64, final wire.Type) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case env, ok := <-task.Messages():
			if !ok {
				return seqs, task.Final().Type
			}
			if env.Type == wire.TypeEvent {
				ev, _ := env.Event()
				seqs = append(seqs, ev.Sequence)
			}
		case <-deadline:
			t.Fatalf("stream incomplete: %v", seqs)
		}
	}
}

func TestReorderAndDuplicates(t *testing.T) {
	amqptest.Require(t) // every subtest needs the broker: without it the whole test skips, naming it
	tests := []struct {
		name    string
		order   []uint64
		gap     time.Duration
		want    []uint64
		skipped uint64
	}{
		{"in order", []uint64{1, 2, 3}, 0, []uint64{1, 2, 3}, 0},
		{"reordered with duplicates", []uint64{1, 3, 2, 2, 5, 1, 4, 3}, 0, []uint64{1, 2, 3, 4, 5}, 0},
		{"completed behind a gap waits", []uint64{2, 3}, 0, nil, 0}, // 1 arrives after completed
		{"gap never filled is skipped", []uint64{1, 4, 5}, 300 * time.Millisecond, []uint64{1, 4, 5}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			callerID := amqptest.AlphaID
			cl := startCaller(t, callerID, amqptest.CalleeID, caller.Opts{GapTimeout: tc.gap})
			f := newFake(t, callerID)
			task := submit(t, cl)
			acc, _ := wire.NewEnvelope(&f.sid, &wire.TaskAccepted{SessionToken: "t", RiskLevel: "R1"}, time.Now())
			f.send(acc, task.SubmitID())
			f.send(acc, task.SubmitID()) // a second answer (republished submit)
			for _, s := range tc.order {
				f.event(s)
			}
			done, _ := wire.NewEnvelope(&f.sid, &wire.TaskCompleted{Outputs: json.RawMessage(`{}`)}, time.Now())
			f.send(done, "")
			want := tc.want
			if want == nil { // the late first event fills the gap
				f.event(1)
				want = []uint64{1, 2, 3}
			}
			f.send(done, "") // duplicate terminal
			got, final := sequences(t, task, 10*time.Second)
			if len(got) != len(want) {
				t.Fatalf("sequences %v, want %v", got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("sequences %v, want %v", got, want)
				}
			}
			if final != wire.TypeTaskCompleted {
				t.Fatalf("final %s", final)
			}
			if s := cl.Stats(); s.Skipped != tc.skipped {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

// TestSequenceSurvivesRestart: a new client on the same state file skips
// what the old one processed.
func TestSequenceSurvivesRestart(t *testing.T) {
	callerID := amqptest.AlphaID
	db := openDB(t)
	opts := caller.Opts{URL: amqptest.AlphaURL(), CallerID: callerID, CalleeID: amqptest.CalleeID, Backoff: fastBackoff(), Logger: quietLog}
	cl, err := caller.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupQueue(t, wire.EventQueuePrefix+callerID) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl.Supervisor().WaitConnected(ctx)
	f := newFake(t, callerID)
	w := cl.Watch(f.sid)
	f.event(1)
	f.event(2)
	for i := 0; i < 2; i++ {
		select {
		case <-w.Messages():
		case <-ctx.Done():
			t.Fatal("no events")
		}
	}
	cl.Close()
	cl, err = caller.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w = cl.Watch(f.sid)
	f.event(2) // redelivered / republished: already processed
	f.event(3)
	done, _ := wire.NewEnvelope(&f.sid, &wire.TaskCompleted{Outputs: json.RawMessage(`{}`)}, time.Now())
	f.send(done, "")
	got, _ := sequences(t, w, 10*time.Second)
	if len(got) != 1 || got[0] != 3 {
		t.Fatalf("after restart: %v", got)
	}
}
