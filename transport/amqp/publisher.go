package amqp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
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
	// LocalError, when set, reports whether err (a failed outbox commit)
	// is a local write failure of the state file (no space): the confirmed
	// messages' deletion waits for a later commit and Run goes on; a local
	// write failure never ends Run, so never makes a reconnect.
	LocalError func(err error) bool
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
//
// It publishes in key order with up to Window confirms outstanding, sleeps on
// the outbox's Notify when idle, and takes confirms in order. Confirmed keys
// go to the outbox's DeleteLater: their deletion rides along with the next
// Append's commit instead of competing with it for bbolt's writer lock and
// fsyncing on its own; a crash before that commit republishes them, which
// at-least-once delivery allows.
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
	notify := p.ob.Notify()
	timeout := time.NewTimer(p.opts.ConfirmTimeout)
	defer timeout.Stop()
	var (
		q           []inflight
		last        uint64 // highest key published on this channel
		more        = true // the outbox may hold messages past last
		confirmed   []uint64
		head        uint64    // key whose confirm the timeout is running for
		headSince   time.Time // when that wait began
		localLogged bool      // a local write failure was logged on this channel
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !more {
			select {
			case <-notify:
				more = true
			default:
			}
		}
		blocked, unblocked := p.gate()
		if room := p.opts.Window - len(q); more && room > 0 && !blocked {
			es, err := p.ob.PeekAfter(last, room)
			if err != nil {
				return err
			}
			more = len(es) == room
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
		// Take every confirm already in, in order.
		n := 0
		for ; n < len(q) && isDone(q[n].dc); n++ {
			if !q[n].dc.Acked() {
				return p.nacked(closed, q[n].key)
			}
			confirmed = append(confirmed, q[n].key)
		}
		if n > 0 {
			q = q[n:]
			err := p.ob.DeleteLater(confirmed...)
			confirmed = confirmed[:0]
			if err != nil {
				if p.opts.LocalError == nil || !p.opts.LocalError(err) {
					return err
				}
				if !localLogged {
					p.opts.Logger.Warn("amqp: publisher: confirmed messages not deleted yet (a local write failure); their deletion is retried", "err", err)
					localLogged = true
				}
			}
			continue // room for more
		}
		// Nothing to do until a confirm, a new message or an unblock arrives.
		var headDone <-chan struct{}
		var expired <-chan time.Time
		if len(q) > 0 {
			headDone = q[0].dc.Done()
			if blocked || q[0].key != head {
				// A blocked broker reads nothing: the timeout starts once unblocked.
				head, headSince = q[0].key, time.Now()
			}
			if !blocked {
				timeout.Reset(time.Until(headSince.Add(p.opts.ConfirmTimeout)))
				expired = timeout.C
			}
		}
		// New messages wake an idle Run at once. While confirms are outstanding
		// they wait for the next confirm and go out together: under load that
		// sends bursts, which the broker persists with fewer fsyncs of its own
		// (they share the disk with the outbox's); at a session's rate the
		// channel is idle between events and nothing waits.
		var wakeNew <-chan struct{}
		if !more && len(q) == 0 && !blocked {
			wakeNew = notify
		}
		var wakeUnblocked <-chan struct{}
		if blocked {
			wakeUnblocked = unblocked
		}
		select {
		case <-headDone:
		case <-wakeNew:
			more = true
		case <-wakeUnblocked:
		case <-expired:
			return fmt.Errorf("amqp: confirm of key %d: %w", q[0].key, context.DeadlineExceeded)
		case <-ctx.Done():
			return ctx.Err()
		case e := <-closed:
			return fmt.Errorf("%w: %v", ErrChannelClosed, e)
		}
	}
}

// isDone reports whether dc's confirm (or nack) has arrived.
func isDone(dc *amqp091.DeferredConfirmation) bool {
	select {
	case <-dc.Done():
		return true
	default:
		return false
	}
}

// nacked is Run's error for a negative confirm: a closing channel nacks
// everything outstanding, which is ErrChannelClosed, not a broker's refusal.
func (p *Publisher) nacked(closed <-chan *amqp091.Error, key uint64) error {
	select {
	case e := <-closed:
		return fmt.Errorf("%w: %v", ErrChannelClosed, e)
	default:
		return fmt.Errorf("%w (key %d)", ErrNacked, key)
	}
}
