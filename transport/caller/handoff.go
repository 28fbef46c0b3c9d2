package caller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// RefusedError is the callee's refusal of a command this client sent: a
// control command (session_handoff; an abort from a former owner, answered
// task_rejected) or an extension request (request_refused, or task_rejected
// when the inbox refused it before reading it). The command changed
// nothing. Code is the reason_code (forbidden, not_found, session_ended,
// invalid_input...); Session is zero when the command named none. It
// matches ErrRefused.
type RefusedError struct {
	Command wire.Type
	Session uuid.UUID
	Code    string
	Message string
}

func (e *RefusedError) Error() string {
	if e.Session == uuid.Nil {
		return fmt.Sprintf("caller: %s refused: %s: %s", e.Command, e.Code, e.Message)
	}
	return fmt.Sprintf("caller: %s of session %s refused: %s: %s", e.Command, e.Session, e.Code, e.Message)
}

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// ErrNoAnswer: Handoff's context ended before the callee answered (the
// command may still take effect: watch the session's events).
var ErrNoAnswer = errors.New("caller: no answer from the callee")

// controls are the commands waiting for an answer, by message_id. The
// zero value is ready.
type controls struct {
	mu sync.Mutex
	m  map[string]chan *wire.Envelope
}

func (cs *controls) add(id string) chan *wire.Envelope {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[string]chan *wire.Envelope{}
	}
	ch := make(chan *wire.Envelope, 1)
	cs.m[id] = ch
	return ch
}

func (cs *controls) drop(id string) {
	cs.mu.Lock()
	delete(cs.m, id)
	cs.mu.Unlock()
}

// answer hands env to the command it answers: a task_rejected whose
// hcp-in-reply-to names one (consumed: true), or an ownership_changed
// event whose request_id names one (a copy; the event goes on to its
// session: false).
func (cs *controls) answer(env *wire.Envelope, d amqp091.Delivery) bool {
	var id string
	consumed := false
	switch env.Type {
	case wire.TypeTaskRejected:
		irt, _ := d.Headers[wire.HeaderInReplyTo].(string)
		id, consumed = strings.ToLower(irt), true
	case wire.TypeEvent:
		cs.mu.Lock()
		waiting := len(cs.m) > 0
		cs.mu.Unlock()
		if !waiting {
			return false
		}
		if oc, ok := ownershipChange(env); ok {
			id = oc.RequestID
		}
	}
	if id == "" {
		return false
	}
	cs.mu.Lock()
	ch, ok := cs.m[id]
	if ok {
		delete(cs.m, id)
	}
	cs.mu.Unlock()
	if !ok {
		return false
	}
	ch <- env // buffered, one answer per waiter
	return consumed
}

// ownershipChange decodes an ownership_changed event.
func ownershipChange(env *wire.Envelope) (*wire.OwnershipChanged, bool) {
	if env.Type != wire.TypeEvent {
		return nil, false
	}
	ev, err := env.Event()
	if err != nil {
		return nil, false
	}
	return ownershipOf(ev)
}

// ownershipOf decodes the data of an ownership_changed event.
func ownershipOf(ev *wire.Event) (*wire.OwnershipChanged, bool) {
	if ev.EventType != wire.EventOwnershipChanged {
		return nil, false
	}
	var oc wire.OwnershipChanged
	if json.Unmarshal(ev.Data, &oc) != nil {
		return nil, false
	}
	return &oc, true
}

// adoptLocked starts s's stream at ev when it is an ownership_changed
// event that makes this client the session's owner: the events before it
// went to another owner, so they are no gap. Held deliveries below it are
// acked and dropped. c.mu is held.
func (c *Client) adoptLocked(s *session, ev *wire.Event) {
	seq := ev.Sequence
	if ev.EventType != wire.EventOwnershipChanged || s.rec.Done || seq <= s.rec.Last+1 {
		return
	}
	oc, ok := ownershipOf(ev)
	if !ok || oc.To != c.opts.CallerID {
		return
	}
	c.log.Info("caller: session handed to this caller", "session_id", s.id, "from", oc.From, "via", oc.Via, "at_sequence", seq)
	s.rec.Last = seq - 1
	for q, h := range s.ahead {
		if q < seq {
			h.d.Ack(false)
			delete(s.ahead, q)
		}
	}
	if len(s.ahead) == 0 {
		s.gapSince = time.Time{}
	}
}

// command publishes a command envelope to the client's callee through its
// durable outbox and returns the channel of its answer.
func (c *Client) command(ctx context.Context, env *wire.Envelope) (chan *wire.Envelope, error) {
	m, err := outbox.CommandFor(c.opts.CalleeID, env)
	if err != nil {
		return nil, fmt.Errorf("caller: %s: %w", env.Type, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	ch := c.ctl.add(m.MessageID)
	if _, err := c.ob.Append(m); err != nil {
		c.ctl.drop(m.MessageID)
		return nil, fmt.Errorf("caller: %w", err)
	}
	return ch, nil
}

// Handoff hands session (owned by this caller) to caller to with
// session_handoff (hcp-edge's extension, docs/PROTOCOL-NOTES.md) and waits
// for the answer: the ownership_changed record (from then on the session's
// events go to to; this client keeps what it received, and its Task of the
// session gets nothing more unless the session comes back), or a
// *RefusedError (not the owner, a target the callee's ACL does not allow,
// an ended or unknown session: nothing changed). ErrNoAnswer when ctx
// ends first.
func (c *Client) Handoff(ctx context.Context, session uuid.UUID, to, reason string) (*wire.OwnershipChanged, error) {
	env, err := wire.NewEnvelope(&session, &wire.SessionHandoff{To: to, Reason: reason}, time.Now())
	if err != nil {
		return nil, fmt.Errorf("caller: session_handoff: %w", err)
	}
	ch, err := c.command(ctx, env)
	if err != nil {
		return nil, err
	}
	mid := env.MessageID.String()
	select {
	case ans := <-ch:
		if oc, ok := ownershipChange(ans); ok {
			return oc, nil
		}
		return nil, refused(wire.TypeSessionHandoff, session, ans)
	case <-ctx.Done():
		c.ctl.drop(mid)
		return nil, fmt.Errorf("%w: session_handoff %s: %w", ErrNoAnswer, mid, ctx.Err())
	case <-c.ctx.Done():
		c.ctl.drop(mid)
		return nil, ErrClosed
	}
}

// Abort sends an abort of session. L1 answers no abort: the session's
// events (state_changed ABORTING, session_closed ABORTED) say it was
// taken. hcp-edge answers an abort from a former owner of the session
// (one that handed it off) with task_rejected forbidden; Abort waits up to
// wait for such a refusal and returns it as *RefusedError, or nil.
func (c *Client) Abort(ctx context.Context, session uuid.UUID, reason string, wait time.Duration) error {
	env, err := wire.NewEnvelope(&session, &wire.Abort{Reason: reason}, time.Now())
	if err != nil {
		return fmt.Errorf("caller: abort: %w", err)
	}
	ch, err := c.command(ctx, env)
	if err != nil {
		return err
	}
	mid := env.MessageID.String()
	defer c.ctl.drop(mid)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ans := <-ch:
		return refused(wire.TypeAbort, session, ans)
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
}

func refused(cmd wire.Type, session uuid.UUID, env *wire.Envelope) error {
	e := &RefusedError{Command: cmd, Session: session}
	if tr, err := env.TaskRejected(); err == nil {
		e.Code, e.Message = tr.ReasonCode, tr.ReasonMessage
	} else {
		e.Code, e.Message = "unexpected_answer", string(env.Type)
	}
	return e
}
