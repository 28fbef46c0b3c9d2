package amqp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"
)

// The inbox's group commit, the outbox committer's approach (transport/outbox,
// commit.go) on the command side: the deliveries that arrive together are
// decided one by one (the engine's Handle, in order), their outcomes —
// Outcome.Record, the replies, the de-duplication entries — are written in
// one bbolt transaction, and each is acked only once that transaction has
// committed (fsynced). A flood of commands then costs one commit per group
// instead of one per command, so a caller's submit behind a flood is
// answered in a fraction of the time. If the shared transaction fails, each
// outcome is committed again alone, so one faulty command fails only itself
// (as the outbox retries each Append alone); a local write failure (no
// space) holds every delivery of the group as it holds one.

// DefaultPrefetch is the inbox's basic.qos prefetch: enough deliveries in
// flight that a flood fills groups, few enough that a pause for a full disk
// (Intake) handles little after the consumer is cancelled.
const DefaultPrefetch = 256

// Defaults of InboxOpts.GroupMax and GroupWait.
const (
	defaultGroupMax  = 128
	defaultGroupWait = time.Millisecond
)

// collect returns first and the deliveries that follow it on ds within
// GroupWait of each other, up to GroupMax. It never waits longer than
// GroupWait for one: a command alone is delayed by GroupWait at most.
func (in *Inbox) collect(first amqp091.Delivery, ds <-chan amqp091.Delivery) []amqp091.Delivery {
	group := []amqp091.Delivery{first}
	if in.opts.GroupMax <= 1 {
		return group
	}
	t := time.NewTimer(in.opts.GroupWait)
	defer t.Stop()
	for len(group) < in.opts.GroupMax {
		select {
		case d, ok := <-ds:
			if !ok {
				return group // Run sees the closed channel next
			}
			group = append(group, d)
			continue
		default:
		}
		select {
		case d, ok := <-ds:
			if !ok {
				return group
			}
			group = append(group, d)
			if !t.Stop() {
				<-t.C
			}
			t.Reset(in.opts.GroupWait)
		case <-t.C:
			return group
		}
	}
	return group
}

// deliverGroup decides the deliveries of group in order and commits their
// outcomes together, then settles each (settle: Run's; a local write
// failure holds the delivery there). A message_id already waiting in the
// group commits what waits first, so that its de-duplication lookup sees
// it; so does a delivery whose preparation failed, before it is settled.
// alone reports whether the channel has no unacknowledged delivery but
// the group's own (Run's requeue list is empty): the group is then acked
// with one multiple ack.
func (in *Inbox) deliverGroup(ctx context.Context, group []amqp091.Delivery, settle func(amqp091.Delivery, error) error, alone func() bool) error {
	if len(group) == 1 {
		return settle(group[0], in.handle(ctx, group[0]))
	}
	if in.opts.Burst != nil {
		in.opts.Burst(len(group))
	}
	var ps []*prepared
	ids := map[string]bool{}
	flush := func() error {
		if len(ps) == 0 {
			return nil
		}
		errs := in.commitGroup(ps, alone())
		var first error
		for i, p := range ps {
			p.cancel()
			if first != nil {
				continue // the worker ends: unsettled deliveries return to the queue
			}
			err := errs[i]
			var le *localError
			if i > 0 && errors.As(err, &le) {
				// The group failed for a local write failure and an earlier
				// delivery has been held and settled since: try this one
				// alone at once if intake is open, rather than after a hold's
				// pause each.
				if open, _ := in.intakeOpen(); open {
					err = in.handle(ctx, p.d)
				}
			}
			first = settle(p.d, err)
		}
		ps = ps[:0]
		clear(ids)
		return first
	}
	for _, d := range group {
		key := strings.ToLower(d.MessageId) // a UUID: its canonical form
		if key != "" && ids[key] {
			if err := flush(); err != nil {
				return err
			}
		}
		p, err := in.prepare(ctx, d)
		if p != nil {
			ps = append(ps, p)
			ids[key] = true // the property equals the body's (prepare checked)
			continue
		}
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			if err := settle(d, err); err != nil {
				return err
			}
		}
	}
	return flush()
}

// commitGroup writes the outcomes of ps in one transaction and, once it has
// committed, runs each one's Committed and acks it — all with one multiple
// ack of the last when multi (no other delivery of the channel is
// unacknowledged: every earlier one is settled); errs[i] is handle's error
// for ps[i]. If the transaction fails for a local write failure, every
// delivery is held (a *localError each); for anything else each outcome is
// committed again alone (commitOne), so only the faulty one is refused.
func (in *Inbox) commitGroup(ps []*prepared, multi bool) []error {
	errs := make([]error, len(ps))
	if len(ps) == 1 {
		errs[0] = in.commitOne(ps[0])
		return errs
	}
	var engErr error
	err := in.db.Update(func(tx *bolt.Tx) error {
		for _, p := range ps {
			e, err := in.recordOne(tx, p)
			if err != nil {
				engErr = e
				return err
			}
		}
		return nil
	})
	if err == nil {
		in.commits.Add(1)
		if !multi {
			for i, p := range ps {
				errs[i] = in.acked(p)
			}
			return errs
		}
		for _, p := range ps {
			if p.out.Committed != nil {
				p.out.Committed()
			}
		}
		in.handled.Add(uint64(len(ps)))
		last := ps[len(ps)-1].d // deliveries arrive in tag order
		if err := last.Ack(true); err != nil {
			for i := range errs {
				errs[i] = err
			}
		}
		return errs
	}
	if in.opts.LocalError != nil && in.opts.LocalError(err) {
		for i := range ps {
			in.failed.Add(1)
			errs[i] = &localError{fmt.Errorf("amqp: inbox: record (a group of %d): %w", len(ps), err)}
		}
		return errs
	}
	why := "storage"
	if engErr != nil && errors.Is(err, engErr) {
		why = "engine"
	}
	in.log.Warn("amqp: inbox: a group's transaction failed; recording each command alone", "commands", len(ps), "failure", why, "err", err)
	for i, p := range ps {
		errs[i] = in.commitOne(p)
	}
	return errs
}
