package amqp

import (
	"fmt"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/hcp-edge/hcp-edge/transport/wire"
)

// Declarer is the part of *amqp091.Channel topology declaration needs.
type Declarer interface {
	ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp091.Table) error
	QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp091.Table) (amqp091.Queue, error)
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

// DeclareCallerQueue declares the exchanges and hcp.evt.{caller_id}, durable,
// bound to hcp.events with {caller_id}.#.
func DeclareCallerQueue(ch Declarer, opts CallerQueueOpts) error {
	q, err := wire.EventQueue(opts.CallerID)
	if err != nil {
		return fmt.Errorf("amqp: %w", err)
	}
	key, _ := wire.EventBinding(opts.CallerID)
	if err := DeclareExchanges(ch); err != nil {
		return err
	}
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
	if _, err := ch.QueueDeclare(q, true, false, false, false, args); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", q, err)
	}
	if err := ch.QueueBind(q, key, wire.EventsExchange, false, nil); err != nil {
		return fmt.Errorf("amqp: bind %s: %w", q, err)
	}
	return nil
}
