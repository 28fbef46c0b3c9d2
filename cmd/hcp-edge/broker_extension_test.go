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

	"hcp-edge/session/audit"
	"hcp-edge/session/executor"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// extensionAnswerWithin is how soon a malformed extension request must be
// answered (issue 22): a caller that hears nothing republishes forever.
const extensionAnswerWithin = time.Second

// TestExtensionRequestBadInput: extension requests that do not decode,
// published straight to hcp.commands by caller logins gate.broker_users
// maps — harness-alpha-001's artifact_request for
// hcp://{its own session}/artifacts/../../etc/passwd and its
// capabilities_request whose capability is a number, harness-beta-002's
// capabilities_request that is not JSON — each get request_refused
// invalid_input naming the field, routed to the login's caller with
// hcp-in-reply-to = the request's message_id, within a second, although
// none carries a caller_id. Nothing is served (no artifact_chunk, no
// capabilities_response), and each refusal is in the audit log with the
// login and its caller.
func TestExtensionRequestBadInput(t *testing.T) {
	t.Parallel()
	b := newBrokerEnv(t)
	beta := amqptest.Dial(t, b.betaURL())
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	alphaTap := b.tap()
	betaTap := tapOn(t, beta, amqptest.BetaID)

	// A session of alpha's own, so the traversal names a real one.
	c := b.client(nil)
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.RigStatusName, CapabilityVersion: "1.x",
		Intent: "a session whose artifacts the traversal reaches past", Inputs: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := collect(t, task, hangGuard); msgs[len(msgs)-1].Type != wire.TypeTaskCompleted {
		t.Fatalf("rig-status: final %s", msgs[len(msgs)-1].Type)
	}
	s, _ := task.Session()
	sid := s.String()
	drain(alphaTap)

	body := func(id string, typ wire.Type, session, payload string) []byte {
		sj := "null"
		if session != "" {
			sj = `"` + session + `"`
		}
		return []byte(fmt.Sprintf(`{"hcp_version":"1.0","message_id":%q,"timestamp":"2026-01-15T08:30:00.000Z","session_id":%s,"type":%q,"payload":%s}`,
			id, sj, typ, payload))
	}
	cases := []struct {
		name   string
		conn   *amqp091.Connection
		user   string
		caller string
		tap    <-chan amqp091.Delivery
		typ    wire.Type
		body   func(id string) []byte
		field  string // the reason names it
		audit  audit.Kind
	}{
		{"artifact_request, path traversal", b.conn, amqptest.AlphaUser, b.callerID, alphaTap, wire.TypeArtifactRequest, func(id string) []byte {
			return body(id, wire.TypeArtifactRequest, sid, `{"uri":"hcp://`+sid+`/artifacts/../../etc/passwd","offset":0}`)
		}, "payload.uri: path traversal", audit.KindDataAccess},
		{"capabilities_request, capability not a string", b.conn, amqptest.AlphaUser, b.callerID, alphaTap, wire.TypeCapabilitiesRequest,
			func(id string) []byte { return body(id, wire.TypeCapabilitiesRequest, "", `{"capability":42}`) },
			"payload.capability", audit.KindDiscovery},
		{"capabilities_request, not JSON", beta, amqptest.BetaUser, amqptest.BetaID, betaTap, wire.TypeCapabilitiesRequest,
			func(id string) []byte {
				return []byte(`{"hcp_version":"1.0","message_id":"` + id + `","type":"capabilities_request","payload":{`)
			},
			"malformed JSON", audit.KindDiscovery},
	}
	ids := map[string]int{} // message_id → case
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := uuid.NewString()
			ids[id] = i
			t0 := time.Now()
			publishCommand(t, tc.conn, b.calleeID, amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding,
				DeliveryMode: wire.DeliveryMode, MessageId: id, Type: string(tc.typ), Timestamp: time.Now(), UserId: tc.user, Body: tc.body(id)})
			var d amqp091.Delivery
			select {
			case d = <-tc.tap:
			case <-time.After(hangGuard):
				t.Fatalf("no answer to %s within %v", id, hangGuard)
			}
			took := time.Since(t0)
			env, err := wire.Decode(d.Body)
			if err != nil {
				t.Fatalf("undecodable answer: %v", err)
			}
			rr, err := env.RequestRefused()
			irt, _ := d.Headers[wire.HeaderInReplyTo].(string)
			if err != nil || rr.ReasonCode != wire.ReasonInvalidInput || rr.RequestType != tc.typ || !strings.Contains(rr.ReasonMessage, tc.field) {
				t.Fatalf("answer %s %+v (%v); want request_refused invalid_input naming %q", env.Type, rr, err, tc.field)
			}
			if irt != id || d.RoutingKey != tc.caller+".none.request_refused" || d.UserId != amqptest.EdgeUser || d.DeliveryMode != 2 {
				t.Fatalf("in reply to %q (want %s), routing key %q, user_id %q, delivery_mode %d", irt, id, d.RoutingKey, d.UserId, d.DeliveryMode)
			}
			if took > extensionAnswerWithin {
				t.Fatalf("answered after %v, want within %v", took.Round(time.Millisecond), extensionAnswerWithin)
			}
			t.Logf("%s answered in %v: %s", tc.caller, took.Round(time.Millisecond), rr.ReasonMessage)
		})
	}
	if t.Failed() {
		t.FailNow()
	}
	// Nothing else arrives for either caller: no chunk, no capabilities.
	quietFor := func(name string, tap <-chan amqp091.Delivery) {
		select {
		case d := <-tap:
			t.Fatalf("%s got %s (%s in reply to %v) after the refusals", name, d.Type, d.RoutingKey, d.Headers[wire.HeaderInReplyTo])
		case <-time.After(500 * time.Millisecond):
		}
	}
	quietFor(b.callerID, alphaTap)
	quietFor(amqptest.BetaID, betaTap)

	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
	if n := strings.Count(b.logs.String(), `msg="amqp: command refused"`); n != len(cases) {
		t.Fatalf("%d refusals logged, want %d\n%s", n, len(cases), b.logs)
	}
	audited := map[string]audit.Entry{}
	for _, e := range b.auditTail(200) {
		var d struct {
			MessageID string `json:"message_id"`
		}
		if json.Unmarshal([]byte(e.Detail), &d) != nil {
			continue
		}
		if _, ok := ids[d.MessageID]; ok {
			audited[d.MessageID] = e
		}
	}
	for id, i := range ids {
		tc, name := cases[i], cases[i].name
		e, ok := audited[id]
		if !ok {
			t.Errorf("%s: the refusal of %s is not in the audit log", name, id)
			continue
		}
		var d map[string]string
		_ = json.Unmarshal([]byte(e.Detail), &d)
		user := d["user"] + d["broker_user"]
		if e.Kind != tc.audit || d["caller"] != tc.caller || user != tc.user || d["refused"] != wire.ReasonInvalidInput ||
			!strings.Contains(d["reason"], tc.field) {
			t.Errorf("%s: audited %s %s", name, e.Kind, e.Detail)
		}
		if tc.audit == audit.KindDataAccess && e.SessionID != sid {
			t.Errorf("%s: audited under session %q, want %s", name, e.SessionID, sid)
		}
	}
}

// drain empties tap of what is waiting now.
func drain(tap <-chan amqp091.Delivery) {
	for {
		select {
		case <-tap:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}
