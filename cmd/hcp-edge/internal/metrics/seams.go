package metrics

import (
	"context"
	"encoding/json"
	"slices"

	"hcp-edge/envelope"
	"hcp-edge/session/audit"
	"hcp-edge/session/gate"
)

// The gate's outcomes, as its audit entries spell them.
const (
	gateAccepted = gate.Accepted
	gatePending  = gate.PendingApproval
	gateRejected = gate.Rejected
)

// reasonCodes are the gate's rejection codes known in advance.
func reasonCodes() []string {
	return []string{string(gate.ReasonUnauthorized), string(gate.ReasonForbidden), string(gate.ReasonInvalidInput),
		string(gate.ReasonRiskTooHigh), string(gate.ReasonResourceUnavailable)}
}

// Auditor wraps the interlock's auditor: every entry goes to next
// unchanged, and a tripped decision (the monitor's emergency procedures)
// counts in hcp_edge_interlock_trips_total under its trip kind, a halted
// one (Interlock.SafeState) under safe_state. The procedure has run when
// the interlock records it, so it counts even when next fails.
func (m *Metrics) Auditor(next envelope.Auditor) envelope.Auditor {
	return auditor{m: m, next: next}
}

type auditor struct {
	m    *Metrics
	next envelope.Auditor
}

// Record implements envelope.Auditor.
func (a auditor) Record(ctx context.Context, e envelope.Entry) error {
	switch e.Decision {
	case envelope.DecisionTripped:
		a.m.countTrip(string(e.Trip))
	case envelope.DecisionHalted:
		a.m.countTrip(CauseSafeState)
	}
	return a.next.Record(ctx, e)
}

// Recorder wraps the gate's recorder (the audit log): every entry goes to
// next unchanged, and a gate decision (audit.KindGate) that next recorded
// counts in hcp_edge_gate_decisions_total under its outcome and reason
// code. A decision next failed to record is not counted: the engine does
// not act on it. When next is a transaction (it has OnCommit, as the
// engine's store.Tx does), the decision counts once the transaction
// commits: one that rolls back never happened.
func (m *Metrics) Recorder(next gate.Recorder) gate.Recorder {
	return recorder{m: m, next: next}
}

type recorder struct {
	m    *Metrics
	next gate.Recorder
}

// Append implements gate.Recorder.
func (r recorder) Append(ctx context.Context, e audit.Entry) (audit.Entry, error) {
	out, err := r.next.Append(ctx, e)
	if err == nil && e.Kind == audit.KindGate {
		if tx, ok := r.next.(committer); ok {
			tx.OnCommit(func() { r.m.countGate(e.Detail) })
		} else {
			r.m.countGate(e.Detail)
		}
	}
	return out, err
}

// committer is a recorder whose entries are durable only when its
// transaction commits (store.Tx).
type committer interface{ OnCommit(f func()) }

// countGate counts a gate decision from its audit detail (the gate's
// JSON: outcome, reason_code), keeping the labels to the known values.
func (m *Metrics) countGate(detail string) {
	var d struct {
		Outcome    gate.Outcome `json:"outcome"`
		ReasonCode string       `json:"reason_code"`
	}
	_ = json.Unmarshal([]byte(detail), &d) // unreadable: counted as "other" below
	decision, reason := string(d.Outcome), ReasonNone
	switch d.Outcome {
	case gateAccepted, gatePending:
	case gateRejected:
		reason = d.ReasonCode
		if !slices.Contains(reasonCodes(), reason) {
			reason = ReasonOther
		}
	default:
		decision, reason = ReasonOther, ReasonOther
	}
	m.gate.with(decision, reason).Add(1)
}
