package amqp_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// deleteQueues deletes the queues now and at cleanup, on a channel of their
// own: each test starts and ends without them.
func deleteQueues(t *testing.T, conn *amqp091.Connection, names ...string) {
	del := func() {
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		defer ch.Close()
		for _, n := range names {
			_, _ = ch.QueueDelete(n, false, false, false)
		}
	}
	del()
	t.Cleanup(del)
}

// isQuorum proves a queue is quorum: declaring it with the same arguments
// but x-queue-type classic is refused on that argument.
func isQuorum(t *testing.T, conn *amqp091.Connection, name string, args amqp091.Table) bool {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	a := amqp091.Table{}
	for k, v := range args {
		a[k] = v
	}
	a[amqp091.QueueTypeArg] = tamqp.QueueTypeClassic
	_, err = ch.QueueDeclare(name, true, false, false, false, a)
	return err != nil && strings.Contains(err.Error(), "x-queue-type")
}

// TestCalleeTopologyQuorum: on a fresh name the command queue and its
// dead-letter queue are quorum queues; declaring again is idempotent.
func TestCalleeTopologyQuorum(t *testing.T) {
	conn := amqptest.Dial(t, amqptest.URL())
	callee := amqptest.CalleeID // the one callee the bench vhost provisions
	q, _ := wire.CommandQueue(callee)
	dlq, _ := tamqp.DeadLetterQueue(callee)
	deleteQueues(t, conn, q, dlq)
	opts := tamqp.TopologyOpts{CalleeID: callee, Quorum: true, DeliveryLimit: 3, DeadLetter: true}
	for i := 0; i < 2; i++ {
		outs, err := tamqp.DeclareCalleeTopology(conn, opts)
		if err != nil {
			t.Fatalf("declare %d: %v", i, err)
		}
		if len(outs) != 2 || outs[0].Type != amqp091.QueueTypeQuorum || outs[1].Type != amqp091.QueueTypeQuorum || outs[1].Existing {
			t.Fatalf("declare %d: %+v", i, outs)
		}
	}
	if !isQuorum(t, conn, q, tamqp.CommandQueueArgs(opts, true)) || !isQuorum(t, conn, dlq, tamqp.DeadLetterArgs(true)) {
		t.Fatal("not quorum queues")
	}
}

// TestCalleeTopologyExistingClassic: a classic hcp.cmd.{callee_id} from an
// earlier version makes the quorum declaration fail with
// PRECONDITION_FAILED; the agent uses the existing queue as it is (never
// deletes it: it may hold commands), logs a warning saying how to switch,
// and commands still reach it through the binding.
func TestCalleeTopologyExistingClassic(t *testing.T) {
	conn := amqptest.Dial(t, amqptest.URL())
	callee := amqptest.CalleeID // the one callee the bench vhost provisions
	q, _ := wire.CommandQueue(callee)
	dlq, _ := tamqp.DeadLetterQueue(callee)
	deleteQueues(t, conn, q, dlq)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: callee}); err != nil { // the old classic declaration
		t.Fatal(err)
	}
	var logs bytes.Buffer
	declare := tamqp.CalleeDeclarer(tamqp.TopologyOpts{CalleeID: callee, Quorum: true, DeliveryLimit: 3, DeadLetter: true},
		slog.New(slog.NewTextHandler(&logs, nil)))
	for i := 0; i < 2; i++ { // the second declaration (a reconnect) logs nothing new
		if err := declare(conn); err != nil {
			t.Fatalf("declare %d: %v", i, err)
		}
	}
	out := logs.String()
	if strings.Count(out, "declared with other arguments, is used as it is") != 1 || !strings.Contains(out, "PRECONDITION_FAILED") ||
		strings.Count(out, "topology declared") != 1 || !strings.Contains(out, q+"=existing") || !strings.Contains(out, dlq+"=quorum") {
		t.Fatalf("log:\n%s", out)
	}
	if isQuorum(t, conn, q, nil) {
		t.Fatal("the classic queue changed type")
	}
	publishAsCaller(t, amqp091.Publishing{Body: []byte("{}")})
	waitDepth(t, conn, q, 1)
	t.Logf("fallback logged:\n%s", out)
}

// publishAsCaller publishes p to hcp.commands for the bench's callee with
// harness-alpha-001's login and user_id, waiting for the broker's confirm:
// on a provisioned broker only a caller may write there.
func publishAsCaller(t *testing.T, p amqp091.Publishing) {
	t.Helper()
	ch, err := amqptest.Dial(t, amqptest.AlphaURL()).Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	p.UserId = amqptest.AlphaUser
	dc, err := ch.PublishWithDeferredConfirm(wire.CommandsExchange, amqptest.CalleeID, true, false, p)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := dc.WaitContext(context.Background()); !ok || err != nil {
		t.Fatalf("publish to %s: nacked (%v)", wire.CommandsExchange, err)
	}
}

// waitDepth waits (hang guard) until queue holds n messages.
func waitDepth(t *testing.T, conn *amqp091.Connection, queue string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		qi, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		_ = ch.Close()
		if err != nil {
			t.Fatal(err)
		}
		if qi.Messages == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d messages, want %d", queue, qi.Messages, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPoisonCommandDeadLettered: a command that is returned to the quorum
// command queue every time it is delivered (a consumer that crashes on it)
// is delivered at most DeliveryLimit+1 times and then lands in
// hcp.dlq.{callee_id}, never redelivered forever.
func TestPoisonCommandDeadLettered(t *testing.T) {
	conn := amqptest.Dial(t, amqptest.URL())
	callee := amqptest.CalleeID // the one callee the bench vhost provisions
	q, _ := wire.CommandQueue(callee)
	dlq, _ := tamqp.DeadLetterQueue(callee)
	deleteQueues(t, conn, q, dlq)
	const limit = 2
	if _, err := tamqp.DeclareCalleeTopology(conn, tamqp.TopologyOpts{CalleeID: callee, Quorum: true, DeliveryLimit: limit, DeadLetter: true}); err != nil {
		t.Fatal(err)
	}
	publishAsCaller(t, amqp091.Publishing{MessageId: "poison", Body: []byte("{")})
	waitDepth(t, conn, q, 1)
	deliveries := 0
	for {
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		d, ok, err := ch.Get(q, false)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			_ = ch.Close()
			break
		}
		deliveries++
		if deliveries > limit+1 {
			t.Fatalf("delivered %d times with x-delivery-limit %d", deliveries, limit)
		}
		_ = d.Nack(false, true) // the consumer "crashes": back to the queue
		_ = ch.Close()
	}
	waitDepth(t, conn, dlq, 1)
	waitDepth(t, conn, q, 0)
	t.Logf("poison command delivered %d times (x-delivery-limit %d), then dead-lettered to %s", deliveries, limit, dlq)
}
