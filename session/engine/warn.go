package engine

import (
	"context"
	"fmt"

	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
)

// WarnTelemetryDropped is the warning code of Warn's caller in cmd: the
// uplink's outbox dropped some of the session's telemetry (progress, log)
// past its bound while the broker was away.
const WarnTelemetryDropped = "telemetry_dropped"

// Warn records a warning event (code, message, details) in live session
// id's sequence and publishes it, like an executor's own warnings: for
// conditions outside the executor that the caller must hear about in the
// session's stream. A closed or unknown session is refused (ErrNotFound,
// ErrState): nothing may follow session_closed.
func (e *Engine) Warn(_ context.Context, id, code, message string, details map[string]any) error {
	l := e.get(id)
	if l == nil || l.id != id {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.Terminal() {
		return fmt.Errorf("%w: %s is %s", ErrState, id, l.state)
	}
	w := executor.Warning{Code: code, Message: message, Details: details}
	l.warnings = append(l.warnings, w.Message)
	l.extWarnings = append(l.extWarnings, w.Message)
	return e.appendLocked(l, store.Emit{Type: lifecycle.EventWarning, Data: w})
}
