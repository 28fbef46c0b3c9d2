package amqp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// acker records what the inbox did with a delivery.
type acker struct{ acked, rejected, nacked, requeued int }

func (a *acker) Ack(uint64, bool) error { a.acked++; return nil }
func (a *acker) Reject(_ uint64, requeue bool) error {
	a.rejected++
	if requeue {
		a.requeued++
	}
	return nil
}
func (a *acker) Nack(_ uint64, _ bool, requeue bool) error {
	a.nacked++
	if requeue {
		a.requeued++
	}
	return nil
}

// refuseRig is an inbox without a broker: deliveries are handed to handle
// directly and the answers read from the outbox.
type refuseRig struct {
	in      *Inbox
	ob      *outbox.Outbox
	db      *bolt.DB
	calls   int // of the engine
	refused []Refusal
	failing error // returned by the Refused hook
}

const (
	refAlphaUser = "harness-alpha-001"
	refAlpha     = "harness-alpha-001"
	refBetaUser  = "harness-beta-002"
	refBeta      = "harness-beta-002"
)

func newRefuseRig(t *testing.T) *refuseRig {
	t.Helper()
	r := &refuseRig{}
	var err error
	r.db, err = bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.ob, err = outbox.New(r.db, outbox.Opts{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ob.Close(); r.db.Close() })
	eng := EngineFunc(func(context.Context, Command) (Outcome, error) { r.calls++; return Outcome{}, nil })
	r.in, err = NewInbox(r.db, r.ob, eng, InboxOpts{
		CalleeID: "hcp-edge",
		CallerOf: func(user string) (string, bool) {
			switch user {
			case refAlphaUser:
				return refAlpha, true
			case refBetaUser:
				return refBeta, true
			}
			return "", false
		},
		Refused: func(tx *bolt.Tx, x Refusal) error {
			if tx == nil || !tx.Writable() {
				return errors.New("Refused outside a write transaction")
			}
			if r.failing != nil {
				return r.failing
			}
			r.refused = append(r.refused, x)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// deliver hands the inbox one delivery of body from user.
func (r *refuseRig) deliver(t *testing.T, user, id, typ, body string) (*acker, error) {
	t.Helper()
	a := &acker{}
	d := amqp091.Delivery{Acknowledger: a, ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding,
		DeliveryMode: wire.DeliveryMode, MessageId: id, Type: typ, UserId: user, Body: []byte(body)}
	return a, r.in.handle(context.Background(), d)
}

// answers are the messages waiting in the outbox.
func (r *refuseRig) answers(t *testing.T) []outbox.Entry {
	t.Helper()
	es, err := r.ob.Peek(100)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// inWindow reports whether id is in the de-duplication window.
func (r *refuseRig) inWindow(t *testing.T, id string) bool {
	t.Helper()
	var found bool
	if err := r.db.View(func(tx *bolt.Tx) error {
		found = tx.Bucket(r.in.name).Bucket(bucketIDs).Get([]byte(id)) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

func extRequest(id, typ, session, payload string) string {
	s := "null"
	if session != "" {
		s = `"` + session + `"`
	}
	return fmt.Sprintf(`{"hcp_version":"1.0","message_id":%q,"timestamp":"2026-01-15T08:30:00.000Z","session_id":%s,"type":%q,"payload":%s}`,
		id, s, typ, payload)
}

// TestInboxRefusesBadExtensionRequest: an extension request that does not
// decode carries no caller_id; it is answered request_refused
// invalid_input, naming the field, to the caller its broker login maps to,
// in reply to its message_id, through the outbox; the Refused hook sees it
// in that transaction; the engine never does; it is rejected without
// requeue and stays out of the de-duplication window (a read).
func TestInboxRefusesBadExtensionRequest(t *testing.T) {
	sid := uuid.NewString()
	cases := []struct {
		name, typ, session, payload string
		field                       string // in the reason
		sentinel                    error
	}{
		{"artifact_request, traversal", string(wire.TypeArtifactRequest), sid,
			`{"uri":"hcp://` + sid + `/artifacts/../../etc/passwd"}`, "payload.uri: path traversal", wire.ErrPathTraversal},
		{"artifact_request, bad offset", string(wire.TypeArtifactRequest), sid,
			`{"uri":"hcp://` + sid + `/artifacts/a.svg","offset":"zero"}`, "payload.offset", wire.ErrWrongType},
		{"capabilities_request, capability not a string", string(wire.TypeCapabilitiesRequest), "",
			`{"capability":42}`, "payload.capability", wire.ErrWrongType},
		{"capabilities_request, payload not an object", string(wire.TypeCapabilitiesRequest), "",
			`[]`, "payload", wire.ErrWrongType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRefuseRig(t)
			id := uuid.NewString()
			a, err := r.deliver(t, refBetaUser, id, tc.typ, extRequest(id, tc.typ, tc.session, tc.payload))
			if err != nil || a.rejected != 1 || a.requeued != 0 || a.acked != 0 {
				t.Fatalf("delivery: %v, %+v; want rejected without requeue", err, a)
			}
			es := r.answers(t)
			if len(es) != 1 {
				t.Fatalf("%d answers, want 1", len(es))
			}
			m := es[0]
			env, err := wire.Decode(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			rr, err := env.RequestRefused()
			if err != nil || rr.ReasonCode != wire.ReasonInvalidInput || string(rr.RequestType) != tc.typ ||
				!strings.Contains(rr.ReasonMessage, tc.field) {
				t.Fatalf("answer %s %+v %v; want request_refused invalid_input naming %s", env.Type, rr, err, tc.field)
			}
			if m.InReplyTo != id || m.RoutingKey != refBeta+".none.request_refused" || m.Class != outbox.Protocol || env.SessionID != nil {
				t.Fatalf("answer in reply to %q, routed %q, class %v, session %v", m.InReplyTo, m.RoutingKey, m.Class, env.SessionID)
			}
			if len(r.refused) != 1 {
				t.Fatalf("Refused hook called %d times", len(r.refused))
			}
			x := r.refused[0]
			if x.MessageID != id || string(x.Type) != tc.typ || x.SessionID != tc.session || x.UserID != refBetaUser ||
				x.CallerID != refBeta || x.Reason != wire.ReasonInvalidInput || !errors.Is(x.Err, tc.sentinel) {
				t.Fatalf("Refused saw %+v", x)
			}
			if r.calls != 0 || r.inWindow(t, id) {
				t.Fatalf("engine calls %d, in the window %v", r.calls, r.inWindow(t, id))
			}
			if s := r.in.Stats(); s.Refused != 1 || s.Answered != 1 {
				t.Fatalf("stats %+v", s)
			}
			t.Logf("refused: %s", rr.ReasonMessage)
		})
	}
}

// TestInboxRefusalRoutes: who an undecodable command is answered to, and
// what the Refused hook sees when nobody is.
func TestInboxRefusalRoutes(t *testing.T) {
	sid := uuid.NewString()
	traversal := func(id string) string {
		return extRequest(id, string(wire.TypeArtifactRequest), sid, `{"uri":"hcp://`+sid+`/artifacts/../x"}`)
	}
	cases := []struct {
		name, user, typ string
		body            func(id string) string
		route           string // "" for no answer
		answer          wire.Type
		recorded        bool // in the de-duplication window
	}{
		{"login mapped to no caller", "harness-unknown", string(wire.TypeArtifactRequest), traversal, "", "", false},
		{"request naming another caller_id in its payload", refBetaUser, string(wire.TypeCapabilitiesRequest), func(id string) string {
			return extRequest(id, string(wire.TypeCapabilitiesRequest), "", `{"capability":7,"caller_id":"`+refAlpha+`"}`)
		}, refBeta, wire.TypeRequestRefused, false},
		{"task_submit that is not JSON", refAlphaUser, string(wire.TypeTaskSubmit), func(id string) string {
			return `{"hcp_version":"1.0","message_id":"` + id + `",`
		}, refAlpha, wire.TypeTaskRejected, true},
		{"undecodable task_submit naming another caller", refBetaUser, string(wire.TypeTaskSubmit), func(id string) string {
			return extRequest(id, string(wire.TypeTaskSubmit), "", `{"capability":"x","caller_id":"`+refAlpha+`","intent":7,"inputs":{}}`)
		}, refBeta, wire.TypeTaskRejected, true},
		{"abort", refAlphaUser, string(wire.TypeAbort), func(id string) string {
			return extRequest(id, string(wire.TypeAbort), "", `{}`)
		}, "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRefuseRig(t)
			id := uuid.NewString()
			a, err := r.deliver(t, tc.user, id, tc.typ, tc.body(id))
			if err != nil || a.rejected != 1 || a.requeued != 0 {
				t.Fatalf("delivery: %v, %+v", err, a)
			}
			es := r.answers(t)
			switch {
			case tc.route == "" && len(es) != 0:
				t.Fatalf("answered %s to %s; want no answer", es[0].Type, es[0].RoutingKey)
			case tc.route != "" && (len(es) != 1 || es[0].RoutingKey != tc.route+".none."+string(tc.answer) || es[0].InReplyTo != id):
				t.Fatalf("answers %+v; want %s to %s in reply to %s", es, tc.answer, tc.route, id)
			}
			if len(r.refused) != 1 || r.refused[0].CallerID != tc.route || r.refused[0].UserID != tc.user {
				t.Fatalf("Refused saw %+v", r.refused)
			}
			if got := r.inWindow(t, id); got != tc.recorded {
				t.Fatalf("in the window: %v, want %v", got, tc.recorded)
			}
			if r.calls != 0 {
				t.Fatal("the engine saw a refused command")
			}
		})
	}
}

// TestInboxRefusalHookFails: when the Refused hook (the audit) cannot
// write, neither is the answer queued: the delivery is requeued and the
// inbox reports the storage failure.
func TestInboxRefusalHookFails(t *testing.T) {
	r := newRefuseRig(t)
	r.failing = errors.New("audit log full")
	id := uuid.NewString()
	sid := uuid.NewString()
	a, err := r.deliver(t, refAlphaUser, id, string(wire.TypeArtifactRequest),
		extRequest(id, string(wire.TypeArtifactRequest), sid, `{"uri":"hcp://`+sid+`/artifacts/../x"}`))
	if err == nil || !strings.Contains(err.Error(), "audit log full") || a.nacked != 1 || a.requeued != 1 || a.rejected != 0 {
		t.Fatalf("delivery: %v, %+v; want nacked with requeue and the error", err, a)
	}
	if es := r.answers(t); len(es) != 0 {
		t.Fatalf("answer queued without its audit: %+v", es)
	}
	if s := r.in.Stats(); s.Failed != 1 || s.Answered != 0 {
		t.Fatalf("stats %+v", s)
	}
}
