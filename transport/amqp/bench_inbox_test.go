package amqp_test

import (
	"context"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// refuser is an Engine that answers every command with a task_rejected
// resource_unavailable, as the gate answers a caller past its quota.
type refuser struct{}

func (refuser) Handle(context.Context, tamqp.Command) (tamqp.Outcome, error) {
	env, err := wire.NewEnvelope(nil, &wire.TaskRejected{ReasonCode: "resource_unavailable",
		ReasonMessage: "submits_per_minute 60 exceeded for harness-alpha-001; frees at 2026-11-27T13:00:00.000Z", RetryAfter: 42}, time.Now())
	if err != nil {
		return tamqp.Outcome{}, err
	}
	return tamqp.Outcome{Replies: []tamqp.Reply{{Envelope: env}}}, nil
}

// BenchmarkInboxFlood (issue 24): 2,000 task_submits wait in the command
// queue; an inbox whose engine refuses each (a quota's answer: one reply,
// no session) consumes them. commands/s from intake opening to the last
// one recorded and acked, with one bbolt commit per command (GroupMax 1,
// prefetch 10: the inbox before the group commit) and with the group commit
// (the defaults); commands/commit says how many shared a transaction.
//
//	go test -run '^$' -bench 'BenchmarkInboxFlood' -benchtime=3x ./transport/amqp/
func BenchmarkInboxFlood(b *testing.B) {
	const n = 2000
	for _, tc := range []struct {
		name string
		opts tamqp.InboxOpts
	}{
		{"one-commit-per-command", tamqp.InboxOpts{GroupMax: 1, Prefetch: 10}},
		{"grouped", tamqp.InboxOpts{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g := newGate(false)
			opts := tc.opts
			opts.Intake = g
			c := startCalleeWrapped(b, 0, opts, func(tamqp.Engine) tamqp.Engine { return refuser{} })
			alpha := amqptest.Dial(b, amqptest.AlphaURL())
			benchQueue(b, alpha, amqptest.AlphaID) // the answers' queue, bounded
			var took time.Duration
			for range b.N {
				ps := make([]amqp091.Publishing, n)
				for i := range ps {
					env, body := submitBody(b, amqptest.AlphaID)
					ps[i] = commandPublishing(env, body)
				}
				g.set(false)
				publishMany(b, alpha, c.id, ps)
				want := c.in.Stats().Handled + n
				t0 := time.Now()
				g.set(true)
				for c.in.Stats().Handled < want {
					if time.Since(t0) > 2*time.Minute {
						b.Fatalf("%d of %d handled", c.in.Stats().Handled, want)
					}
					time.Sleep(2 * time.Millisecond)
				}
				took += time.Since(t0)
			}
			s := c.in.Stats()
			b.ReportMetric(float64(n*b.N)/took.Seconds(), "commands/s")
			b.ReportMetric(float64(s.Handled)/float64(max(s.Commits, 1)), "commands/commit")
		})
	}
}
