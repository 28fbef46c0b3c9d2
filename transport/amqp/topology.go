package amqp

import (
	"errors"
	"fmt"
	"strings"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/hcp-edge/hcp-edge/transport/wire"
)

// Declarer is the part of *amqp091.Channel topology declaration needs.
type Declarer interface {
	ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp091.Table) error
	ExchangeDeclarePassive(name, kind string, durable, autoDelete, internal, noWait bool, args amqp091.Table) error
	QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp091.Table) (amqp091.Queue, error)
	QueueDeclarePassive(name string, durable, autoDelete, exclusive, noWait bool, args amqp091.Table) (amqp091.Queue, error)
	QueueBind(name, key, exchange string, noWait bool, args amqp091.Table) error
}

// DeclareExchanges declares hcp.commands (direct) and hcp.events (topic),
// both durable.
func DeclareExchanges(ch Declarer) error {
	if err := ch.ExchangeDeclare(wire.CommandsExchange, amqp091.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", wire.CommandsExchange, err)
	}
	if err := ch.ExchangeDeclare(wire.EventsExchange, amqp091.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", wire.EventsExchange, err)
	}
	return nil
}

// TopologyOpts configures the callee's topology.
type TopologyOpts struct {
	CalleeID string // required
	// Quorum declares hcp.cmd.{callee_id} as a quorum queue. A queue's type
	// cannot change once declared: switching needs the queue deleted first.
	Quorum bool
}

// DeclareTopology declares the exchanges and the callee's durable command
// queue hcp.cmd.{callee_id}, bound to hcp.commands with the callee id.
// Idempotent with the same options.
func DeclareTopology(ch Declarer, opts TopologyOpts) error {
	q, err := wire.CommandQueue(opts.CalleeID)
	if err != nil {
		return fmt.Errorf("amqp: %w", err)
	}
	if err := DeclareExchanges(ch); err != nil {
		return err
	}
	var args amqp091.Table
	if opts.Quorum {
		args = amqp091.Table{amqp091.QueueTypeArg: amqp091.QueueTypeQuorum}
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, args); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", q, err)
	}
	if err := ch.QueueBind(q, opts.CalleeID, wire.CommandsExchange, false, nil); err != nil {
		return fmt.Errorf("amqp: bind %s: %w", q, err)
	}
	return nil
}

// CallerQueueOpts configures a caller's event queue.
type CallerQueueOpts struct {
	CallerID   string        // required
	MessageTTL time.Duration // x-message-ttl; L1 recommends 24 h; 0 = none
	MaxLength  int           // x-max-length with overflow drop-head; 0 = none
	Quorum     bool
}

// CheckExchanges declares hcp.commands and hcp.events passively: it checks
// that they exist as L1 defines them without the configure permission a
// caller does not hold on a provisioned broker (the callee declares them).
func CheckExchanges(ch Declarer) error {
	if err := ch.ExchangeDeclarePassive(wire.CommandsExchange, amqp091.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("amqp: %s (declared by the callee when it starts): %w", wire.CommandsExchange, err)
	}
	if err := ch.ExchangeDeclarePassive(wire.EventsExchange, amqp091.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fmt.Errorf("amqp: %s (declared by the callee when it starts): %w", wire.EventsExchange, err)
	}
	return nil
}

func callerArgs(opts CallerQueueOpts) amqp091.Table {
	args := amqp091.Table{}
	if opts.MessageTTL > 0 {
		args["x-message-ttl"] = opts.MessageTTL.Milliseconds()
	}
	if opts.MaxLength > 0 {
		args["x-max-length"] = opts.MaxLength
		args["x-overflow"] = "drop-head"
	}
	if opts.Quorum {
		args[amqp091.QueueTypeArg] = amqp091.QueueTypeQuorum
	}
	return args
}

// DeclareCallerQueue checks the exchanges (CheckExchanges) and declares
// hcp.evt.{caller_id}, durable, bound to hcp.events with {caller_id}.#.
// A queue that exists with other arguments fails it (PRECONDITION_FAILED):
// DeclareCallerTopology falls back to the queue as it is.
func DeclareCallerQueue(ch Declarer, opts CallerQueueOpts) error {
	q, err := wire.EventQueue(opts.CallerID)
	if err != nil {
		return fmt.Errorf("amqp: %w", err)
	}
	key, _ := wire.EventBinding(opts.CallerID)
	if err := CheckExchanges(ch); err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, callerArgs(opts)); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", q, err)
	}
	if err := ch.QueueBind(q, key, wire.EventsExchange, false, nil); err != nil {
		return fmt.Errorf("amqp: bind %s: %w", q, err)
	}
	return nil
}

// Opener opens a channel; *amqp091.Connection's Channel, adapted.
type Opener func() (Declarer, func() error, error)

// ConnOpener adapts conn to an Opener.
func ConnOpener(conn *amqp091.Connection) Opener {
	return func() (Declarer, func() error, error) {
		ch, err := conn.Channel()
		if err != nil {
			return nil, nil, err
		}
		return ch, ch.Close, nil
	}
}

// DeclareCallerTopology is DeclareCallerQueue on a channel of its own, with
// a fallback: when hcp.evt.{caller_id} already exists with other arguments
// (another HCP implementation declared it, say without the 24-hour TTL that
// L1 only recommends), the broker refuses the declaration with
// PRECONDITION_FAILED (inequivalent arg) and closes the channel; the queue is
// then declared passively on a new channel and used as it is. reused tells
// the caller to say so (the refusal's text is in reason).
func DeclareCallerTopology(open Opener, opts CallerQueueOpts) (reused bool, reason string, err error) {
	ch, closeCh, err := open()
	if err != nil {
		return false, "", fmt.Errorf("amqp: topology channel: %w", err)
	}
	err = DeclareCallerQueue(ch, opts)
	_ = closeCh()
	var aerr *amqp091.Error
	if err == nil || !errors.As(err, &aerr) || aerr.Code != amqp091.PreconditionFailed || !strings.Contains(aerr.Reason, "inequivalent arg") {
		return false, "", err
	}
	reason = aerr.Reason
	q, _ := wire.EventQueue(opts.CallerID)
	key, _ := wire.EventBinding(opts.CallerID)
	ch, closeCh, err = open()
	if err != nil {
		return false, reason, fmt.Errorf("amqp: topology channel: %w", err)
	}
	defer closeCh()
	if _, err := ch.QueueDeclarePassive(q, true, false, false, false, nil); err != nil {
		return false, reason, fmt.Errorf("amqp: passive declare %s: %w", q, err)
	}
	if err := ch.QueueBind(q, key, wire.EventsExchange, false, nil); err != nil {
		return false, reason, fmt.Errorf("amqp: bind %s: %w", q, err)
	}
	return true, reason, nil
}
