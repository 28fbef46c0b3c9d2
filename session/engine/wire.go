package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"hcp-edge/session/budget"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// EventApprovalPending is the event type that tells the caller its session
// waits for a human approval. lifecycle knows only the nine standard types,
// so it is stored as a warning whose code is approval_pending and sent with
// this event_type, the same sequence number and the same data.
const EventApprovalPending = "approval_pending"

type sessionCreated struct {
	State        lifecycle.State `json:"state"`
	RiskLevel    string          `json:"risk_level"`
	SessionToken string          `json:"session_token"`
}

type approvalDetails struct {
	ApprovalID string `json:"approval_id"`
	RiskLevel  string `json:"risk_level"`
	ExpiresAt  string `json:"expires_at"`
}

type approvalData struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details approvalDetails `json:"details"`
}

type errorData struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	Recoverable bool   `json:"recoverable"`
}

type failDetails struct {
	Phase          string `json:"phase,omitempty"`
	Step           string `json:"step_name,omitempty"`
	StepIndex      int    `json:"step,omitempty"` // 1-based
	LastCheckpoint string `json:"last_checkpoint,omitempty"`
	Recoverable    bool   `json:"recoverable"`
	Reason         string `json:"reason,omitempty"`
	// Budget names the overrun budget of a budget_exceeded failure.
	Budget *budget.ExceededError `json:"budget,omitempty"`
}

// wireEventType is the event_type a stored event is sent with.
func wireEventType(ev store.Event) string {
	if ev.Type == lifecycle.EventWarning {
		var w struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(ev.Data, &w) == nil && (w.Code == EventApprovalPending || w.Code == EventAccessPending || w.Code == wire.EventOwnershipChanged) {
			return w.Code
		}
	}
	return string(ev.Type)
}

// eventEnvelopes renders stored events as L1 event messages.
func (e *Engine) eventEnvelopes(l *live, evs []store.Event) ([]*wire.Envelope, error) {
	out := make([]*wire.Envelope, 0, len(evs))
	for _, ev := range evs {
		env, err := wire.NewEnvelope(&l.uid, &wire.Event{EventType: wireEventType(ev), Sequence: ev.Seq, Data: ev.Data}, ev.At)
		if err != nil {
			return nil, fmt.Errorf("engine: event %d of %s: %w", ev.Seq, l.id, err)
		}
		out = append(out, env)
	}
	return out, nil
}

func wireArtifacts(as []executor.Artifact) []wire.Artifact {
	var out []wire.Artifact
	for _, a := range as {
		out = append(out, wire.Artifact{Name: a.Name, Type: a.Type, URI: a.URI, SizeBytes: a.SizeBytes, Checksum: a.Checksum})
	}
	return out
}

// isoDuration writes d as an ISO 8601 duration (PT2H15M, PT1.5S); "" for 0.
func isoDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("PT")
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	if h > 0 {
		fmt.Fprintf(&b, "%dH", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dM", m)
	}
	if d > 0 {
		s := fmt.Sprintf("%.3f", d.Seconds())
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		b.WriteString(s + "S")
	}
	return b.String()
}
