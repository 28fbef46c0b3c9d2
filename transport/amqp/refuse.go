package amqp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// Refusal is a command the inbox refused before the engine saw it, as
// InboxOpts.Refused receives it. What the command says of itself was read
// leniently from a message that did not pass: trust only UserID (RabbitMQ
// validated it) and CallerID (derived from it, or the payload's when no
// mapping is configured).
type Refusal struct {
	// MessageID is the command's message_id (the body's, else the AMQP
	// property; a canonical UUID v4), "" when none could be read.
	MessageID string
	// Type is the command's type as it names it (the body's, else the AMQP
	// property); it may be no type at all.
	Type wire.Type
	// SessionID is the body's session_id when it is a canonical UUID v4.
	SessionID string
	// UserID is the AMQP user_id ("" when the message had none).
	UserID string
	// CallerID is the caller answered, "" when nobody was.
	CallerID string
	// Reason is the reason code (wire.ReasonInvalidInput,
	// wire.ReasonUnauthorized) and Detail the message, naming the field at
	// fault.
	Reason, Detail string
	// Err is the decoding or property error (a *wire.DecodeError) of an
	// invalid_input refusal, nil for an authentication refusal.
	Err error
}

// fault is what handle found wrong with a delivery.
type fault struct {
	reason, detail string
	// auth marks an authentication refusal: not recorded in the window (an
	// impostor must not poison a message_id for its owner) and answered to
	// route (the login's own caller) when set, else — for a message without
	// user_id — to the caller_id it names.
	auth  bool
	route string
	cause error
}

// refuse rejects d without requeue and, when a reply route can be derived,
// answers it with task_rejected (request_refused for an extension request)
// with the hcp-in-reply-to header; InboxOpts.Refused sees every refusal, in
// the transaction of its answer. An abort is never answered (L1 has no
// reply to it). A command that does not decode is answered to the caller
// replyRoute finds; it is recorded in the de-duplication window unless it
// is an extension request (a read: never recorded) or r.auth.
func (in *Inbox) refuse(d amqp091.Delivery, r fault) error {
	in.refused.Add(1)
	msgID, payloadCaller, typ, sid := peekRoute(d, in.opts.MaxBodySize)
	route := r.route
	if route == "" && !(r.auth && d.UserId != "") {
		route = in.replyRoute(d.UserId, payloadCaller)
	}
	t := wire.Type(typ)
	if msgID == "" || t == wire.TypeAbort {
		route = ""
	}
	detail := r.detail
	if len(detail) > 500 {
		detail = detail[:500]
	}
	in.log.Warn("amqp: command refused", "reason", r.reason, "detail", detail, "user_id", d.UserId,
		"message_id", msgID, "type", typ, "reply_to", route, "err", ErrRefused)
	var ms []outbox.Message
	if route != "" {
		var p wire.Payload = &wire.TaskRejected{ReasonCode: r.reason, ReasonMessage: detail}
		if t.IsRequest() { // an extension request is refused in its own terms
			p = &wire.RequestRefused{RequestType: t, ReasonCode: r.reason, ReasonMessage: detail}
		}
		env, err := wire.NewEnvelope(nil, p, in.opts.Clock.Now())
		var m outbox.Message
		if err == nil {
			m, err = outbox.MessageFor(route, env, msgID)
		}
		if err != nil {
			in.log.Warn("amqp: refusal not answered", "message_id", msgID, "err", err)
			route = ""
		} else {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 && in.opts.Refused == nil {
		return d.Reject(false)
	}
	recordID := msgID
	if r.auth || t.IsRequest() || len(ms) == 0 {
		recordID = ""
	}
	now := in.opts.Clock.Now()
	err := in.db.Update(func(tx *bolt.Tx) error {
		if in.opts.Refused != nil {
			if err := in.opts.Refused(tx, Refusal{MessageID: msgID, Type: t, SessionID: sid, UserID: d.UserId, CallerID: route,
				Reason: r.reason, Detail: detail, Err: r.cause}); err != nil {
				return err
			}
		}
		return in.recordTx(tx, recordID, now, ms)
	})
	if err != nil {
		return in.storageFailed(d, err, "record a refusal")
	}
	if len(ms) > 0 {
		in.answered.Add(1)
	}
	return d.Reject(false)
}

// replyRoute is the caller a refused command is answered to when the
// refusal names none: the broker-validated login's caller when a mapping
// is configured (InboxOpts.CallerOf; "" for a login that maps to none) —
// the login is the caller, a payload's caller_id is not, and an extension
// request carries none — else, and for a message without user_id, the
// payload's caller_id.
func (in *Inbox) replyRoute(userID, payloadCaller string) string {
	if in.opts.CallerOf == nil || userID == "" {
		return payloadCaller
	}
	c, ok := in.opts.CallerOf(userID)
	if !ok {
		return ""
	}
	return c
}

// peekRoute reads, leniently, what a refusal needs from a message that did
// not pass: the message_id (body, else the property; a canonical UUID v4),
// the payload's caller_id (a valid id), the type and the session_id (a
// canonical UUID v4). Bodies over 8× the size bound are not parsed.
func peekRoute(d amqp091.Delivery, maxBody int) (msgID, caller, typ, session string) {
	okID := func(s string) bool {
		u, err := uuid.Parse(s)
		return err == nil && len(s) == 36 && u.Version() == 4
	}
	var top map[string]json.RawMessage
	if len(d.Body) <= 8*maxBody && json.Unmarshal(bytes.TrimSpace(d.Body), &top) == nil {
		var s string
		if json.Unmarshal(top["message_id"], &s) == nil && okID(s) {
			msgID = strings.ToLower(s)
		}
		_ = json.Unmarshal(top["type"], &typ)
		if s = ""; json.Unmarshal(top["session_id"], &s) == nil && okID(s) {
			session = strings.ToLower(s)
		}
		var p struct {
			CallerID json.RawMessage `json:"caller_id"`
		}
		if json.Unmarshal(top["payload"], &p) == nil {
			var c string
			if json.Unmarshal(p.CallerID, &c) == nil && wire.CheckID(c) == nil {
				caller = c
			}
		}
	}
	if msgID == "" && okID(d.MessageId) {
		msgID = strings.ToLower(d.MessageId)
	}
	if typ == "" {
		typ = d.Type
	}
	return msgID, caller, typ, session
}
