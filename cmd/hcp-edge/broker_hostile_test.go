package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rabbitmq/amqp091-go"

	"hcp-edge/session/executor"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// publishCommand publishes p to hcp.commands with routing key callee on a
// channel of its own and waits for the broker's confirm.
func publishCommand(t *testing.T, conn *amqp091.Connection, callee string, p amqp091.Publishing) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, wire.CommandsExchange, callee, false, false, p)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := conf.WaitContext(ctx); err != nil || !ok {
		t.Fatalf("broker did not confirm the command %s: %v", p.MessageId, err)
	}
}

// tapOn is caller's own event queue, declared afresh and consumed with its
// login (conn): the only queue a caller may read.
func tapOn(t *testing.T, conn *amqp091.Connection, caller string) <-chan amqp091.Delivery {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q := wire.EventQueuePrefix + caller
	_, _ = ch.QueueDelete(q, false, false, false) // an earlier test's
	if err := tamqp.DeclareCallerQueue(ch, tamqp.CallerQueueOpts{CallerID: caller}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(q, false, false, false); _ = ch.Close() })
	ds, err := ch.Consume(q, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestDaemonPoisonAndHostile: with the daemon on the real broker, commands
// published straight to hcp.commands (routing key = the callee id) that are
// malformed, mistyped, oversized (> 1 MiB), of an unknown type, a
// task_submit with a session_id, one without user_id, and one from
// harness-beta-002 claiming harness-alpha-001's caller_id. Each is refused,
// answered with task_rejected and the inbox's reason code where a reply
// route can be derived (the login's caller; the payload's caller_id only
// without user_id; never the impersonated caller), nothing runs (no
// session, no write to the rig but the watchdog kicks), and a valid
// rig-status of harness-alpha-001 then completes: the consumer keeps
// consuming.
func TestDaemonPoisonAndHostile(t *testing.T) {
	t.Parallel()
	b := newBrokerEnv(t)
	// configs/sim.yaml maps harness-beta-002 to a caller id of its own
	// (rig-status only), so that the impostor's refusal has a route: its
	// login's own queue.
	betaCaller := amqptest.BetaID
	beta := amqptest.Dial(t, b.betaURL())
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	alphaTap := b.tap()
	betaTap := tapOn(t, beta, betaCaller)
	mark, _ := b.p.WriteLogStats()

	raw := func(id, typ, caller, extra string) []byte {
		return []byte(fmt.Sprintf(`{"hcp_version":"1.0","message_id":%q,"timestamp":"2026-01-15T08:30:00.000Z","session_id":null,"type":%q,"payload":{"capability":"rig-status","caller_id":%q,"intent":"hostile","inputs":{%s}}}`, id, typ, caller, extra))
	}
	pub := func(id, typ, user string, body []byte) amqp091.Publishing {
		return amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding, DeliveryMode: wire.DeliveryMode,
			MessageId: id, Type: typ, Timestamp: time.Now(), UserId: user, Body: body}
	}
	alpha := amqptest.AlphaUser
	type hostile struct {
		name   string
		conn   *amqp091.Connection
		p      func(id string) amqp091.Publishing
		route  string // the caller the refusal is answered to; "" for none
		reason string
	}
	cases := []hostile{
		{"malformed JSON", b.conn, func(id string) amqp091.Publishing {
			// Not JSON: no caller_id can be read, and the answer goes to the
			// caller alpha's login maps to.
			return pub(id, "task_submit", alpha, []byte(`{"hcp_version":"1.0","message_id":"`+id+`","type":"task_submit","payload":{"caller_id":"`+b.callerID+`"`))
		}, b.callerID, wire.ReasonInvalidInput},
		{"wrong field types", b.conn, func(id string) amqp091.Publishing {
			return pub(id, "task_submit", alpha, []byte(fmt.Sprintf(`{"hcp_version":1.0,"message_id":%q,"timestamp":12,"session_id":null,"type":"task_submit","payload":{"capability":["rig-status"],"caller_id":%q,"intent":7,"inputs":[]}}`, id, b.callerID)))
		}, b.callerID, wire.ReasonInvalidInput},
		{"oversized body", b.conn, func(id string) amqp091.Publishing {
			body := raw(id, "task_submit", b.callerID, `"pad":"`+strings.Repeat("x", wire.DefaultMaxBodySize+1024)+`"`)
			return pub(id, "task_submit", alpha, body)
		}, b.callerID, wire.ReasonInvalidInput},
		{"unknown message type", b.conn, func(id string) amqp091.Publishing {
			return pub(id, "task_explode", alpha, raw(id, "task_explode", b.callerID, ""))
		}, b.callerID, wire.ReasonInvalidInput},
		{"task_submit with a session_id", b.conn, func(id string) amqp091.Publishing {
			body := strings.Replace(string(raw(id, "task_submit", b.callerID, "")), `"session_id":null`, `"session_id":"`+uuid.NewString()+`"`, 1)
			return pub(id, "task_submit", alpha, []byte(body))
		}, b.callerID, wire.ReasonInvalidInput},
		{"no user_id", b.conn, func(id string) amqp091.Publishing {
			return pub(id, "task_submit", "", raw(id, "task_submit", b.callerID, ""))
		}, b.callerID, wire.ReasonUnauthorized},
		{"beta claims alpha's caller_id", beta, func(id string) amqp091.Publishing {
			return pub(id, "task_submit", amqptest.BetaUser, raw(id, "task_submit", b.callerID, ""))
		}, betaCaller, wire.ReasonUnauthorized},
	}
	want := map[string]hostile{} // by message_id
	for _, tc := range cases {
		id := uuid.NewString()
		p := tc.p(id)
		if tc.name == "oversized body" && len(p.Body) <= wire.DefaultMaxBodySize {
			t.Fatalf("oversized body of %d bytes", len(p.Body))
		}
		publishCommand(t, tc.conn, b.calleeID, p)
		want[id] = tc
		t.Logf("published %s (%s, %d bytes)", tc.name, id, len(p.Body))
	}

	// A valid task after them: the queue is FIFO and the inbox handles one
	// delivery at a time, so its completion means every hostile command was
	// decided before it.
	c := b.client(nil)
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.RigStatusName, CapabilityVersion: "1.x",
		Intent: "rig-status after the hostile commands", Inputs: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, task, hangGuard)
	fin := msgs[len(msgs)-1]
	if msgs[0].Type != wire.TypeTaskAccepted || fin.Type != wire.TypeTaskCompleted {
		t.Fatalf("valid rig-status after the hostile commands: first %s, final %s (%s)", msgs[0].Type, fin.Type, mustEncode(fin))
	}
	checkSequence(t, msgs)
	sid, _ := task.Session()

	// What the broker delivered to each caller: the refusals, each with its
	// reason, in reply to its command; then the valid session's messages.
	got := map[string]string{} // message_id answered → "caller/reason"
	take := func(caller string, d amqp091.Delivery) (end bool) {
		env, err := wire.Decode(d.Body)
		if err != nil {
			t.Fatalf("undecodable delivery to %s: %v", caller, err)
		}
		if env.SessionID != nil && env.SessionID.String() == sid.String() && caller == b.callerID {
			return env.Type == wire.TypeTaskCompleted
		}
		rj, err := env.TaskRejected()
		irt, _ := d.Headers[wire.HeaderInReplyTo].(string)
		if err != nil || env.SessionID != nil {
			t.Fatalf("%s got %s of session %v (in reply to %q): %s", caller, env.Type, env.SessionID, irt, d.Body)
		}
		if d.RoutingKey != caller+".none.task_rejected" || d.UserId != amqptest.EdgeUser || d.DeliveryMode != 2 {
			t.Fatalf("refusal routing key %q user_id %q delivery_mode %d", d.RoutingKey, d.UserId, d.DeliveryMode)
		}
		if _, dup := got[irt]; dup {
			t.Fatalf("refusal of %s answered twice", irt)
		}
		got[irt] = caller + "/" + rj.ReasonCode
		t.Logf("%s: task_rejected %s in reply to %s: %s", caller, rj.ReasonCode, irt, rj.ReasonMessage)
		return false
	}
	timeout := time.After(hangGuard)
	for end := false; !end; {
		select {
		case d := <-alphaTap:
			end = take(b.callerID, d)
		case d := <-betaTap:
			take(betaCaller, d)
		case <-timeout:
			t.Fatalf("tap: no task_completed of %s; refusals so far %v", sid, got)
		}
	}
	// Everything the broker holds for the two callers has been delivered by
	// now except, possibly, beta's refusal still in flight: wait for the
	// expected set, then for nothing more.
	expect := map[string]string{}
	for id, tc := range want {
		if tc.route != "" {
			expect[id] = tc.route + "/" + tc.reason
		}
	}
	timeout = time.After(hangGuard)
	for len(got) < len(expect) {
		select {
		case d := <-alphaTap:
			take(b.callerID, d)
		case d := <-betaTap:
			take(betaCaller, d)
		case <-timeout:
			t.Fatalf("refusals %v, want %v", got, expect)
		}
	}
	for id, w := range expect {
		if got[id] != w {
			t.Errorf("%s: answered %q, want %q", want[id].name, got[id], w)
		}
	}
	for id := range got {
		if _, ok := expect[id]; !ok {
			t.Errorf("an answer in reply to %s (%s), which has no reply route", id, want[id].name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Nothing ran: the only session is the valid one, and the rig saw no
	// write but the furnace watchdog's kicks.
	all := b.sessionsJSON()
	if len(all) != 1 || all[0].ID != sid.String() || all[0].State != "COMPLETED" || all[0].Caller != b.callerID {
		t.Fatalf("sessions after the hostile commands: %+v", all)
	}
	for _, w := range b.p.Writes(mark) {
		if w.Channel != "watchdog_kick" {
			t.Errorf("rig write %+v", w)
		}
	}
	if st := c.Stats(); st.PropertyViolations != 0 || st.Invalid != 0 {
		t.Fatalf("caller stats %+v", st)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
	logs := b.logs.String()
	if n := strings.Count(logs, `msg="amqp: command refused"`); n != len(cases) {
		t.Fatalf("%d refusals logged, want %d\n%s", n, len(cases), logs)
	}
	if n := strings.Count(logs, `msg="broker submit"`); n != 1 {
		t.Fatalf("the engine saw %d submits, want 1 (the valid one)\n%s", n, logs)
	}
}
