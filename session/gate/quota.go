package gate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"hcp-edge/transport/wire"
)

// Quota is one per-caller limit: a count (0 or more), or none ("*" in the
// configuration). The zero Quota is none.
type Quota struct {
	n       int
	limited bool
}

// Limit returns the quota of n (n < 0 is refused by the configuration's
// check).
func Limit(n int) Quota { return Quota{n: n, limited: true} }

// Unlimited is the quota "*": no limit.
var Unlimited = Quota{}

// Max returns the limit and true, or 0 and false for "*".
func (q Quota) Max() (int, bool) { return q.n, q.limited }

// String is the count, or "*".
func (q Quota) String() string {
	if !q.limited {
		return "*"
	}
	return strconv.Itoa(q.n)
}

// UnmarshalText reads a count or "*" (the YAML configuration; an integer
// scalar arrives as its text).
func (q *Quota) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "*" {
		*q = Unlimited
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("quota %q: want a count of 0 or more, or \"*\" for none", s)
	}
	*q = Limit(n)
	return nil
}

// MarshalText writes the count or "*".
func (q Quota) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// MarshalYAML writes the count as an integer, or "*".
func (q Quota) MarshalYAML() (any, error) {
	if !q.limited {
		return "*", nil
	}
	return q.n, nil
}

// MarshalJSON writes the count as a number, or "*".
func (q Quota) MarshalJSON() ([]byte, error) {
	if !q.limited {
		return []byte(`"*"`), nil
	}
	return []byte(strconv.Itoa(q.n)), nil
}

// UnmarshalJSON reads a number or "*".
func (q *Quota) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return q.UnmarshalText([]byte(s))
	}
	return q.UnmarshalText(b)
}

// Quotas bound what one caller may ask of the agent, so that one harness
// cannot crowd out the others: the defaults apply to every caller, Callers
// overrides them per caller id.
type Quotas struct {
	// SubmitsPerMinute bounds the task_submits a caller makes in any 60
	// seconds (a sliding window; "*": none).
	SubmitsPerMinute Quota `yaml:"submits_per_minute" json:"submits_per_minute"`
	// OpenSessions bounds a caller's sessions not yet terminal (pending
	// approval, running, paused); "*": none.
	OpenSessions Quota `yaml:"open_sessions" json:"open_sessions"`
	// Callers overrides either quota for one caller id.
	Callers map[string]CallerQuotas `yaml:"callers,omitempty" json:"callers,omitempty"`
}

// CallerQuotas overrides the default quotas for one caller; an absent
// field keeps the default.
type CallerQuotas struct {
	SubmitsPerMinute *Quota `yaml:"submits_per_minute,omitempty" json:"submits_per_minute,omitempty"`
	OpenSessions     *Quota `yaml:"open_sessions,omitempty" json:"open_sessions,omitempty"`
}

// DefaultQuotas are the quotas a lab would pick for a rig: 60 submits a
// minute and 10 open sessions per caller (a physical rig runs one process
// at a time; a harness polling rig-status once a second stays within both).
func DefaultQuotas() Quotas {
	return Quotas{SubmitsPerMinute: Limit(60), OpenSessions: Limit(10)}
}

// For returns the quotas of caller: its overrides over the defaults.
func (q Quotas) For(caller string) (submits, open Quota) {
	submits, open = q.SubmitsPerMinute, q.OpenSessions
	if c, ok := q.Callers[caller]; ok {
		if c.SubmitsPerMinute != nil {
			submits = *c.SubmitsPerMinute
		}
		if c.OpenSessions != nil {
			open = *c.OpenSessions
		}
	}
	return submits, open
}

