package amqp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/hcp-edge/hcp-edge/transport/outbox"
	"github.com/hcp-edge/hcp-edge/transport/wire"
)

// ErrNacked: the broker refused a message (basic.nack); Run returns it so the
// supervisor republishes from the outbox head.
var ErrNacked = errors.New("amqp: publish nacked by the broker")

// ErrChannelClosed: the channel or connection closed under Run.
var ErrChannelClosed = errors.New("amqp: channel closed")

// PublisherOpts configures a Publisher.
type PublisherOpts struct {
	Window         int           // confirms outstanding at most (default 256)
	ConfirmTimeout time.Duration // wait for one confirm at most (default 30 s)
	Logger         *slog.Logger  // default slog.Default()
	// UserID, when set, goes into every publishing's user_id property: RabbitMQ
	// checks it against the connection's login, and the receiving inbox refuses
	// messages without it. The Supervisor sets it to the URL's user.
	UserID string
}

// DefaultPublisherOpts returns the defaults.
func DefaultPublisherOpts() PublisherOpts {
	return PublisherOpts{Window: 256, ConfirmTimeout: 30 * time.Second, Logger: slog.Default()}
}

// Publisher drains an outbox to the broker. See the package documentation.
type Publisher struct {
	ob   *outbox.Outbox
	opts PublisherOpts

	mu        sync.Mutex
	blocked   bool
	unblocked chan struct{} // closed when not blocked; replaced on block
}

// NewPublisher returns a Publisher for ob.
func NewPublisher(ob *outbox.Outbox, opts PublisherOpts) (*Publisher, error) {
	d := DefaultPublisherOpts()
	if opts.Window <= 0 {
		opts.Window = d.Window
	}
	if opts.ConfirmTimeout <= 0 {
		opts.ConfirmTimeout = d.ConfirmTimeout
	}
	if opts.Logger == nil {
		opts.Logger = d.Logger
	}
	if ob == nil {
		return nil, errors.New("amqp: nil outbox")
	}
	u := make(chan struct{})
	close(u)
	return &Publisher{ob: ob, opts: opts, unblocked: u}, nil
}

// SetBlocked pauses (true) or resumes (false) publishing of new messages, for
// the broker's connection.blocked / connection.unblocked. Confirms of messages
// already in flight are still awaited while blocked, without the confirm
// timeout (a blocked broker reads nothing).
func (p *Publisher) SetBlocked(b bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b == p.blocked {
		return
	}
	p.blocked = b
	if b {
		p.unblocked = make(chan struct{})
	} else {
		close(p.unblocked)
	}
}

// gate returns whether publishing is blocked and a channel closed when it is
// not.
func (p *Publisher) gate() (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked, p.unblocked
}

// Publishing converts an outbox message to its AMQP publishing per L1's
// property mapping.
func Publishing(m outbox.Message) amqp091.Publishing {
	p := amqp091.Publishing{
		ContentType:     wire.ContentType,
		ContentEncoding: wire.ContentEncoding,
		DeliveryMode:    amqp091.Persistent,
		MessageId:       m.MessageID,
		Timestamp:       time.Unix(0, m.CreatedUnixNano).UTC().Truncate(time.Second),
		CorrelationId:   m.CorrelationID,
		Type:            m.Type,
		Body:            m.Body,
	}
	if m.CorrelationID == "" {
		p.CorrelationId = ""
	}
	if m.InReplyTo != "" {
		p.Headers = amqp091.Table{wire.HeaderInReplyTo: m.InReplyTo}
	}
	return p
}

type inflight struct {
	key uint64
	dc  *amqp091.DeferredConfirmation
}

// Run drains the outbox over a new confirm-mode channel on conn until ctx ends
// (returns ctx.Err()) or something goes wrong (nack, confirm timeout, closed
// channel: returns the error; call Run again on a healthy connection). It
// returns only after closing its channel.
func (p *Publisher) Run(ctx context.Context, conn *amqp091.Connection) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("amqp: open channel: %w", err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("amqp: confirm mode: %w", err)
	}
	closed := ch.NotifyClose(make(chan *amqp091.Error, 1))
	var q []inflight
	var last uint64 // highest key published on this channel
	// Confirmed keys are deleted in batches (one bbolt commit per batch, not per
	// confirm), and on the way out; a crash before that republishes them, which
	// at-least-once delivery allows.
	var confirmed []uint64
	flush := func() error {
		if len(confirmed) == 0 {
			return nil
		}
		err := p.ob.Delete(confirmed...)
		confirmed = confirmed[:0]
		return err
	}
	defer func() { _ = flush() }()
	for {
		blocked, unblocked := p.gate()
		if len(q) < p.opts.Window && !blocked {
			es, err := p.ob.PeekAfter(last, p.opts.Window-len(q))
			if err != nil {
				return err
			}
			for _, e := range es {
				pub := Publishing(e.Message)
				pub.UserId = p.opts.UserID
				dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, e.Exchange, e.RoutingKey, false, false, pub)
				if err != nil {
					return fmt.Errorf("amqp: publish key %d: %w", e.Key, err)
				}
				q = append(q, inflight{e.Key, dc})
				last = e.Key
			}
		}
		if len(q) == 0 {
			select {
			case <-p.ob.Notify():
				continue
			case <-unblocked:
				continue
			case <-ctx.Done():
				return ctx.Err()
			case e := <-closed:
				return fmt.Errorf("%w: %v", ErrChannelClosed, e)
			}
		}
		// Wait for the head, then take every confirm already in.
		wctx, cancel := context.WithTimeout(ctx, p.opts.ConfirmTimeout)
		ok, err := q[0].dc.WaitContext(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if b, _ := p.gate(); b && errors.Is(err, context.DeadlineExceeded) {
				continue // blocked: the broker is not reading; keep waiting
			}
			return fmt.Errorf("amqp: confirm of key %d: %w", q[0].key, err)
		}
		if !ok {
			return fmt.Errorf("%w (key %d)", ErrNacked, q[0].key)
		}
		confirmed = append(confirmed, q[0].key)
		n := 1
		for ; n < len(q); n++ {
			if !q[n].dc.Acked() { // non-blocking: false while pending or nacked
				break
			}
			confirmed = append(confirmed, q[n].key)
		}
		q = q[n:]
		if len(q) == 0 || len(confirmed) >= p.opts.Window/2 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}
