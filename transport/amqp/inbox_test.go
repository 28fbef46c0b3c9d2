package amqp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

type callee struct {
	id   string
	db   *bolt.DB
	ob   *outbox.Outbox
	echo *amqptest.Echo
	in   *tamqp.Inbox
	sup  *tamqp.Supervisor
}

func fastBackoff() tamqp.Backoff {
	return tamqp.Backoff{Min: 100 * time.Millisecond, Max: time.Second, Jitter: 0.2}
}

// startCallee runs an inbox with an Echo engine on a fresh callee id.
func startCallee(t testing.TB, events int, opts tamqp.InboxOpts) *callee {
	t.Helper()
	return startCalleeWrapped(t, events, opts, nil)
}

// startCalleeWrapped is startCallee with the Echo engine wrapped by wrap
// (nil: as it is).
func startCalleeWrapped(t testing.TB, events int, opts tamqp.InboxOpts, wrap func(tamqp.Engine) tamqp.Engine) *callee {
	t.Helper()
	amqptest.Dial(t, amqptest.URL()) // skips loudly without a broker
	c := &callee{id: amqptest.CalleeID}
	var err error
	c.db, err = bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c.ob, err = outbox.New(c.db, outbox.Opts{}); err != nil {
		t.Fatal(err)
	}
	c.echo = amqptest.NewEcho(c.ob, events, 0)
	opts.CalleeID = c.id
	var eng tamqp.Engine = c.echo
	if wrap != nil {
		eng = wrap(c.echo)
	}
	if c.in, err = tamqp.NewInbox(c.db, c.ob, eng, opts); err != nil {
		t.Fatal(err)
	}
	c.sup, err = tamqp.NewSupervisor(c.ob, tamqp.SupervisorOpts{
		URL:     amqptest.URL(),
		Backoff: fastBackoff(),
		Declare: func(ch *amqp091.Channel) error { return tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: c.id}) },
		Workers: []tamqp.Worker{c.in.Run},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.sup.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.sup.WaitConnected(ctx); err != nil {
		t.Fatalf("supervisor: %v (%+v)", err, c.sup.State())
	}
	t.Cleanup(func() {
		c.echo.Close()
		c.sup.Close()
		c.ob.Close()
		ch, err := amqptest.Dial(t, amqptest.URL()).Channel()
		if err == nil {
			ch.QueueDelete(wire.CommandQueuePrefix+c.id, false, false, false)
		}
		c.db.Close()
	})
	return c
}

