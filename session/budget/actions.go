package budget

import (
	"context"
	"sync"

	"hcp-edge/envelope"
)

// ActionCounter counts the actuator actions the interlock executed for each
// session, from its audit stream: Auditor wraps the interlock's Auditor and
// counts every Entry with Decision executed, an Action and a SessionID
// once it is recorded. Toward-safe actions count like any other. Its
// methods are safe for concurrent use.
type ActionCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// NewActionCounter returns an empty ActionCounter.
func NewActionCounter() *ActionCounter { return &ActionCounter{n: map[string]int{}} }

// Auditor returns an envelope.Auditor that records to next and then counts.
func (c *ActionCounter) Auditor(next envelope.Auditor) envelope.Auditor {
	return countingAuditor{c: c, next: next}
}

// Executed returns the actions executed for session since this process
// started (or since Forget).
func (c *ActionCounter) Executed(session string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[session]
}

// Forget drops session's count (a session that ended).
func (c *ActionCounter) Forget(session string) {
	c.mu.Lock()
	delete(c.n, session)
	c.mu.Unlock()
}

type countingAuditor struct {
	c    *ActionCounter
	next envelope.Auditor
}

func (a countingAuditor) Record(ctx context.Context, e envelope.Entry) error {
	if err := a.next.Record(ctx, e); err != nil {
		return err
	}
	if e.Decision == envelope.DecisionExecuted && e.Action != nil && e.SessionID != "" {
		a.c.mu.Lock()
		a.c.n[e.SessionID]++
		a.c.mu.Unlock()
	}
	return nil
}
