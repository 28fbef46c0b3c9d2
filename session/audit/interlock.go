package audit

import (
	"context"
	"encoding/json"
	"fmt"

	"hcp-edge/envelope"
)

// Interlock adapts a Log to envelope.Auditor.
type Interlock struct{ Log *Log }

var _ envelope.Auditor = Interlock{}

// Record appends e: a tool call when it carries an action that was
// accepted, executed or failed, an interlock decision otherwise. The
// detail is e as JSON; e.At stamps the entry (the Log's clock if zero).
// Note that the detail cannot be unmarshalled back into an envelope.Entry:
// envelope.ActionKind marshals to text but has no UnmarshalText.
func (a Interlock) Record(ctx context.Context, e envelope.Entry) error {
	kind := KindInterlock
	if e.Action != nil {
		switch e.Decision {
		case envelope.DecisionAccepted, envelope.DecisionExecuted, envelope.DecisionFailed:
			kind = KindToolCall
		}
	}
	if e.At.IsZero() {
		e.At = a.Log.clock()
	}
	detail, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit: encode interlock entry: %w", err)
	}
	_, err = a.Log.Append(ctx, Entry{At: e.At, SessionID: e.SessionID, Kind: kind, Detail: string(detail)})
	return err
}