// eventQueue declares hcp.evt.{caller} and returns a consumer on it.
func eventQueue(t *testing.T, conn *amqp091.Connection, caller string) <-chan amqp091.Delivery {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := tamqp.DeclareCallerQueue(ch, tamqp.CallerQueueOpts{CallerID: caller, MessageTTL: time.Hour, MaxLength: 10000}); err != nil {
		t.Fatal(err)
	}
	q, _ := wire.EventQueue(caller)
	t.Cleanup(func() { ch.QueueDelete(q, false, false, false); ch.Close() })
	ds, err := ch.Consume(q, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func submitBody(t testing.TB, caller string) (*wire.Envelope, []byte) {
	t.Helper()
	env, err := wire.NewEnvelope(nil, &wire.TaskSubmit{Capability: "echo", CallerID: caller, Intent: "echo", Inputs: json.RawMessage(`{}`)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	return env, b
}

// publish sends a raw command; userID "" leaves the property unset.
func publish(t *testing.T, conn *amqp091.Connection, callee, userID string, p amqp091.Publishing) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	p.UserId = userID
	p.DeliveryMode = amqp091.Persistent
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, wire.CommandsExchange, callee, false, false, p)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := dc.WaitContext(ctx); !ok || err != nil {
		t.Fatalf("publish not confirmed: %v %v", ok, err)
	}
}

func commandPublishing(env *wire.Envelope, body []byte) amqp091.Publishing {
	return amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding,
		MessageId: env.MessageID.String(), Type: string(env.Type), Timestamp: env.Timestamp, Body: body}
}

func next(t *testing.T, ds <-chan amqp091.Delivery, within time.Duration) (amqp091.Delivery, *wire.Envelope) {
	t.Helper()
	select {
	case d := <-ds:
		env, err := wire.Decode(d.Body)
		if err != nil {
			t.Fatalf("undecodable reply: %v", err)
		}
		return d, env
	case <-time.After(within):
		t.Fatal("no reply within", within)
	}
	panic("unreachable")
}

func quiet(t *testing.T, ds <-chan amqp091.Delivery, within time.Duration) {
	t.Helper()
	select {
	case d := <-ds:
		t.Fatalf("unexpected message %s %s", d.RoutingKey, d.Body)
	case <-time.After(within):
	}
}

// TestInboxRepublishedSubmit: the same task_submit twice yields the same
// task_accepted twice and exactly one session.
func TestInboxRepublishedSubmit(t *testing.T) {
	caller := amqptest.AlphaID
	c := startCallee(t, 0, tamqp.InboxOpts{})
	alpha := amqptest.Dial(t, amqptest.AlphaURL())
	ds := eventQueue(t, alpha, caller)
	env, body := submitBody(t, caller)
	var first string
	for i := 0; i < 2; i++ {
		publish(t, alpha, c.id, amqptest.AlphaUser, commandPublishing(env, body))
		d, rep := next(t, ds, 10*time.Second)
		if rep.Type != wire.TypeTaskAccepted {
			t.Fatalf("reply %d: %s", i, rep.Type)
		}
		if irt, _ := d.Headers[wire.HeaderInReplyTo].(string); irt != env.MessageID.String() {
			t.Fatalf("in-reply-to %q", irt)
		}
		if want := caller + "." + rep.SessionID.String() + ".task_accepted"; d.RoutingKey != want || d.CorrelationId != rep.SessionID.String() || d.UserId != amqptest.EdgeUser {
			t.Fatalf("routing key %q (want %q), correlation %q, user %q", d.RoutingKey, want, d.CorrelationId, d.UserId)
		}
		// task_completed of the 0-event echo session follows the first answer.
		if i == 0 {
			first = d.MessageId
			if _, fin := next(t, ds, 10*time.Second); fin.Type != wire.TypeTaskCompleted {
				t.Fatalf("want task_completed, got %s", fin.Type)
			}
		} else if d.MessageId != first {
			t.Fatalf("second answer has message_id %s, first %s", d.MessageId, first)
		}
	}
	quiet(t, ds, 300*time.Millisecond)
	if c.echo.Calls() != 1 || c.echo.Sessions() != 1 {
		t.Fatalf("engine called %d times, %d sessions", c.echo.Calls(), c.echo.Sessions())
	}
	if s := c.in.Stats(); s.Handled != 1 || s.Duplicates != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestInboxHostile: poison and hostile commands are refused with the right
// answer, nothing reaches the engine, and the consumer keeps consuming.
func TestInboxHostile(t *testing.T) {
	alphaID := amqptest.AlphaID
	betaID := amqptest.BetaID
	c := startCallee(t, 0, tamqp.InboxOpts{
		MaxBodySize: 4096,
		CallerOf: func(user string) (string, bool) {
			switch user {
			case amqptest.AlphaUser:
				return alphaID, true
			case amqptest.BetaUser:
				return betaID, true
			}
			return "", false
		},
	})
	alpha := amqptest.Dial(t, amqptest.AlphaURL())
	beta := amqptest.Dial(t, amqptest.BetaURL())
	alphaQ := eventQueue(t, alpha, alphaID)
	betaQ := eventQueue(t, beta, betaID)

	mid := func() string { return uuid.NewString() }
	raw := func(id, typ, caller, extra string) []byte {
		return []byte(fmt.Sprintf(`{"hcp_version":"1.0","message_id":%q,"timestamp":"2026-01-15T08:30:00.000Z","session_id":null,"type":%q,"payload":{"capability":"echo","caller_id":%q,"intent":"x","inputs":{%s}}}`, id, typ, caller, extra))
	}
	pub := func(id, typ string, body []byte) amqp091.Publishing {
		return amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding, MessageId: id, Type: typ, Body: body}
	}
	type want struct {
		queue  <-chan amqp091.Delivery // nil: no answer anywhere
		reason string
	}
	cases := []struct {
		name string
		conn *amqp091.Connection
		user string
		p    func(id string) amqp091.Publishing
		want want
	}{
		{"malformed JSON", alpha, amqptest.AlphaUser, func(id string) amqp091.Publishing {
			// No caller_id can be read: answered to the login's caller.
			return pub(id, "task_submit", []byte(`{"hcp_version":"1.0","message_id":"`+id+`",`))
		}, want{alphaQ, wire.ReasonInvalidInput}},
		{"wrong types", alpha, amqptest.AlphaUser, func(id string) amqp091.Publishing {
			b := []byte(fmt.Sprintf(`{"hcp_version":1.0,"message_id":%q,"timestamp":12,"session_id":null,"type":"task_submit","payload":{"capability":"echo","caller_id":%q,"intent":"x","inputs":[]}}`, id, alphaID))
			return pub(id, "task_submit", b)
		}, want{alphaQ, wire.ReasonInvalidInput}},
		{"oversized", alpha, amqptest.AlphaUser, func(id string) amqp091.Publishing {
			return pub(id, "task_submit", raw(id, "task_submit", alphaID, `"pad":"`+strings.Repeat("x", 8000)+`"`))
		}, want{alphaQ, wire.ReasonInvalidInput}},
		{"unknown type", alpha, amqptest.AlphaUser, func(id string) amqp091.Publishing {
			return pub(id, "task_explode", raw(id, "task_explode", alphaID, ""))
		}, want{alphaQ, wire.ReasonInvalidInput}},
		{"event type on the command queue", alpha, amqptest.AlphaUser, func(id string) amqp091.Publishing {
			b := []byte(fmt.Sprintf(`{"hcp_version":"1.0","message_id":%q,"timestamp":"2026-01-15T08:30:00.000Z","session_id":null,"type":"task_rejected","payload":{"reason_code":"x","reason_message":"y","caller_id":%q}}`, id, alphaID))
			return pub(id, "task_rejected", b)
		}, want{alphaQ, wire.ReasonInvalidInput}},
		{"session_id on task_submit", alpha, amqptest.AlphaUser, func(id string) amqp091.Publishing {
			b := strings.Replace(string(raw(id, "task_submit", alphaID, "")), `"session_id":null`, `"session_id":"`+uuid.NewString()+`"`, 1)
			return pub(id, "task_submit", []byte(b))
		}, want{alphaQ, wire.ReasonInvalidInput}},
		{"property disagrees with the body", alpha, amqptest.AlphaUser, func(id string) amqp091.Publishing {
			p := pub(id, "task_submit", raw(id, "task_submit", alphaID, ""))
			p.ContentType = "text/plain"
			return p
		}, want{alphaQ, wire.ReasonInvalidInput}},
		{"missing user_id", alpha, "", func(id string) amqp091.Publishing {
			return pub(id, "task_submit", raw(id, "task_submit", alphaID, ""))
		}, want{alphaQ, wire.ReasonUnauthorized}},
		{"beta as alpha", beta, amqptest.BetaUser, func(id string) amqp091.Publishing {
			return pub(id, "task_submit", raw(id, "task_submit", alphaID, ""))
		}, want{betaQ, wire.ReasonUnauthorized}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := mid()
			publish(t, tc.conn, c.id, tc.user, tc.p(id))
			if tc.want.queue == nil {
				quiet(t, alphaQ, 300*time.Millisecond)
				return
			}
			d, rep := next(t, tc.want.queue, 10*time.Second)
			rj, err := rep.TaskRejected()
			if err != nil || rj.ReasonCode != tc.want.reason {
				t.Fatalf("answer %s %+v %v", rep.Type, rj, err)
			}
			if irt, _ := d.Headers[wire.HeaderInReplyTo].(string); irt != id {
				t.Fatalf("in-reply-to %q, want %q", irt, id)
			}
			if !strings.HasSuffix(d.RoutingKey, ".none.task_rejected") {
				t.Fatalf("routing key %q", d.RoutingKey)
			}
			t.Logf("refused: %s", rj.ReasonMessage)
		})
	}
	quiet(t, alphaQ, 200*time.Millisecond)
	quiet(t, betaQ, 10*time.Millisecond)
	if n := c.echo.Calls(); n != 0 {
		t.Fatalf("engine called %d times for hostile messages", n)
	}
	// A RabbitMQ login cannot claim another login's user_id: the broker
	// closes the channel (406 PRECONDITION_FAILED).
	ch, err := beta.Channel()
	if err != nil {
		t.Fatal(err)
	}
	env, body := submitBody(t, alphaID)
	p := commandPublishing(env, body)
	p.UserId = amqptest.AlphaUser
	ch.Confirm(false)
	closed := ch.NotifyClose(make(chan *amqp091.Error, 1))
	ch.PublishWithContext(context.Background(), wire.CommandsExchange, c.id, false, false, p)
	select {
	case e := <-closed:
		if e == nil || e.Code != amqp091.PreconditionFailed {
			t.Fatalf("broker answered a forged user_id with %v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("broker accepted a forged user_id")
	}
	// The consumer keeps consuming: a good submit is accepted.
	env, body = submitBody(t, alphaID)
	publish(t, alpha, c.id, amqptest.AlphaUser, commandPublishing(env, body))
	if _, rep := next(t, alphaQ, 10*time.Second); rep.Type != wire.TypeTaskAccepted {
		t.Fatalf("good submit answered with %s", rep.Type)
	}
	if c.echo.Calls() != 1 {
		t.Fatalf("engine calls %d", c.echo.Calls())
	}
	if u := c.echo.Users(); len(u) != 1 || u[0] != amqptest.AlphaUser {
		t.Fatalf("users handed to the engine: %v", u)
	}
	s := c.in.Stats()
	t.Logf("inbox stats %+v", s)
	if s.Refused != uint64(len(cases)) || s.Answered != uint64(len(cases)) {
		t.Fatalf("stats %+v", s)
	}
}

// Regression: Run must return promptly when its context ends while the
// connection stays up (the daemon stops intake before it closes the link).
func TestInboxRunStopsOnContext(t *testing.T) {
	c := startCallee(t, 1, tamqp.InboxOpts{})
	conn := amqptest.Dial(t, amqptest.URL())
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: c.id}); err != nil {
		t.Fatal(err)
	}
	ch.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.in.Run(ctx, conn) }()
	time.Sleep(300 * time.Millisecond) // consuming
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended (connection still up)")
	}
}
