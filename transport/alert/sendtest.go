package alert

import (
	"context"
	"fmt"
	"time"
)

// Result is one receiver's answer to a test alert.
type Result struct {
	Receiver string
	Err      error // nil: delivered
}

// SendTest sends a test alert (class test, severity info) to every
// receiver of cfg now, bypassing the queue, routing and grouping, and
// returns each receiver's result; an error when a receiver cannot be built
// from its URL (nothing is sent then).
func SendTest(ctx context.Context, cfg Config, timeout time.Duration) ([]Result, error) {
	var rs []receiver
	for i, rc := range cfg.Receivers {
		r, err := newReceiver(rc)
		if err != nil {
			return nil, fmt.Errorf("alerts.receivers[%d].url: %w", i, err)
		}
		rs = append(rs, r)
	}
	now := time.Now()
	al := Alert{ID: newID(), Class: ClassTest, Severity: SeverityInfo, Title: "test alert from hcp-edge",
		Text: "hcp-edge alert test: if you read this, this receiver gets the rig's alerts.", At: now, Last: now, Count: 1}
	out := make([]Result, len(rs))
	for i, r := range rs {
		sctx, cancel := context.WithTimeout(ctx, timeout)
		out[i] = Result{Receiver: r.name(), Err: r.send(sctx, al)}
		cancel()
	}
	return out, nil
}
