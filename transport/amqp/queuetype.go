package amqp

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/wire"
)

// ChannelOpener opens channels; *amqp091.Connection is one. A declaration
// the broker refuses closes its channel, so the fallback opens another.
type ChannelOpener interface {
	Channel() (*amqp091.Channel, error)
}

// QueueTypeClassic is the x-queue-type of a classic queue.
const QueueTypeClassic = amqp091.QueueTypeClassic

// QueueOutcome says how one queue of a topology was declared.
type QueueOutcome struct {
	Queue string
	// Type is quorum or classic as declared; empty when an existing queue
	// was used as it is (Existing).
	Type string
	// Existing: the broker refused the declaration because the queue exists
	// with another type or other arguments (PRECONDITION_FAILED); it was
	// declared passively and is used as it is. The agent never deletes it:
	// it may hold commands or events.
	Existing bool
	// Reason is the broker's refusal of the quorum declaration ("" when the
	// queue is what was asked for).
	Reason string
}

// String is the outcome for a log line.
func (o QueueOutcome) String() string {
	switch {
	case o.Existing:
		return o.Queue + "=existing"
	default:
		return o.Queue + "=" + o.Type
	}
}

// refusal reports whether err is the broker refusing a declaration's type or
// arguments (the channel is closed; the connection lives).
func refusal(err error) (*amqp091.Error, bool) {
	var ae *amqp091.Error
	if errors.As(err, &ae) && (ae.Code == amqp091.PreconditionFailed || ae.Code == amqp091.NotImplemented ||
		ae.Code == amqp091.NotAllowed || ae.Code == amqp091.CommandInvalid) {
		return ae, true
	}
	return nil, false
}

// declareQueue declares name durable, as a quorum queue (qargs) or a classic
// one (cargs). When the broker refuses the declaration (PRECONDITION_FAILED:
// the queue exists with another type or other arguments, say declared by
// another HCP implementation without L1's TTL) it uses the existing queue as
// it is (passive); asked for quorum and finding no queue, it declares it
// classic.
func declareQueue(conn ChannelOpener, name string, quorum bool, qargs, cargs amqp091.Table) (QueueOutcome, error) {
	out := QueueOutcome{Queue: name}
	try := func(f func(ch *amqp091.Channel) error) error {
		ch, err := conn.Channel()
		if err != nil {
			return fmt.Errorf("amqp: channel for %s: %w", name, err)
		}
		err = f(ch)
		_ = ch.Close() // already closed by a refusal
		return err
	}
	declare := func(args amqp091.Table) func(ch *amqp091.Channel) error {
		return func(ch *amqp091.Channel) error {
			_, err := ch.QueueDeclare(name, true, false, false, false, args)
			return err
		}
	}
	args := cargs
	out.Type = QueueTypeClassic
	if quorum {
		args, out.Type = qargs, amqp091.QueueTypeQuorum
	}
	err := try(declare(args))
	if err == nil {
		return out, nil
	}
	ae, ok := refusal(err)
	if !ok {
		return out, fmt.Errorf("amqp: declare %s: %w", name, err)
	}
	out.Reason = ae.Reason
	err = try(func(ch *amqp091.Channel) error {
		_, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
		return err
	})
	if err == nil {
		out.Type, out.Existing = "", true
		return out, nil
	}
	var nf *amqp091.Error
	if !quorum || !errors.As(err, &nf) || nf.Code != amqp091.NotFound {
		return out, fmt.Errorf("amqp: declare %s passively after %q: %w", name, ae.Reason, err)
	}
	out.Type = QueueTypeClassic
	if err := try(declare(cargs)); err != nil {
		return out, fmt.Errorf("amqp: declare %s as classic after %q: %w", name, ae.Reason, err)
	}
	return out, nil
}

