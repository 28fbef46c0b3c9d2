package wire

import (
	"strings"
	"time"
)

// Topology names fixed by L1.
const (
	CommandsExchange   = "hcp.commands" // direct, durable
	EventsExchange     = "hcp.events"   // topic, durable
	CommandQueuePrefix = "hcp.cmd."     // + callee_id
	EventQueuePrefix   = "hcp.evt."     // + caller_id
)

// NoSession is the session segment of an event routing key when the message
// has no session (a task_rejected answering a task_submit): L1 is silent, see
// docs/PROTOCOL-NOTES.md.
const NoSession = "none"

// CommandQueue returns hcp.cmd.{calleeID}.
func CommandQueue(calleeID string) (string, error) {
	if err := CheckID(calleeID); err != nil {
		return "", withField(err, "callee_id")
	}
	return CommandQueuePrefix + calleeID, nil
}

// EventQueue returns hcp.evt.{callerID}.
func EventQueue(callerID string) (string, error) {
	if err := CheckID(callerID); err != nil {
		return "", withField(err, "caller_id")
	}
	return EventQueuePrefix + callerID, nil
}

// EventBinding returns the binding key of a caller's event queue, {callerID}.#.
func EventBinding(callerID string) (string, error) {
	if err := CheckID(callerID); err != nil {
		return "", withField(err, "caller_id")
	}
	return callerID + ".#", nil
}

// CommandRoutingKey returns the routing key of a command on hcp.commands: the
// callee's id.
func CommandRoutingKey(calleeID string) (string, error) {
	if err := CheckID(calleeID); err != nil {
		return "", withField(err, "callee_id")
	}
	return calleeID, nil
}

// EventRoutingKey returns {callerID}.{session_id}.{type} for env on
// hcp.events; the session segment is NoSession when env has none.
func EventRoutingKey(callerID string, env *Envelope) (string, error) {
	if err := CheckID(callerID); err != nil {
		return "", withField(err, "caller_id")
	}
	if env.Type.IsCommand() || !env.Type.Valid() {
		return "", derr("type", KindInvalid, string(env.Type)+" is not an event-channel type")
	}
	seg := NoSession
	if env.SessionID != nil {
		seg = env.SessionID.String()
	}
	return callerID + "." + seg + "." + string(env.Type), nil
}

// ParseEventRoutingKey splits an event routing key into caller id, session
// segment (a UUID or NoSession) and type.
func ParseEventRoutingKey(key string) (callerID, session string, t Type, err error) {
	parts := strings.Split(key, ".")
	if len(parts) != 3 {
		return "", "", "", derr("routing_key", KindMalformed, "want {caller_id}.{session_id}.{message_type}")
	}
	if err := CheckID(parts[0]); err != nil {
		return "", "", "", withField(err, "routing_key")
	}
	t = Type(parts[2])
	if !t.Valid() {
		return "", "", "", derr("routing_key", KindUnknownType, truncate(parts[2]))
	}
	return parts[0], parts[1], t, nil
}

// AMQP property values fixed by L1.
const (
	ContentType     = "application/json"
	ContentEncoding = "utf-8"
	DeliveryMode    = 2 // persistent
)

// HeaderInReplyTo is an AMQP header hcp-edge sets on task_accepted and
// task_rejected: the message_id of the task_submit they answer. L1 gives a
// caller no other way to match an answer to its submission (see
// docs/PROTOCOL-NOTES.md).
const HeaderInReplyTo = "hcp-in-reply-to"

// Properties are the AMQP basic properties of an HCP message, as plain data
// (transport/amqp converts them to and from amqp091's Publishing/Delivery).
type Properties struct {
	ContentType     string
	ContentEncoding string
	DeliveryMode    uint8
	MessageID       string
	// Timestamp: AMQP carries whole seconds only; the body's timestamp is authoritative.
	Timestamp     time.Time
	CorrelationID string // the session_id; empty when the envelope has none
	Type          string
	// UserID is set by a publisher to its broker login; RabbitMQ refuses a
	// message whose user_id differs from the connection's user.
	UserID string
	// Headers are extra AMQP headers (HeaderInReplyTo); nil when none.
	Headers map[string]any
}

// PropertiesFor maps env to its AMQP properties per L1. inReplyTo, when not
// empty, is recorded in HeaderInReplyTo.
func PropertiesFor(env *Envelope, inReplyTo string) Properties {
	p := Properties{
		ContentType:     ContentType,
		ContentEncoding: ContentEncoding,
		DeliveryMode:    DeliveryMode,
		MessageID:       env.MessageID.String(),
		Timestamp:       env.Timestamp.UTC().Truncate(time.Second),
		Type:            string(env.Type),
	}
	if env.SessionID != nil {
		p.CorrelationID = env.SessionID.String()
	}
	if inReplyTo != "" {
		p.Headers = map[string]any{HeaderInReplyTo: inReplyTo}
	}
	return p
}

// CheckProperties verifies that a received message's properties agree with
// its decoded body: content_type application/json, content_encoding utf-8 (any
// case) when set, message_id and type present and equal to the body's,
// correlation_id equal to session_id when set. Errors are *DecodeError with
// Kind KindProperty and Field "properties.<name>".
func CheckProperties(p Properties, env *Envelope) error {
	fail := func(name, detail string) error {
		e := derr("properties."+name, KindProperty, detail)
		e.MessageID = env.MessageID.String()
		e.Type = env.Type
		return e
	}
	if p.ContentType != ContentType {
		return fail("content_type", "want "+ContentType)
	}
	if p.ContentEncoding != "" && !strings.EqualFold(p.ContentEncoding, ContentEncoding) {
		return fail("content_encoding", "want "+ContentEncoding)
	}
	if p.MessageID == "" {
		return fail("message_id", "missing")
	}
	if !strings.EqualFold(p.MessageID, env.MessageID.String()) {
		return fail("message_id", "differs from the body's")
	}
	if p.Type == "" {
		return fail("type", "missing")
	}
	if p.Type != string(env.Type) {
		return fail("type", "differs from the body's")
	}
	if p.CorrelationID != "" {
		if env.SessionID == nil || !strings.EqualFold(p.CorrelationID, env.SessionID.String()) {
			return fail("correlation_id", "differs from the body's session_id")
		}
	}
	return nil
}
