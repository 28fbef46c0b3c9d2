package amqp_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// rabbitmqctl runs the broker's control tool or stops t through MissingPeer.
func rabbitmqctl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("rabbitmqctl")
	if err != nil {
		path = "/usr/sbin/rabbitmqctl"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		amqptest.MissingPeer(t, "rabbitmqctl "+strings.Join(args, " ")+": "+err.Error()+": "+string(out),
			"run the tests as a user that may control the local RabbitMQ (root in CI)")
	}
	return strings.TrimSpace(string(out))
}

// TestSupervisorRespectsConnectionBlocked: the broker raises its memory
// alarm (vm_memory_high_watermark 0, which blocks every publisher) and sends
// connection.blocked when the Publisher publishes; the Supervisor reports
// Blocked, the Publisher stops publishing, the messages wait in the outbox
// and the connection is kept. When the alarm clears (connection.unblocked)
// they are published and confirmed in order, and the outbox is empty.
func TestSupervisorRespectsConnectionBlocked(t *testing.T) {
	amqptest.HoldExclusive(t) // the alarm blocks every publisher of every test
	conn := amqptest.Dial(t, amqptest.URL())
	// eval prints a term such as 0.4 or {absolute,1073741824}.
	old := rabbitmqctl(t, "eval", "vm_memory_monitor:get_vm_memory_high_watermark().")
	restore := func() {
		if strings.HasPrefix(old, "{absolute,") {
			rabbitmqctl(t, "-q", "set_vm_memory_high_watermark", "absolute", strings.TrimSuffix(strings.TrimPrefix(old, "{absolute,"), "}"))
			return
		}
		rabbitmqctl(t, "-q", "set_vm_memory_high_watermark", old)
	}
	t.Cleanup(restore)

	key, ds := eventTap(t, conn, "blocked-test")

	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	sup, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{URL: amqptest.URL(),
		Backoff: tamqp.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		Declare: func(ch *amqp091.Channel) error { return tamqp.DeclareExchanges(ch) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := sup.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}

	// RabbitMQ blocks a connection, and tells it so, when it publishes
	// during the alarm: the first message triggers connection.blocked.
	rabbitmqctl(t, "-q", "set_vm_memory_high_watermark", "0")
	appendMsg := func(id string) {
		t.Helper()
		if _, err := ob.Append(outbox.Message{Class: outbox.Protocol, Exchange: wire.EventsExchange, RoutingKey: key,
			MessageID: id, Type: "event", Body: []byte(`{"id":"` + id + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	appendMsg("blocked-1")
	for !sup.State().Blocked {
		if ctx.Err() != nil {
			t.Fatalf("no connection.blocked after the memory alarm: %+v", sup.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	appendMsg("blocked-2")
	// While blocked nothing gets through and nothing is lost: both messages
	// stay in the outbox, and the connection is kept (a blocked broker reads
	// nothing, so a publisher that did not respect it would time out its
	// confirms and reconnect in a loop).
	select {
	case d := <-ds:
		t.Fatalf("delivered while blocked: %s", d.MessageId)
	case <-time.After(2 * time.Second):
	}
	if n, _ := ob.Depth(); n != 2 {
		t.Fatalf("outbox depth %d while blocked, want 2", n)
	}
	if s := sup.State(); !s.Connected || !s.Blocked || s.Reconnects != 0 {
		t.Fatalf("state while blocked %+v", s)
	}

	restore()
	for _, want := range []string{"blocked-1", "blocked-2"} {
		select {
		case d := <-ds:
			if d.MessageId != want {
				t.Fatalf("got %s, want %s (outbox order)", d.MessageId, want)
			}
		case <-ctx.Done():
			t.Fatalf("%s not published after connection.unblocked: %+v", want, sup.State())
		}
	}
	for {
		s := sup.State()
		if n, _ := ob.Depth(); n == 0 && !s.Blocked {
			if s.Reconnects != 0 {
				t.Fatalf("%d reconnects across the alarm", s.Reconnects)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("outbox not emptied after unblock: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
