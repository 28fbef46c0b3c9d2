package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/executor"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// hostileAttempt is one thing a harness tries against another's messages.
type hostileAttempt struct {
	name string
	do   func(ch *amqp091.Channel) error
	// want is the AMQP reply code the broker must refuse it with.
	want int
}

// tryHostile runs a on a fresh channel of conn and returns the broker's
// refusal (nil: not refused). Publishes wait for the confirm or the channel's
// closing, whichever comes first.
func tryHostile(t *testing.T, conn *amqp091.Connection, a hostileAttempt) *amqp091.Error {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("%s: channel: %v", a.name, err)
	}
	closed := ch.NotifyClose(make(chan *amqp091.Error, 1))
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatalf("%s: confirm: %v", a.name, err)
	}
	err = a.do(ch)
	var aerr *amqp091.Error
	if errors.As(err, &aerr) {
		return aerr
	}
	if err != nil {
		t.Fatalf("%s: %v (not an AMQP refusal)", a.name, err)
	}
	select {
	case e := <-closed:
		return e
	default:
		return nil
	}
}

// publishWait publishes and waits for the broker's confirm or the channel's
// closing: a refused publish closes the channel (the confirm then reads as
// a nack and the close carries the reason).
func publishWait(ch *amqp091.Channel, exchange, key string, p amqp091.Publishing) error {
	closed := ch.NotifyClose(make(chan *amqp091.Error, 1))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, false, false, p)
	if err != nil {
		return err
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		if e := <-closed; e != nil {
			return e
		}
		return errors.New("nacked")
	}
	return nil
}

