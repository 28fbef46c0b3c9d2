package amqp

import (
	"fmt"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/wire"
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
	// DeclareCalleeTopology falls back to an existing queue or to classic;
	// DeclareTopology fails.
	Quorum bool
	// DeliveryLimit is the quorum command queue's x-delivery-limit: a command
	// delivered (and returned) more often is dropped, or dead-lettered with
	// DeadLetter. 0: no limit. Classic queues have no delivery limit.
	DeliveryLimit int
	// DeadLetter declares the dead-letter exchange hcp.dlx and the callee's
	// dead-letter queue hcp.dlq.{callee_id} (bound with the callee id), and
	// points the command queue at it: commands rejected without requeue or
	// past the delivery limit are kept there for an operator.
	DeadLetter bool
}

// DeadLetterExchange is the direct exchange dead-lettered commands go to,
// with their original routing key (the callee id).
const DeadLetterExchange = "hcp.dlx"

// DeadLetterQueue returns hcp.dlq.{callee_id}.
func DeadLetterQueue(calleeID string) (string, error) {
	if err := wire.CheckID(calleeID); err != nil {
		return "", err
	}
	return "hcp.dlq." + calleeID, nil
}

// Dead-letter queue bounds: a poison command stays a week at most, and the
// queue keeps the newest 10,000.
const (
	deadLetterTTL    = 7 * 24 * time.Hour
	deadLetterMaxLen = 10000
)

// commandQueueArgs are the arguments of hcp.cmd.{callee_id}; quorum says
// which type (the delivery limit applies to quorum queues only).
func commandQueueArgs(opts TopologyOpts, quorum bool) amqp091.Table {
	args := amqp091.Table{}
	if quorum {
		args[amqp091.QueueTypeArg] = amqp091.QueueTypeQuorum
		if opts.DeliveryLimit > 0 {
			args["x-delivery-limit"] = int64(opts.DeliveryLimit)
		}
	}
	if opts.DeadLetter {
		args["x-dead-letter-exchange"] = DeadLetterExchange
	}
	if len(args) == 0 {
		return nil
	}
	return args
}

// deadLetterArgs are the arguments of hcp.dlq.{callee_id}.
func deadLetterArgs(quorum bool) amqp091.Table {
	args := amqp091.Table{"x-message-ttl": deadLetterTTL.Milliseconds(), "x-max-length": int64(deadLetterMaxLen)}
	if quorum {
		args[amqp091.QueueTypeArg] = amqp091.QueueTypeQuorum
	}
	return args
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
	if opts.DeadLetter {
		if err := declareDeadLetter(ch, opts.CalleeID, opts.Quorum); err != nil {
			return err
		}
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, commandQueueArgs(opts, opts.Quorum)); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", q, err)
	}
	if err := ch.QueueBind(q, opts.CalleeID, wire.CommandsExchange, false, nil); err != nil {
		return fmt.Errorf("amqp: bind %s: %w", q, err)
	}
	return nil
}

// declareDeadLetter declares hcp.dlx and hcp.dlq.{callee_id}, bound.
func declareDeadLetter(ch Declarer, calleeID string, quorum bool) error {
	dlq, err := DeadLetterQueue(calleeID)
	if err != nil {
		return fmt.Errorf("amqp: %w", err)
	}
	if err := ch.ExchangeDeclare(DeadLetterExchange, amqp091.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", DeadLetterExchange, err)
	}
	if _, err := ch.QueueDeclare(dlq, true, false, false, false, deadLetterArgs(quorum)); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", dlq, err)
	}
	if err := ch.QueueBind(dlq, calleeID, DeadLetterExchange, false, nil); err != nil {
		return fmt.Errorf("amqp: bind %s: %w", dlq, err)
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
	if _, err := ch.QueueDeclare(q, true, false, false, false, callerQueueArgs(opts, opts.Quorum)); err != nil {
		return fmt.Errorf("amqp: declare %s: %w", q, err)
	}
	if err := ch.QueueBind(q, key, wire.EventsExchange, false, nil); err != nil {
		return fmt.Errorf("amqp: bind %s: %w", q, err)
	}
	return nil
}

// callerQueueArgs are the arguments of hcp.evt.{caller_id}. A quorum event
// queue has no delivery limit: a caller holds events past a gap unacked and
// a reconnect returns them, which must never cost an event.
func callerQueueArgs(opts CallerQueueOpts, quorum bool) amqp091.Table {
	args := amqp091.Table{}
	if opts.MessageTTL > 0 {
		args["x-message-ttl"] = opts.MessageTTL.Milliseconds()
	}
	if opts.MaxLength > 0 {
		args["x-max-length"] = opts.MaxLength
		args["x-overflow"] = "drop-head"
	}
	if quorum {
		args[amqp091.QueueTypeArg] = amqp091.QueueTypeQuorum
	}
	return args
}