// DeclareCalleeTopology declares the exchanges, the dead-letter exchange and
// queue (opts.DeadLetter) and the callee's command queue, bound, on channels
// of conn. Asked for quorum queues, it falls back per queue as declareQueue
// says — to an existing queue of the name used as it is, or to classic when
// the broker cannot declare a quorum queue — and reports each outcome. It
// never deletes a queue.
func DeclareCalleeTopology(conn ChannelOpener, opts TopologyOpts) ([]QueueOutcome, error) {
	q, err := wire.CommandQueue(opts.CalleeID)
	if err != nil {
		return nil, fmt.Errorf("amqp: %w", err)
	}
	var outs []QueueOutcome
	bind := func(queue, key, exchange string) error {
		ch, err := conn.Channel()
		if err != nil {
			return fmt.Errorf("amqp: channel: %w", err)
		}
		defer ch.Close()
		if err := ch.QueueBind(queue, key, exchange, false, nil); err != nil {
			return fmt.Errorf("amqp: bind %s: %w", queue, err)
		}
		return nil
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("amqp: channel: %w", err)
	}
	err = DeclareExchanges(ch)
	if err == nil && opts.DeadLetter {
		err = ch.ExchangeDeclare(DeadLetterExchange, amqp091.ExchangeDirect, true, false, false, false, nil)
	}
	_ = ch.Close()
	if err != nil {
		return nil, err
	}
	if opts.DeadLetter {
		dlq, _ := DeadLetterQueue(opts.CalleeID)
		o, err := declareQueue(conn, dlq, opts.Quorum, deadLetterArgs(true), deadLetterArgs(false))
		if err != nil {
			return outs, err
		}
		outs = append(outs, o)
		if err := bind(dlq, opts.CalleeID, DeadLetterExchange); err != nil {
			return outs, err
		}
	}
	o, err := declareQueue(conn, q, opts.Quorum, commandQueueArgs(opts, true), commandQueueArgs(opts, false))
	if err != nil {
		return outs, err
	}
	outs = append(outs, o)
	return outs, bind(q, opts.CalleeID, wire.CommandsExchange)
}

// DeclareCallerTopology checks the exchanges passively (CheckExchanges: the
// callee declares them; a caller holds no configure permission on them) and
// declares the caller's event queue, bound, falling back like
// DeclareCalleeTopology.
func DeclareCallerTopology(conn ChannelOpener, opts CallerQueueOpts) ([]QueueOutcome, error) {
	q, err := wire.EventQueue(opts.CallerID)
	if err != nil {
		return nil, fmt.Errorf("amqp: %w", err)
	}
	key, _ := wire.EventBinding(opts.CallerID)
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("amqp: channel: %w", err)
	}
	err = CheckExchanges(ch)
	_ = ch.Close()
	if err != nil {
		return nil, err
	}
	o, err := declareQueue(conn, q, opts.Quorum, callerQueueArgs(opts, true), callerQueueArgs(opts, false))
	if err != nil {
		return nil, err
	}
	ch, err = conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("amqp: channel: %w", err)
	}
	defer ch.Close()
	if err := ch.QueueBind(q, key, wire.EventsExchange, false, nil); err != nil {
		return nil, fmt.Errorf("amqp: bind %s: %w", q, err)
	}
	return []QueueOutcome{o}, nil
}

// outcomeLog logs queue outcomes at the first declaration and whenever they
// change (a reconnect to another node declares again).
type outcomeLog struct {
	log    *slog.Logger
	quorum bool
	mu     sync.Mutex
	last   string
}

func (l *outcomeLog) report(outs []QueueOutcome) {
	parts := make([]string, len(outs))
	for i, o := range outs {
		parts[i] = o.String()
	}
	s := strings.Join(parts, " ")
	l.mu.Lock()
	changed := s != l.last
	l.last = s
	l.mu.Unlock()
	if !changed {
		return
	}
	for _, o := range outs {
		switch {
		case o.Existing:
			l.log.Warn("amqp: queue declaration refused: an existing queue of that name, declared with other arguments, is used as it is (no replication or delivery limit unless it is already quorum); to switch, drain it and delete it (rabbitmqctl delete_queue), the agent declares it again",
				"queue", o.Queue, "broker", o.Reason)
		case l.quorum && o.Type == QueueTypeClassic:
			l.log.Warn("amqp: the broker cannot declare a quorum queue: falling back to a classic queue (no replication, no delivery limit)",
				"queue", o.Queue, "broker", o.Reason)
		}
	}
	l.log.Info("amqp: topology declared", "queues", s)
}

// CalleeDeclarer returns a SupervisorOpts.DeclareConn that declares the
// callee's topology with DeclareCalleeTopology and logs the queues' types at
// the first connect and whenever they change (a fallback as a warning).
func CalleeDeclarer(opts TopologyOpts, log *slog.Logger) func(*amqp091.Connection) error {
	if log == nil {
		log = slog.Default()
	}
	l := &outcomeLog{log: log, quorum: opts.Quorum}
	return func(conn *amqp091.Connection) error {
		outs, err := DeclareCalleeTopology(conn, opts)
		if err != nil {
			return err
		}
		l.report(outs)
		return nil
	}
}

// CallerDeclarer is CalleeDeclarer for a caller's event queue.
func CallerDeclarer(opts CallerQueueOpts, log *slog.Logger) func(*amqp091.Connection) error {
	if log == nil {
		log = slog.Default()
	}
	l := &outcomeLog{log: log, quorum: opts.Quorum}
	return func(conn *amqp091.Connection) error {
		outs, err := DeclareCallerTopology(conn, opts)
		if err != nil {
			return err
		}
		l.report(outs)
		return nil
	}
}
