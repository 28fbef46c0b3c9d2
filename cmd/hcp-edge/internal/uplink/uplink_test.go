package uplink

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rabbitmq/amqp091-go"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/internal/wallclock"
	"hcp-edge/session/store"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// TestUplinkBrokerAppearsLater: the uplink in-process, its broker address
// closed at first: messages queue durably in the outbox; when the broker
// appears (a proxy starts listening there) the backlog drains to the
// caller's queue, in order. Then close with nothing left.
func TestUplinkBrokerAppearsLater(t *testing.T) {
	conn := amqptest.Dial(t, amqptest.AlphaURL())
	u0, err := amqp091.ParseURI(amqptest.URL())
	if err != nil {
		t.Fatal(err)
	}
	addr := amqptest.ClosedPort(t)
	u0.Host, u0.Port = strings.Split(addr, ":")[0], amqptest.Port(t, addr)
	callee, callerID := amqptest.CalleeID, amqptest.AlphaID
	edge := amqptest.Dial(t, amqptest.URL())
	amqptest.DeleteQueues(edge, conn, callee, callerID)
	t.Cleanup(func() { amqptest.DeleteQueues(edge, conn, callee, callerID) })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close() })

	var f rigconfig.File
	f.Agent.StateDir = t.TempDir()
	f.Agent.AMQP = rigconfig.AMQP{URL: u0.String(), CalleeID: callee, Heartbeat: 10 * time.Second, Prefetch: 10,
		TelemetryBound: 100, FlushTimeout: 5 * time.Second}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(filepath.Join(f.Agent.StateDir, rigconfig.StateFile), store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	up, err := New(f, st, nil, wallclock.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	st.SetQueue(up)
	send := func(caller string, env *wire.Envelope) error {
		return st.Update(context.Background(), func(w *store.Tx) error {
			return w.Send(store.Message{CallerID: caller, Envelope: env})
		})
	}
	if err := up.Attach(f, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	// The caller's queue exists before anything is published (the bench
	// vhost has the exchanges).
	if err := tamqp.DeclareCallerQueue(ch, tamqp.CallerQueueOpts{CallerID: callerID}); err != nil {
		t.Fatal(err)
	}
	q := amqp091.Queue{Name: "hcp.evt." + callerID}
	sid := uuid.New()
	const n = 20
	var ids []string
	for i := 1; i <= n; i++ {
		env, err := wire.NewEnvelope(&sid, &wire.Event{EventType: wire.EventStateChanged, Sequence: uint64(i), Data: json.RawMessage(`{}`)}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := send(callerID, env); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, env.MessageID.String())
	}
	// Local-only caller: never queued.
	lenv, _ := wire.NewEnvelope(&sid, &wire.Event{EventType: wire.EventStateChanged, Sequence: 1, Data: json.RawMessage(`{}`)}, time.Now())
	if err := send(rigconfig.LocalUser, lenv); err != nil {
		t.Fatal(err)
	}
	if got := up.backlog(); got != n {
		t.Fatalf("backlog %d, want %d", got, n)
	}
	deadline := time.Now().Add(hangGuard)
	for up.Status().LastError == "" {
		if time.Now().After(deadline) {
			t.Fatal("no connect attempt")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if up.Status().Connected || up.backlog() != n {
		t.Fatalf("status %+v while the broker is away", up.Status())
	}
	amqptest.StartProxy(t, addr, u0Target(t))
	for up.backlog() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("backlog not drained: %+v", up.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, id := range ids {
		var d amqp091.Delivery
		var ok bool
		for ; !ok; d, ok, err = ch.Get(q.Name, true) {
			if err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d not in the caller queue", i+1)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if d.MessageId != id {
			t.Fatalf("message %d: %s, want %s", i+1, d.MessageId, id)
		}
	}
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
}

// u0Target is the real broker's host:port.
func u0Target(t *testing.T) string {
	t.Helper()
	u, err := amqp091.ParseURI(amqptest.URL())
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(u.Host, fmt.Sprint(u.Port))
}
