package amqp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

func TestTopologyIdempotent(t *testing.T) {
	conn := amqptest.Dial(t, amqptest.URL())
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	callee := amqptest.CalleeID
	for i := 0; i < 2; i++ {
		if err := tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: callee}); err != nil {
			t.Fatalf("declare %d: %v", i, err)
		}
	}
	t.Cleanup(func() { ch.QueueDelete("hcp.cmd."+callee, false, false, false) })
	// The same queue as a quorum queue (the callee may configure only its
	// own command queue): deleted first, since a queue's type cannot change.
	if _, err := ch.QueueDelete("hcp.cmd."+callee, false, false, false); err != nil {
		t.Fatal(err)
	}
	qc, _ := conn.Channel()
	defer qc.Close()
	if err := tamqp.DeclareTopology(qc, tamqp.TopologyOpts{CalleeID: callee, Quorum: true}); err != nil {
		t.Fatalf("quorum: %v", err)
	}
	if _, err := qc.QueueDelete("hcp.cmd."+callee, false, false, false); err != nil {
		t.Fatal(err)
	}
	if err := tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: "bad.id"}); !errors.Is(err, wire.ErrInvalidValue) {
		t.Fatalf("bad id: %v", err)
	}
}

// TestPublisherDrainsInOrder: a backlog of events goes out in outbox order with
// L1's properties, the outbox empties, and new appends keep flowing.
func TestPublisherDrainsInOrder(t *testing.T) {
	conn := amqptest.Dial(t, amqptest.URL())
	// The caller declares and reads its queue; the callee publishes.
	ch, err := amqptest.Dial(t, amqptest.AlphaURL()).Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	caller := amqptest.AlphaID
	if err := tamqp.DeclareCallerQueue(ch, tamqp.CallerQueueOpts{CallerID: caller, MessageTTL: time.Hour, MaxLength: 100000}); err != nil {
		t.Fatal(err)
	}
	qname, _ := wire.EventQueue(caller)
	t.Cleanup(func() { ch.QueueDelete(qname, false, false, false) })

	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	sid := uuid.New()
	const backlog, live = 300, 50
	appendEvent := func(seq int) {
		env, err := wire.NewEnvelope(&sid, &wire.Event{EventType: wire.EventProgress, Sequence: uint64(seq), Data: json.RawMessage(fmt.Sprintf(`{"percent":%d}`, seq))}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := wire.Encode(env)
		key, _ := wire.EventRoutingKey(caller, env)
		props := wire.PropertiesFor(env, "")
		if _, err := ob.Append(outbox.Message{Class: outbox.Protocol, Exchange: wire.EventsExchange, RoutingKey: key,
			MessageID: props.MessageID, Type: props.Type, CorrelationID: props.CorrelationID, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= backlog; i++ {
		appendEvent(i)
	}
	pub, err := tamqp.NewPublisher(ob, tamqp.PublisherOpts{Window: 64})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() { defer wg.Done(); runErr = pub.Run(ctx, conn) }()
	for i := backlog + 1; i <= backlog+live; i++ {
		appendEvent(i)
	}

	if err := ch.Qos(100, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(qname, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= backlog+live; want++ {
		var d amqp091.Delivery
		select {
		case d = <-deliveries:
		case <-ctx.Done():
			t.Fatalf("waiting for sequence %d: %v", want, ctx.Err())
		}
		env, err := wire.Decode(d.Body)
		if err != nil {
			t.Fatal(err)
		}
		props := wire.Properties{ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, DeliveryMode: d.DeliveryMode,
			MessageID: d.MessageId, Timestamp: d.Timestamp, CorrelationID: d.CorrelationId, Type: d.Type}
		if err := wire.CheckProperties(props, env); err != nil {
			t.Fatal(err)
		}
		ev, _ := env.Event()
		if ev.Sequence != uint64(want) {
			t.Fatalf("sequence %d, want %d", ev.Sequence, want)
		}
		if d.RoutingKey != caller+"."+sid.String()+".event" || d.DeliveryMode != 2 {
			t.Fatalf("routing key %q delivery mode %d", d.RoutingKey, d.DeliveryMode)
		}
		d.Ack(false)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, _ := ob.Depth(); n == 0 {
			break
		}
		if time.Now().After(deadline) {
			n, _ := ob.Depth()
			t.Fatalf("outbox still holds %d after all were delivered", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if !errors.Is(runErr, context.Canceled) {
		t.Fatalf("Run: %v", runErr)
	}
}

// TestPublisherConnectionClosed: closing the connection under Run ends it with an
// error and leaves unconfirmed messages in the outbox.
func TestPublisherConnectionClosed(t *testing.T) {
	conn := amqptest.Dial(t, amqptest.URL())
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	pub, _ := tamqp.NewPublisher(ob, tamqp.PublisherOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pub.Run(ctx, conn) }()
	time.Sleep(100 * time.Millisecond)
	conn.Close()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after the connection closed")
	}
}
