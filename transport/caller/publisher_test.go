package caller_test

import (
	"encoding/json"
	"testing"
	"time"

	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// TestForgedCompletionDropped: a task_completed for a watched session that
// was not published by the callee's broker user (here: the callee's own
// connection without user_id, and a user_id that is not the callee's —
// what a broker with broader grants would let another harness deliver) is
// dropped and counted; the session still ends on the callee's own
// task_completed.
func TestForgedCompletionDropped(t *testing.T) {
	callerID := amqptest.AlphaID
	cl := startCaller(t, callerID, amqptest.CalleeID, caller.Opts{})
	f := newFake(t, callerID)
	w := cl.Watch(f.sid)
	f.event(1)
	forged := func(user string) {
		ff := *f
		ff.userID = user
		done, _ := wire.NewEnvelope(&f.sid, &wire.TaskCompleted{Outputs: json.RawMessage(`{"forged":true}`)}, time.Now())
		ff.send(done, "")
	}
	forged("-") // no user_id: publisher unknown
	f.event(2)
	real, _ := wire.NewEnvelope(&f.sid, &wire.TaskCompleted{Outputs: json.RawMessage(`{"forged":false}`)}, time.Now())
	f.send(real, "")
	seqs, final := sequences(t, w, 10*time.Second)
	if final != wire.TypeTaskCompleted || len(seqs) != 2 {
		t.Fatalf("final %s after %v", final, seqs)
	}
	tc, err := w.Final().TaskCompleted()
	if err != nil || string(tc.Outputs) != `{"forged":false}` {
		t.Fatalf("the session ended on %s (%v)", tc.Outputs, err)
	}
	if s := cl.Stats(); s.Forged != 1 {
		t.Fatalf("stats %+v, want 1 forged", s)
	}
}

// TestForgedUserIDOption: a client whose CalleeUser names another login
// drops the real callee's messages too (the check is on the user_id, not on
// the route).
func TestForgedUserIDOption(t *testing.T) {
	callerID := amqptest.AlphaID
	cl := startCaller(t, callerID, amqptest.CalleeID, caller.Opts{CalleeUser: "someone-else"})
	f := newFake(t, callerID)
	w := cl.Watch(f.sid)
	f.event(1)
	f.event(2)
	deadline := time.After(10 * time.Second)
	for cl.Stats().Forged < 2 {
		select {
		case env := <-w.Messages():
			t.Fatalf("accepted %s from %s", env.Type, amqptest.EdgeUser)
		case <-deadline:
			t.Fatalf("stats %+v", cl.Stats())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestEventQueueDeclaredElsewhere: hcp.evt.{caller_id} declared by another
// implementation without L1's recommended TTL and length limit: the client
// uses it as it is (passive declare), says so, and receives its events.
func TestEventQueueDeclaredElsewhere(t *testing.T) {
	callerID := amqptest.AlphaID
	conn := amqptest.Dial(t, amqptest.AlphaURL())
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q := wire.EventQueuePrefix + callerID
	_, _ = ch.QueueDelete(q, false, false, false)
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupQueue(t, q) })
	cl := startCaller(t, callerID, amqptest.CalleeID, caller.Opts{})
	if !cl.Stats().ReusedQueue {
		t.Fatalf("stats %+v: the queue was not reused", cl.Stats())
	}
	f := newFake(t, callerID)
	w := cl.Watch(f.sid)
	f.event(1)
	done, _ := wire.NewEnvelope(&f.sid, &wire.TaskCompleted{Outputs: json.RawMessage(`{}`)}, time.Now())
	f.send(done, "")
	if seqs, final := sequences(t, w, 10*time.Second); final != wire.TypeTaskCompleted || len(seqs) != 1 {
		t.Fatalf("final %s after %v", final, seqs)
	}
}
