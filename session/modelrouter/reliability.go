package modelrouter

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/sony/gobreaker/v2"
	"golang.org/x/time/rate"
)

// BreakerOpts tunes the circuit breaker of each instance.
type BreakerOpts struct {
	// Failures in a row that open the circuit (0: 3).
	Failures int
	// Cooldown is how long the circuit stays open before one probe is let
	// through (half-open; 0: 30 s). A probe that succeeds closes it, one
	// that fails opens it again.
	Cooldown time.Duration
}

// CircuitState is one instance's circuit.
type CircuitState struct {
	Model    string `json:"model"`
	Instance string `json:"instance"`
	State    string `json:"state"` // closed, half-open, open
}

// instance is one remote instance with its breaker.
type instance struct {
	url string
	cb  *gobreaker.CircuitBreaker[struct{}]
}

// remote is a remote model's runtime: its instances, rate limit and key.
type remote struct {
	m     *Model
	insts []*instance
	lim   *rate.Limiter // nil: no rpm cap
	key   string
	next  uint32 // round robin
}

// newRemote builds the runtime of m. onChange is told of every circuit's
// change of state.
func newRemote(m *Model, o BreakerOpts, onChange func(model, inst string, from, to gobreaker.State)) (*remote, error) {
	key, err := apiKey(m)
	if err != nil {
		return nil, err
	}
	r := &remote{m: m, key: key}
	if m.RPM > 0 {
		r.lim = rate.NewLimiter(rate.Limit(float64(m.RPM)/60), max(1, m.RPM/60))
	}
	failures := uint32(max(1, o.Failures))
	if o.Failures == 0 {
		failures = 3
	}
	cool := o.Cooldown
	if cool <= 0 {
		cool = 30 * time.Second
	}
	for _, u := range m.Instances {
		u := u
		r.insts = append(r.insts, &instance{url: u, cb: gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
			Name:        m.ID + " " + u,
			MaxRequests: 1,
			Timeout:     cool,
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
			OnStateChange: func(_ string, from, to gobreaker.State) {
				if onChange != nil {
					onChange(m.ID, u, from, to)
				}
			},
			// Our own bad request, and the caller's cancellation, say
			// nothing of the instance's health.
			IsSuccessful: func(err error) bool { return err == nil || outcomeOf(err) == InvalidRequest },
			IsExcluded:   func(err error) bool { return outcomeOf(err) == Canceled },
		})})
	}
	return r, nil
}

// backoff is the wait before retry number attempt (0-based) of a transient
// failure: the server's Retry-After when it sent one, else exponential from
// base with full jitter, at most max.
func backoff(attempt int, retryAfter, base, maxWait time.Duration, rnd func() float64) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := float64(base) * math.Pow(2, float64(attempt))
	d = math.Min(d, float64(maxWait))
	return time.Duration(d * (0.5 + 0.5*rnd()))
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isOpen reports whether err is the breaker refusing a call.
func isOpen(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}
