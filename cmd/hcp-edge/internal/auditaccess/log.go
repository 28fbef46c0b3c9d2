package auditaccess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"hcp-edge/session/audit"
	"hcp-edge/session/gate"
	"hcp-edge/session/store"
)

// Outcomes of LogQuery.Outcome and LogEntry.Outcome.
const (
	OutcomeDone    = "done"
	OutcomeFailed  = "failed"
	OutcomeRefused = "refused"
)

// LogQuery is what `hcp-edge audit log` asks for (the control operation
// audit_log carries it as its query). Zero fields select everything.
type LogQuery struct {
	Since     time.Time `json:"since,omitzero"`
	Until     time.Time `json:"until,omitzero"`
	Kinds     []string  `json:"kinds,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	UID       *uint32   `json:"uid,omitempty"`
	Outcome   string    `json:"outcome,omitempty"` // done, failed or refused
	After     uint64    `json:"after,omitempty"`   // entries after this chain position (--follow)
	Limit     int       `json:"limit,omitempty"`
}

// Check refuses an unknown kind or outcome and a window that ends before
// it starts.
func (q LogQuery) Check() error {
	for _, k := range q.Kinds {
		if !audit.Kind(k).Valid() {
			return fmt.Errorf("unknown kind %q (one of gate_decision, transition, tool_call, interlock_decision, approval, data_access, ownership, discovery, control, recipe, model, retention, analysis)", k)
		}
	}
	switch q.Outcome {
	case "", OutcomeDone, OutcomeFailed, OutcomeRefused:
	default:
		return fmt.Errorf("unknown outcome %q (refused, done or failed)", q.Outcome)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return fmt.Errorf("--until %s is not after --since %s", q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))
	}
	if q.Limit < 0 {
		return errors.New("a negative limit")
	}
	return nil
}

// LogEntry is one entry of the audit log as `audit log` shows it: its
// chain position (Seq), time, kind, what it decided and who, and, unless
// withheld, its detail.
type LogEntry struct {
	Entry
	SessionID string `json:"session_id,omitempty"` // empty: a rig-level entry
	User      string `json:"user,omitempty"`       // the OS user the kernel reported
	Outcome   string `json:"outcome,omitempty"`    // done, failed, refused ("" for a step in between)
	// Withheld says why Detail, Summary and Meaning are left out: the
	// entry belongs to a T3/T4 session, whose detail only `audit replay`
	// shows (recorded as an access to its data).
	Withheld string `json:"withheld,omitempty"`
}

// LogResult is the reply to audit_log.
type LogResult struct {
	Via       string     `json:"via"`
	StateFile string     `json:"state_file"`
	HeadSeq   uint64     `json:"head_seq"`
	Entries   []LogEntry `json:"entries"`
}

// Log answers q from st's audit log, oldest first (chain order). Entries of
// T3 and T4 sessions keep their position, time, kind, decision, operator
// and outcome, and lose their detail. Reading it needs no role and is not
// itself recorded: it shows nothing of a session's data.
func Log(ctx context.Context, st *store.Store, q LogQuery, via, path string) (LogResult, error) {
	r := LogResult{Via: via, StateFile: path, Entries: []LogEntry{}}
	if err := q.Check(); err != nil {
		return r, err
	}
	aq := audit.Query{Since: q.Since, Until: q.Until, SessionID: q.SessionID, After: q.After}
	for _, k := range q.Kinds {
		aq.Kinds = append(aq.Kinds, audit.Kind(k))
	}
	if q.UID == nil && q.Outcome == "" {
		aq.Limit = q.Limit
	}
	es, err := st.Audit().Query(ctx, aq)
	if err != nil {
		return r, err
	}
	if r.HeadSeq, _, err = st.Audit().Head(); err != nil {
		return r, err
	}
	classes := map[string]string{}
	for _, e := range es {
		le := describeLog(e)
		if q.UID != nil && (le.UID == nil || *le.UID != *q.UID) {
			continue
		}
		if q.Outcome != "" && le.Outcome != q.Outcome {
			continue
		}
		if e.SessionID != "" {
			c, ok := classes[e.SessionID]
			if !ok {
				c = classOf(ctx, st, e.SessionID)
				classes[e.SessionID] = c
			}
			if c == "" || gate.Classification(c).Rank() >= gate.T3.Rank() {
				what := c
				if what == "" {
					what = "of an unknown class"
				}
				le.Withheld = fmt.Sprintf("session %s is %s: hcp-edge audit replay %s shows it (recorded as an access)", e.SessionID, what, e.SessionID)
				le.Detail, le.Summary, le.Meaning = json.RawMessage("null"), "", ""
			}
		}
		r.Entries = append(r.Entries, le)
	}
	if q.Limit > 0 && len(r.Entries) > q.Limit {
		r.Entries = r.Entries[len(r.Entries)-q.Limit:]
	}
	return r, nil
}

// classOf is session sid's data classification: its record's, or, once
// retention removed the record, what its gate decision recorded; "" when
// neither says (its detail is then withheld).
func classOf(ctx context.Context, st *store.Store, sid string) string {
	if s, err := st.Session(ctx, sid); err == nil {
		if s.DataClass == "" {
			return string(gate.T1)
		}
		return s.DataClass
	}
	es, err := st.Audit().Query(ctx, audit.Query{SessionID: sid, Kinds: []audit.Kind{audit.KindGate, audit.KindRetention}})
	if err != nil {
		return ""
	}
	for _, e := range es {
		var d struct {
			Class string `json:"data_classification"`
		}
		if json.Unmarshal([]byte(e.Detail), &d) == nil && d.Class != "" {
			return d.Class
		}
	}
	return ""
}

// describeLog is Describe with the session, the OS user and the outcome.
func describeLog(e audit.Entry) LogEntry {
	le := LogEntry{Entry: Describe(e), SessionID: e.SessionID}
	var d map[string]any
	if json.Unmarshal([]byte(e.Detail), &d) != nil {
		return le
	}
	str := func(k string) string { s, _ := d[k].(string); return s }
	le.User = str("user")
	le.Outcome = outcomeOf(e.Kind, d, str)
	return le
}

// outcomeOf maps an entry's own words to done, failed or refused.
func outcomeOf(k audit.Kind, d map[string]any, str func(string) string) string {
	switch k {
	case audit.KindControl:
		return str("outcome")
	case audit.KindToolCall, audit.KindInterlock:
		switch str("decision") {
		case "refused":
			return OutcomeRefused
		case "failed":
			return OutcomeFailed
		case "accepted":
			return ""
		}
		return OutcomeDone
	case audit.KindGate:
		switch str("outcome") {
		case "rejected":
			return OutcomeRefused
		case "accepted":
			return OutcomeDone
		}
		return ""
	case audit.KindDataAccess:
		if str("refused") != "" {
			return OutcomeRefused
		}
	case audit.KindOwnership:
		if strings.HasSuffix(str("decision"), "_refused") {
			return OutcomeRefused
		}
	case audit.KindDiscovery:
		return OutcomeRefused
	case audit.KindModel:
		if strings.Contains(str("kind"), "refus") {
			return OutcomeRefused
		}
	}
	return OutcomeDone
}
