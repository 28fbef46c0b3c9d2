package uplink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"hcp-edge/session/engine"
	"hcp-edge/transport/outbox"
)

// dropReportEvery is how often the uplink looks for telemetry the outbox
// dropped (past agent.amqp.telemetry_bound, while the broker was away).
const dropReportEvery = 2 * time.Second

// warner is the engine's Warn (engine.Engine), the seam of dropReporter.
type warner interface {
	Warn(ctx context.Context, id, code, message string, details map[string]any) error
}

// dropReporter tells each session's caller, in a warning event of the
// session (code telemetry_dropped, never dropped itself: warnings are
// protocol messages), how many of its progress and log events the outbox
// dropped. A session already closed cannot take an event any more: its
// count is logged. Run owns the goroutine; it ends with ctx.
type dropReporter struct {
	ob    *outbox.Outbox
	w     warner
	log   *slog.Logger
	every time.Duration
}

// run reports every r.every until ctx ends, and once more then.
func (r *dropReporter) run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.report(context.Background())
			return
		case <-t.C:
			r.report(ctx)
		}
	}
}

// report takes the outbox's per-session drop counts and reports them.
func (r *dropReporter) report(ctx context.Context) {
	drops, err := r.ob.TakeDroppedBySession()
	if err != nil {
		if !errors.Is(err, outbox.ErrClosed) {
			r.log.Warn("dropped telemetry: cannot read the outbox's counts", "err", err)
		}
		return
	}
	ids := make([]string, 0, len(drops))
	for id := range drops {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		n := drops[id]
		if id == "" {
			r.log.Warn("telemetry without a session dropped from the outbox", "dropped", n)
			continue
		}
		msg := fmt.Sprintf("%d progress/log events of this session were dropped while the broker was unreachable (agent.amqp.telemetry_bound); their sequence numbers will not arrive", n)
		if err := r.w.Warn(ctx, id, engine.WarnTelemetryDropped, msg, map[string]any{"dropped": n}); err != nil {
			r.log.Warn("telemetry of a closed session dropped from the outbox", "session", id, "dropped", n, "err", err)
		}
	}
}