// check reports every negative quota.
func (q Quotas) check(bad func(format string, args ...any)) {
	neg := func(where string, v Quota) {
		if n, ok := v.Max(); ok && n < 0 {
			bad("%s: %d is negative (a count of 0 or more, or \"*\" for none)", where, n)
		}
	}
	neg("quotas.submits_per_minute", q.SubmitsPerMinute)
	neg("quotas.open_sessions", q.OpenSessions)
	for id, c := range q.Callers {
		if id == "" {
			bad("quotas.callers: an empty caller id")
		}
		if c.SubmitsPerMinute != nil {
			neg("quotas.callers."+id+".submits_per_minute", *c.SubmitsPerMinute)
		}
		if c.OpenSessions != nil {
			neg("quotas.callers."+id+".open_sessions", *c.OpenSessions)
		}
	}
}

// quotaWindow is the length of the submits_per_minute window.
const quotaWindow = time.Minute

// submitWindow counts each caller's submits in the last quotaWindow. It
// lives in memory: a restart forgets it (the broker keeps the commands
// that were waiting, and they are judged again).
type submitWindow struct {
	mu  sync.Mutex
	per map[string]*callerWindow
}

// callerWindow is one caller's admitted submits, oldest first, and their
// message ids.
type callerWindow struct {
	at  []time.Time
	ids []string
}

// take admits the submit id of caller at now under limit, or refuses it and
// returns when the oldest submit of the window leaves it. A message id
// already in the window is admitted again without counting twice: the
// inbox may decide one delivery twice (a shared transaction rolled back and
// retried alone, a redelivery).
func (w *submitWindow) take(caller, id string, limit int, now time.Time) (ok bool, frees time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.per == nil {
		w.per = map[string]*callerWindow{}
	}
	c := w.per[caller]
	if c == nil {
		c = &callerWindow{}
		w.per[caller] = c
	}
	drop := 0
	for drop < len(c.at) && now.Sub(c.at[drop]) >= quotaWindow {
		drop++
	}
	if drop > 0 {
		c.at, c.ids = append(c.at[:0], c.at[drop:]...), append(c.ids[:0], c.ids[drop:]...)
	}
	for _, seen := range c.ids {
		if id != "" && seen == id {
			return true, time.Time{}
		}
	}
	if len(c.at) < limit {
		c.at, c.ids = append(c.at, now), append(c.ids, id)
		return true, time.Time{}
	}
	if len(c.at) == 0 { // limit 0: nothing ever frees
		return false, time.Time{}
	}
	return false, c.at[0].Add(quotaWindow)
}

// checkQuotas: the caller is within its quotas — its submits in the last
// minute (this one counts unless the quota refuses it) and its open
// sessions (Request.OpenSessions, from the engine) — otherwise
// resource_unavailable naming the quota and when it frees.
func (g *Gate) checkQuotas(a *admission) bool {
	submits, open := g.cfg.Quotas.For(a.caller)
	if n, ok := submits.Max(); ok {
		now := g.clock()
		admitted, frees := g.window.take(a.caller, a.req.MessageID, n, now)
		if !admitted {
			if frees.IsZero() {
				return a.rejectWith(ReasonResourceUnavailable, ErrQuota, "submits_per_minute %d for %s: no submit is allowed", n, a.caller)
			}
			a.rejectWith(ReasonResourceUnavailable, ErrQuota, "submits_per_minute %d exceeded for %s; frees at %s",
				n, a.caller, frees.UTC().Format(wire.TimestampLayout))
			a.d.Rejection.RetryAfter = frees.Sub(now)
			a.d.Rejection.Suggestion = "resubmit at " + frees.UTC().Format(wire.TimestampLayout) + " or later"
			return true
		}
	}
	if n, ok := open.Max(); ok && a.req.OpenSessions >= n {
		return a.rejectWith(ReasonResourceUnavailable, ErrQuota, "open_sessions %d reached for %s (%d open); frees when one of its sessions ends",
			n, a.caller, a.req.OpenSessions)
	}
	return false
}

// OpenSessionsLimited reports whether caller has an open_sessions quota:
// the engine counts the caller's open sessions for Request.OpenSessions only
// then.
func (g *Gate) OpenSessionsLimited(caller string) bool {
	_, open := g.cfg.Quotas.For(caller)
	_, ok := open.Max()
	return ok
}
