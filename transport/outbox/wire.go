package outbox

import (
	"hcp-edge/transport/wire"
)

// TelemetryEventTypes are the L2 event types MessageFor files as Telemetry
// (bounded, dropped oldest-first under pressure); every other message is
// Protocol.
var TelemetryEventTypes = map[string]bool{wire.EventProgress: true, wire.EventLog: true}

// MessageFor encodes an event-channel envelope for callerID as an outbox
// Message: exchange hcp.events, routing key {caller_id}.{session_id}.{type},
// L1's properties, and inReplyTo (the message_id of the task_submit a
// task_accepted or task_rejected answers; "" for none). Its Class is Telemetry
// for the event types in TelemetryEventTypes, else Protocol.
func MessageFor(callerID string, env *wire.Envelope, inReplyTo string) (Message, error) {
	key, err := wire.EventRoutingKey(callerID, env)
	if err != nil {
		return Message{}, err
	}
	body, err := wire.Encode(env)
	if err != nil {
		return Message{}, err
	}
	p := wire.PropertiesFor(env, inReplyTo)
	m := Message{
		Class:           Protocol,
		Exchange:        wire.EventsExchange,
		RoutingKey:      key,
		MessageID:       p.MessageID,
		Type:            p.Type,
		CorrelationID:   p.CorrelationID,
		InReplyTo:       inReplyTo,
		CreatedUnixNano: env.Timestamp.UnixNano(),
		Body:            body,
	}
	if env.Type == wire.TypeEvent {
		if ev, err := env.Event(); err == nil && TelemetryEventTypes[ev.EventType] {
			m.Class = Telemetry
		}
	}
	return m, nil
}

// CommandFor encodes a command-channel envelope (task_submit, abort) for
// calleeID as an outbox Message on hcp.commands with routing key calleeID.
func CommandFor(calleeID string, env *wire.Envelope) (Message, error) {
	key, err := wire.CommandRoutingKey(calleeID)
	if err != nil {
		return Message{}, err
	}
	if !env.Type.IsCommand() {
		return Message{}, &wire.DecodeError{Field: "type", Kind: wire.KindInvalid, Detail: string(env.Type) + " is not a command"}
	}
	body, err := wire.Encode(env)
	if err != nil {
		return Message{}, err
	}
	p := wire.PropertiesFor(env, "")
	return Message{
		Class:           Protocol,
		Exchange:        wire.CommandsExchange,
		RoutingKey:      key,
		MessageID:       p.MessageID,
		Type:            p.Type,
		CorrelationID:   p.CorrelationID,
		CreatedUnixNano: env.Timestamp.UnixNano(),
		Body:            body,
	}, nil
}