// TestBrokerIsolation: on the broker provisioned as `hcp-edge broker
// provision` provisions configs/sim.yaml, harness-beta-002 tries every way
// to touch harness-alpha-001's messages or the callee's while alpha's MoS2
// session runs. The broker refuses each attempt; alpha's session completes
// with nothing forged or lost, and beta's own rig-status session completes.
func TestBrokerIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("the MoS2 session takes a while")
	}
	t.Parallel()
	b := newBrokerEnv(t)
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	run := b.startMoS2(t) // alpha's session, approved and running
	beta := amqptest.Dial(t, b.betaURL())

	alphaQ, cmdQ := wire.EventQueuePrefix+amqptest.AlphaID, wire.CommandQueuePrefix+amqptest.CalleeID
	betaQ := wire.EventQueuePrefix + amqptest.BetaID
	dlq, _ := tamqp.DeadLetterQueue(amqptest.CalleeID)
	// beta's own queue, as its client would declare it: the base for binds.
	t.Cleanup(func() {
		if ch, err := beta.Channel(); err == nil {
			_, _ = ch.QueueDelete(betaQ, false, false, false)
			_ = ch.Close()
		}
	})
	if c := betaRigStatus(t, b.betaURL()); c == nil {
		t.Fatal("beta client")
	}
	sid := run.sid
	forgedDone := func() amqp091.Publishing {
		id := uuid.New()
		s, _ := uuid.Parse(sid)
		env, _ := wire.NewEnvelope(&s, &wire.TaskCompleted{Outputs: json.RawMessage(`{"layer_count":7}`)}, time.Now())
		env.MessageID = id
		body, _ := wire.Encode(env)
		return amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding, DeliveryMode: 2,
			MessageId: id.String(), Type: string(wire.TypeTaskCompleted), CorrelationId: sid, Body: body}
	}
	get := func(q string) func(*amqp091.Channel) error {
		return func(ch *amqp091.Channel) error { _, _, err := ch.Get(q, false); return err }
	}
	consume := func(q string) func(*amqp091.Channel) error {
		return func(ch *amqp091.Channel) error {
			_, err := ch.Consume(q, "", false, false, false, false, nil)
			return err
		}
	}
	purge := func(q string) func(*amqp091.Channel) error {
		return func(ch *amqp091.Channel) error { _, err := ch.QueuePurge(q, false); return err }
	}
	del := func(q string) func(*amqp091.Channel) error {
		return func(ch *amqp091.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err }
	}
	declare := func(q string, passive bool) func(*amqp091.Channel) error {
		return func(ch *amqp091.Channel) error {
			if passive {
				_, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
				return err
			}
			_, err := ch.QueueDeclare(q, true, false, false, false, nil)
			return err
		}
	}
	bind := func(q, key, exchange string) func(*amqp091.Channel) error {
		return func(ch *amqp091.Channel) error { return ch.QueueBind(q, key, exchange, false, nil) }
	}
	pub := func(exchange, key string, p func() amqp091.Publishing) func(*amqp091.Channel) error {
		return func(ch *amqp091.Channel) error { return publishWait(ch, exchange, key, p()) }
	}
	submitAs := func(user string) func() amqp091.Publishing {
		return func() amqp091.Publishing {
			id := uuid.NewString()
			body := fmt.Sprintf(`{"hcp_version":"1.0","message_id":%q,"timestamp":"2026-01-15T08:30:00.000Z","session_id":null,"type":"task_submit","payload":{"capability":"rig-status","caller_id":%q,"intent":"impersonation","inputs":{}}}`, id, amqptest.AlphaID)
			return amqp091.Publishing{ContentType: wire.ContentType, DeliveryMode: 2, MessageId: id, Type: "task_submit", UserId: user, Body: []byte(body)}
		}
	}
	const refused, precondition = amqp091.AccessRefused, amqp091.PreconditionFailed
	attempts := []hostileAttempt{
		{"basic.get on alpha's event queue", get(alphaQ), refused},
		{"basic.consume on alpha's event queue", consume(alphaQ), refused},
		{"queue.purge of alpha's event queue", purge(alphaQ), refused},
		{"queue.delete of alpha's event queue", del(alphaQ), refused},
		{"queue.declare (active) of alpha's event queue", declare(alphaQ, false), refused},
		{"basic.get on the callee's command queue", get(cmdQ), refused},
		{"basic.consume on the callee's command queue", consume(cmdQ), refused},
		{"queue.purge of the callee's command queue", purge(cmdQ), refused},
		{"queue.delete of the callee's command queue", del(cmdQ), refused},
		{"queue.declare (active) of the callee's command queue", declare(cmdQ, false), refused},
		// The dead-letter queue keeps poison commands: other callers' submits.
		{"basic.get on the callee's dead-letter queue", get(dlq), refused},
		{"basic.consume on the callee's dead-letter queue", consume(dlq), refused},
		{"queue.purge of the callee's dead-letter queue", purge(dlq), refused},
		{"queue.delete of the callee's dead-letter queue", del(dlq), refused},
		{"queue.bind own queue to hcp.dlx with the callee's key (read dead-lettered commands)", bind(betaQ, amqptest.CalleeID, tamqp.DeadLetterExchange), refused},
		{"queue.bind own queue to hcp.events with alpha's key harness-alpha-001.#", bind(betaQ, amqptest.AlphaID+".#", wire.EventsExchange), refused},
		{"queue.bind own queue to hcp.events with alpha's completions harness-alpha-001.*.task_completed", bind(betaQ, amqptest.AlphaID+".*.task_completed", wire.EventsExchange), refused},
		{"queue.bind own queue to hcp.events with #", bind(betaQ, "#", wire.EventsExchange), refused},
		{"queue.bind own queue to hcp.events with *.#", bind(betaQ, "*.#", wire.EventsExchange), refused},
		{"queue.bind own queue to hcp.commands with the callee's key (read the commands)", bind(betaQ, amqptest.CalleeID, wire.CommandsExchange), refused},
		{"exchange.bind hcp.events → hcp.commands", func(ch *amqp091.Channel) error {
			return ch.ExchangeBind(wire.CommandsExchange, "#", wire.EventsExchange, false, nil)
		}, refused},
		{"publish onto hcp.events with alpha's routing key (a forged task_completed)", pub(wire.EventsExchange, amqptest.AlphaID+"."+sid+".task_completed", forgedDone), refused},
		{"publish onto hcp.events with alpha's key and the callee's user_id", pub(wire.EventsExchange, amqptest.AlphaID+"."+sid+".task_completed", func() amqp091.Publishing {
			p := forgedDone()
			p.UserId = amqptest.EdgeUser
			return p
		}), refused},
		{"publish through the default exchange to alpha's event queue", pub("", alphaQ, forgedDone), refused},
		{"publish through the default exchange to the callee's command queue", pub("", cmdQ, submitAs(amqptest.BetaUser)), refused},
		{"publish a task_submit to hcp.commands with alpha's user_id", pub(wire.CommandsExchange, amqptest.CalleeID, submitAs(amqptest.AlphaUser)), precondition},
		{"publish a task_submit to hcp.commands with the callee's user_id", pub(wire.CommandsExchange, amqptest.CalleeID, submitAs(amqptest.EdgeUser)), precondition},
		{"queue.declare of a queue outside its name (hcp.evt.harness-beta-002-tap)", declare(betaQ+"-tap", false), refused},
		{"queue.declare of a server-named queue (amq.gen-…)", declare("", false), refused},
		{"queue.declare of another caller's future queue (hcp.evt.harness-gamma-003)", declare(wire.EventQueuePrefix+"harness-gamma-003", false), refused},
		{"exchange.declare (active) of hcp.events", func(ch *amqp091.Channel) error {
			return ch.ExchangeDeclare(wire.EventsExchange, "topic", true, false, false, false, nil)
		}, refused},
		{"exchange.delete of hcp.events", func(ch *amqp091.Channel) error { return ch.ExchangeDelete(wire.EventsExchange, false, false) }, refused},
		{"exchange.delete of hcp.commands", func(ch *amqp091.Channel) error { return ch.ExchangeDelete(wire.CommandsExchange, false, false) }, refused},
		{"exchange.declare of a new exchange hcp.evil", func(ch *amqp091.Channel) error {
			return ch.ExchangeDeclare("hcp.evil", "fanout", false, true, false, false, nil)
		}, refused},
	}
	for _, a := range attempts {
		got := tryHostile(t, beta, a)
		switch {
		case got == nil:
			t.Errorf("HOSTILE %-95s NOT REFUSED", a.name)
		case got.Code != a.want:
			t.Errorf("HOSTILE %-95s refused with %d, want %d: %s", a.name, got.Code, a.want, got.Reason)
		default:
			t.Logf("HOSTILE %-95s refused: %d %s", a.name, got.Code, got.Reason)
		}
	}
	// What the broker cannot refuse: hcp.commands is a direct exchange, and
	// RabbitMQ's topic permissions apply to topic exchanges only, so a caller
	// allowed on one callee of a vhost may address any callee of it (the
	// callee's gate refuses it: unauthorized). Logged, not asserted.
	if got := tryHostile(t, beta, hostileAttempt{name: "publish to hcp.commands for another callee", do: pub(wire.CommandsExchange, "another-callee", submitAs(amqptest.BetaUser))}); got == nil {
		t.Logf("HOSTILE %-95s NOT REFUSED by the broker (direct exchange: no topic authorisation; unroutable here, and refused by that callee's gate)", "publish to hcp.commands with the key of a callee it may not use")
	}

	// Alpha's session is unaffected: it completes with the real result, and
	// alpha's client saw nothing it had to drop.
	msgs := run.finish(t, 3*hangGuard)
	checkCompleted(t, msgs[len(msgs)-1], run.ts, b.grown())
	if s := run.c.Stats(); s.Forged != 0 || s.Invalid != 0 {
		t.Fatalf("alpha's client stats %+v", s)
	}
	t.Logf("alpha's MoS2 session completed: %d messages", len(msgs))
}

// betaRigStatus runs a rig-status session as harness-beta-002 (its login
// url) through its own client to completion, and returns the client (its
// queue stays declared).
func betaRigStatus(t *testing.T, url string) *caller.Client {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "beta.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := caller.New(db, caller.Opts{URL: url, CallerID: amqptest.BetaID, CalleeID: amqptest.CalleeID,
		ResubmitInterval: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = db.Close() })
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.RigStatusName, CapabilityVersion: "1.x",
		Intent: "beta's own status snapshot", Inputs: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, task, hangGuard)
	if fin := msgs[len(msgs)-1]; fin.Type != wire.TypeTaskCompleted {
		t.Fatalf("beta's rig-status ended %s", fin.Type)
	}
	t.Logf("beta's rig-status session completed: %d messages", len(msgs))
	return c
}
