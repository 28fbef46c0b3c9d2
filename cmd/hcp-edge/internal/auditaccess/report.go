package auditaccess

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"hcp-edge/session/audit"
	"hcp-edge/session/gate"
	"hcp-edge/session/store"
)

// ReportQuery is what `hcp-edge audit report` asks for (the control
// operation audit_report carries it as its query).
type ReportQuery struct {
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	Period string    `json:"period,omitempty"` // day (default) or week
}

// Check refuses a window without a start or an end, or that ends before
// it starts, and an unknown period.
func (q ReportQuery) Check() error {
	switch audit.Period(q.Period) {
	case "", audit.PeriodDay, audit.PeriodWeek:
	default:
		return fmt.Errorf("unknown period %q (day or week)", q.Period)
	}
	if q.Since.IsZero() || q.Until.IsZero() {
		return errors.New("a report needs the window's start and end")
	}
	if !q.Until.After(q.Since) {
		return fmt.Errorf("--until %s is not after --since %s", q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))
	}
	return nil
}

// ReportResult is the reply to audit_report.
type ReportResult struct {
	Via       string       `json:"via"`
	StateFile string       `json:"state_file"`
	Report    audit.Report `json:"report"`
}

// Report builds the safety report (audit.Build) of q's window from st's
// audit log, its periods starting at local midnight. Like Log it needs no
// role and is not itself recorded: the entries of T3 and T4 sessions are
// counted with their rule, decision and who, without their readings,
// reasons or answers.
func Report(ctx context.Context, st *store.Store, q ReportQuery, via, path string) (ReportResult, error) {
	r := ReportResult{Via: via, StateFile: path}
	if err := q.Check(); err != nil {
		return r, err
	}
	es, err := st.Audit().Query(ctx, audit.Query{Since: q.Since, Until: q.Until})
	if err != nil {
		return r, err
	}
	// A session's class: its record's; once retention removed the record,
	// its gate decision's, found in the window when it is there (classOf
	// would read all the session's entries again).
	gated := map[string]string{}
	for _, e := range es {
		if e.Kind == audit.KindGate && e.SessionID != "" {
			var d struct {
				Class string `json:"data_classification"`
			}
			if json.Unmarshal([]byte(e.Detail), &d) == nil && d.Class != "" {
				gated[e.SessionID] = d.Class
			}
		}
	}
	hidden := map[string]bool{}
	withheld := func(sid string) bool {
		h, ok := hidden[sid]
		if !ok {
			var c string
			if s, err := st.Session(ctx, sid); err == nil {
				c = cmp.Or(s.DataClass, string(gate.T1))
			} else if c = gated[sid]; c == "" {
				c = classOf(ctx, st, sid) // log.go
			}
			h = c == "" || gate.Classification(c).Rank() >= gate.T3.Rank()
			hidden[sid] = h
		}
		return h
	}
	r.Report = audit.Build(es, audit.ReportOpts{Since: q.Since, Until: q.Until, Period: audit.Period(q.Period), Location: time.Local,
		Withheld: withheld})
	return r, nil
}
