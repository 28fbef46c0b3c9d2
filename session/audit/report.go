package audit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"hcp-edge/envelope"
)

// Period is the unit a Report groups its entries by.
type Period string

// Periods.
const (
	PeriodDay  Period = "day"  // from midnight to midnight
	PeriodWeek Period = "week" // from Monday's midnight to the next
)

// ReportOpts says which window a Report covers and how it groups it.
type ReportOpts struct {
	Since time.Time // the window's start (zero: the first entry's time)
	Until time.Time // its end, excluded (zero: just after the last entry)
	// Period groups the entries ("": PeriodDay); a period starts at
	// midnight (a week on Monday) in Location.
	Period   Period
	Location *time.Location // nil: UTC
	// Withheld reports whether a session's entries must keep their detail
	// to themselves (a T3 or T4 session: `audit replay` shows it, recorded
	// as an access). Such an entry is counted, with its rule, decision and
	// who, and its readings, action, reason and answers are left out.
	Withheld func(sessionID string) bool
}

// Report is the safety officer's summary of the audit log over a window:
// per period, the trips, e-stops, refusals by rule, approvals and who gave
// them, questions and answers, operator overrides, leak checks and the
// agent's writes to endurance-limited (non-volatile) registers. Build makes
// it; WriteText, WriteJSON and WriteHTML print it.
type Report struct {
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	Period Period    `json:"period"`
	Zone   string    `json:"zone"` // where periods start at midnight: a location's name, or its zone's at Since
	// Entries is the number of entries read, FirstSeq and LastSeq their
	// chain positions (0 when none).
	Entries  int    `json:"entries"`
	FirstSeq uint64 `json:"first_seq,omitempty"`
	LastSeq  uint64 `json:"last_seq,omitempty"`
	// Envelopes are the envelope versions that decided in the window, in
	// the order they first appear (entries written before versions were
	// recorded name none).
	Envelopes []string        `json:"envelopes"`
	Totals    Totals          `json:"totals"`
	Periods   []PeriodSummary `json:"periods"`

	loc *time.Location
}

// Totals counts a window's or a period's items by section.
type Totals struct {
	Trips      int `json:"trips"`
	EStops     int `json:"estops"`
	Refusals   int `json:"refusals"`
	Approvals  int `json:"approvals"`
	Questions  int `json:"questions"`
	Overrides  int `json:"overrides"`
	LeakChecks int `json:"leak_checks"`
	NVWrites   int `json:"nv_writes"`
	Other      int `json:"other"` // entries of kinds the report does not know
}

// PeriodSummary is one period of a Report: each section's items, oldest
// first.
type PeriodSummary struct {
	Start      time.Time   `json:"start"`
	End        time.Time   `json:"end"`
	Entries    int         `json:"entries"` // read in the period
	Totals     Totals      `json:"totals"`
	Trips      []TripItem  `json:"trips"`
	EStops     []EStopItem `json:"estops"`
	Refusals   []RuleCount `json:"refusals"`  // by rule, most frequent first
	Approvals  []Approval  `json:"approvals"` // signatures, releases, denials
	Approvers  []Count     `json:"approvers"` // by who, most first
	Questions  []Question  `json:"questions"`
	Overrides  []Override  `json:"overrides"`
	LeakChecks []LeakCheck `json:"leak_checks"`
	NVWrites   []NVWrite   `json:"nv_writes"`
	Other      []Count     `json:"other"` // by kind
	leaks      map[string]int
}

// TripItem is one trip: what crossed which limit, the procedure that ran,
// and how long from the snapshot that showed it to the procedure's audit
// entry (0 when the entry predates recorded readings).
type TripItem struct {
	At         time.Time         `json:"at"`
	Seq        uint64            `json:"seq"`
	Trip       string            `json:"trip"`
	Procedure  string            `json:"procedure,omitempty"`
	Cause      string            `json:"cause"`
	Reading    *envelope.Reading `json:"reading,omitempty"`
	ReactionMS float64           `json:"reaction_ms,omitempty"`
	Envelope   string            `json:"envelope,omitempty"`
	SessionID  string            `json:"session_id,omitempty"`
}

// EStopItem is one e-stop: pressed on the rig (the e-stop input: a trip),
// or asked on the control socket by an operator.
type EStopItem struct {
	At         time.Time `json:"at"`
	Seq        uint64    `json:"seq"`
	Via        string    `json:"via"` // "control socket" or "e-stop input"
	Who        string    `json:"who"`
	UID        *uint32   `json:"uid,omitempty"`
	Outcome    string    `json:"outcome,omitempty"`
	ReactionMS float64   `json:"reaction_ms,omitempty"` // the input's: from the snapshot to the procedure's entry
}

// RuleCount is how often one rule refused, with the newest refusal: its
// reason and the readings it was judged on (left out for a withheld
// session's).
type RuleCount struct {
	Rule     string             `json:"rule"`
	Count    int                `json:"count"`
	LastAt   time.Time          `json:"last_at"`
	LastSeq  uint64             `json:"last_seq"`
	Reason   string             `json:"reason,omitempty"`
	Readings []envelope.Reading `json:"readings,omitempty"`
	Withheld bool               `json:"withheld,omitempty"`
}

// Count is a name and how many.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Approval is one approval decision: a signature on a session's
// execution, a release of a T4 session's results, a denial.
type Approval struct {
	At        time.Time `json:"at"`
	Seq       uint64    `json:"seq"`
	SessionID string    `json:"session_id,omitempty"`
	Decision  string    `json:"decision"`
	Who       string    `json:"who"`
	UID       *uint32   `json:"uid,omitempty"`
	Signature string    `json:"signature,omitempty"` // "1 of 2"
	RiskLevel string    `json:"risk_level,omitempty"`
}

// Question is an entry about a question a session asked a person, or its
// answer (any kind whose name says question, answer or checkpoint).
type Question struct {
	At         time.Time `json:"at"`
	Seq        uint64    `json:"seq"`
	Kind       string    `json:"kind"`
	SessionID  string    `json:"session_id,omitempty"`
	Checkpoint string    `json:"checkpoint,omitempty"`
	Question   string    `json:"question,omitempty"`
	Answer     string    `json:"answer,omitempty"`
	Who        string    `json:"who,omitempty"`
	Withheld   bool      `json:"withheld,omitempty"`
}

// Override is an operator overriding what runs: a reset of the latched
// interlock, arming, a takeover or hand-back, an abort, pause or resume,
// an access withdrawn.
type Override struct {
	At      time.Time `json:"at"`
	Seq     uint64    `json:"seq"`
	Op      string    `json:"op"`
	Target  string    `json:"target,omitempty"`
	Who     string    `json:"who"`
	UID     *uint32   `json:"uid,omitempty"`
	Outcome string    `json:"outcome"`
	Error   string    `json:"error,omitempty"`
}

// LeakCheck is a leak-check session: when the gate accepted it and how it
// ended ("" while it has not, in the window).
type LeakCheck struct {
	At        time.Time `json:"at"`
	Seq       uint64    `json:"seq"`
	SessionID string    `json:"session_id"`
	Outcome   string    `json:"outcome,omitempty"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// NVWrite is a write the agent made itself to an endurance-limited
// (non-volatile) register of an instrument, at start.
type NVWrite struct {
	At         time.Time `json:"at"`
	Seq        uint64    `json:"seq"`
	Instrument string    `json:"instrument"`
	Channel    string    `json:"channel"`
	Value      float64   `json:"value"`
}

// overrideOps are the control operations that override what runs.
var overrideOps = []string{"reset", "arm", "takeover", "handback", "abort", "pause", "resume", "access_withdraw"}

// detail is the union of the fields the report reads from entries' JSON.
type detail struct {
	Decision   string             `json:"decision"`
	Rule       string             `json:"rule"`
	Trip       string             `json:"trip"`
	Reason     string             `json:"reason"`
	Operator   string             `json:"operator"`
	Envelope   string             `json:"envelope"`
	Readings   []envelope.Reading `json:"readings"`
	Op         string             `json:"op"`
	Target     string             `json:"target"`
	Outcome    string             `json:"outcome"`
	User       string             `json:"user"`
	UID        *uint32            `json:"uid"`
	Need       string             `json:"role_needed"`
	Error      string             `json:"error"`
	Instrument string             `json:"instrument"`
	Channel    string             `json:"channel"`
	Value      float64            `json:"value"`
	NV         bool               `json:"non_volatile"`
	Capability string             `json:"capability"`
	ReasonCode string             `json:"reason_code"`
	To         string             `json:"to"`
	RiskLevel  string             `json:"risk_level"`
	Signature  int                `json:"signature"`
	Required   int                `json:"required"`
	Checkpoint string             `json:"checkpoint"`
	CheckID    string             `json:"checkpoint_id"`
	Question   string             `json:"question"`
	Prompt     string             `json:"prompt"`
	Answer     json.RawMessage    `json:"answer"`
}

// who names an operator: the display name, then the OS user if another.
func (d *detail) who() string {
	switch {
	case d.Operator != "" && d.User != "" && d.User != d.Operator:
		return d.Operator + " (" + d.User + ")"
	case d.Operator != "":
		return d.Operator
	case d.User != "":
		return d.User
	case d.UID != nil:
		return fmt.Sprintf("uid %d", *d.UID)
	}
	return "the agent"
}

// Build summarises entries (in chain order, as Query returns them) over
// opts' window. It reads each entry's detail by what its kind records;
// an entry of a kind it does not know is counted under Other, by kind.
// It is a pure function of its arguments.
func Build(entries []Entry, opts ReportOpts) Report {
	loc := opts.Location
	if loc == nil {
		loc = time.UTC
	}
	if opts.Period == "" {
		opts.Period = PeriodDay
	}
	r := Report{Since: opts.Since, Until: opts.Until, Period: opts.Period, Zone: loc.String(), Envelopes: []string{},
		Periods: []PeriodSummary{}, loc: loc}
	if loc == time.Local && !opts.Since.IsZero() { // "Local" says nothing: the zone's name at the start (CET, UTC)
		r.Zone, _ = opts.Since.In(loc).Zone()
	}
	inWindow := func(e *Entry) bool {
		return (opts.Since.IsZero() || !e.At.Before(opts.Since)) && (opts.Until.IsZero() || e.At.Before(opts.Until))
	}
	var lo, hi time.Time
	for i := range entries {
		e := &entries[i]
		if !inWindow(e) {
			continue
		}
		if r.Entries == 0 {
			r.FirstSeq, lo, hi = e.Seq, e.At, e.At
		}
		r.Entries++
		r.LastSeq, lo, hi = e.Seq, minTime(lo, e.At), maxTime(hi, e.At)
	}
	if r.Since.IsZero() {
		r.Since = lo
	}
	if r.Until.IsZero() && r.Entries > 0 {
		r.Until = hi.Add(time.Nanosecond)
	}
	if r.Since.IsZero() || !r.Until.After(r.Since) {
		return r
	}
	r.Since, r.Until = r.Since.UTC(), r.Until.UTC()
	var ends []time.Time // each period's end, for finding an entry's
	for start := periodStart(r.Since, opts.Period, loc); start.Before(r.Until); {
		end := nextPeriod(start, opts.Period)
		r.Periods = append(r.Periods, PeriodSummary{Start: start.UTC(), End: end.UTC(), Trips: []TripItem{}, EStops: []EStopItem{},
			Refusals: []RuleCount{}, Approvals: []Approval{}, Approvers: []Count{}, Questions: []Question{}, Overrides: []Override{},
			LeakChecks: []LeakCheck{}, NVWrites: []NVWrite{}, Other: []Count{}, leaks: map[string]int{}})
		ends = append(ends, end)
		start = end
	}
	leakOf := map[string]*PeriodSummary{} // a leak-check session's period, by session id
	seen := map[string]bool{}
	withheld := func(sid string) bool { return sid != "" && opts.Withheld != nil && opts.Withheld(sid) }
	for i := range entries {
		e := &entries[i]
		if !inWindow(e) {
			continue
		}
		p := &r.Periods[periodIndex(ends, e.At)]
		p.Entries++
		if e.Kind == KindInterlock || e.Kind == KindToolCall {
			if v := envelopeOf(e.Detail); v != "" && !seen[v] {
				seen[v] = true
				r.Envelopes = append(r.Envelopes, v)
			}
		}
		if isQuestion(e.Kind) {
			p.addQuestion(e, withheld(e.SessionID))
			continue
		}
		switch e.Kind {
		case KindToolCall: // accepted, executed or failed: not a safety event
			continue
		case KindTransition:
			lp := leakOf[e.SessionID]
			if lp == nil {
				continue
			}
			var d struct{ To string }
			if json.Unmarshal([]byte(e.Detail), &d) == nil && terminal(d.To) {
				lc := &lp.LeakChecks[lp.leaks[e.SessionID]]
				lc.Outcome, lc.EndedAt = d.To, e.At
			}
			continue
		case KindDataAccess, KindRecipe, KindModel, KindRetention, KindAnalysis:
			continue
		}
		if !e.Kind.Valid() {
			p.count(&p.Other, string(e.Kind))
			p.Totals.Other++
			continue
		}
		var d detail
		if json.Unmarshal([]byte(e.Detail), &d) != nil {
			continue
		}
		hide := withheld(e.SessionID)
		switch e.Kind {
		case KindInterlock:
			p.addInterlock(e, &d, hide)
		case KindControl:
			p.addControl(e, &d, hide)
		case KindApproval:
			p.addApproval(e, &d)
		case KindGate:
			switch {
			case d.Outcome == "rejected":
				p.refuse(e, "gate/"+cmp.Or(d.ReasonCode, "rejected"), d.Reason, nil, hide)
			case d.Outcome == "accepted" && d.Capability == "leak-check":
				p.leaks[e.SessionID] = len(p.LeakChecks)
				p.LeakChecks = append(p.LeakChecks, LeakCheck{At: e.At, Seq: e.Seq, SessionID: e.SessionID})
				leakOf[e.SessionID] = p
			}
		case KindOwnership:
			if strings.HasSuffix(d.Decision, "_refused") {
				p.refuse(e, "ownership/"+d.Decision, "", nil, hide)
			}
		case KindDiscovery:
			p.refuse(e, "discovery", d.Reason, nil, hide)
		}
	}
	for i := range r.Periods {
		p := &r.Periods[i]
		// sort.Slice, not slices.SortFunc: its instantiations for these
		// types would cost the armv7 binary some 6 kB.
		sort.Slice(p.Refusals, func(i, j int) bool {
			a, b := p.Refusals[i], p.Refusals[j]
			return a.Count > b.Count || (a.Count == b.Count && a.Rule < b.Rule)
		})
		for _, cs := range [][]Count{p.Approvers, p.Other} {
			sort.Slice(cs, func(i, j int) bool {
				return cs[i].Count > cs[j].Count || (cs[i].Count == cs[j].Count && cs[i].Name < cs[j].Name)
			})
		}
		p.Totals.LeakChecks = len(p.LeakChecks)
		t := &r.Totals
		t.Trips += p.Totals.Trips
		t.EStops += p.Totals.EStops
		t.Refusals += p.Totals.Refusals
		t.Approvals += p.Totals.Approvals
		t.Questions += p.Totals.Questions
		t.Overrides += p.Totals.Overrides
		t.LeakChecks += p.Totals.LeakChecks
		t.NVWrites += p.Totals.NVWrites
		t.Other += p.Totals.Other
	}
	return r
}

func (p *PeriodSummary) addInterlock(e *Entry, d *detail, hide bool) {
	switch d.Decision {
	case string(envelope.DecisionTripped):
		var rd *envelope.Reading
		var reaction float64
		if len(d.Readings) > 0 {
			rd = &d.Readings[0]
			if !rd.At.IsZero() {
				reaction = float64(e.At.Sub(rd.At)) / float64(time.Millisecond)
			}
		}
		if d.Trip == string(envelope.TripEStop) {
			p.EStops = append(p.EStops, EStopItem{At: e.At, Seq: e.Seq, Via: "e-stop input", Who: "the e-stop button", Outcome: "tripped",
				ReactionMS: reaction})
			p.Totals.EStops++
			return
		}
		p.Trips = append(p.Trips, TripItem{At: e.At, Seq: e.Seq, Trip: d.Trip, Procedure: d.Rule, Cause: d.Reason, Reading: rd,
			ReactionMS: reaction, Envelope: d.Envelope, SessionID: e.SessionID})
		p.Totals.Trips++
	case string(envelope.DecisionRefused):
		rule := d.Rule
		switch {
		case rule == "" && d.Operator == "":
			rule = "unauthorized"
		case rule == "":
			rule = "refused"
		}
		if d.Operator != "" {
			rule += " (reset refused)"
		}
		p.refuse(e, rule, d.Reason, d.Readings, hide)
	}
}

func (p *PeriodSummary) addControl(e *Entry, d *detail, hide bool) {
	switch {
	case d.Op == "init" && d.NV:
		p.NVWrites = append(p.NVWrites, NVWrite{At: e.At, Seq: e.Seq, Instrument: d.Instrument, Channel: d.Channel, Value: d.Value})
		p.Totals.NVWrites++
	case d.Op == "estop":
		p.EStops = append(p.EStops, EStopItem{At: e.At, Seq: e.Seq, Via: "control socket", Who: d.who(), UID: d.UID, Outcome: d.Outcome})
		p.Totals.EStops++
	case d.Outcome == "refused":
		rule := "control/" + d.Op
		if d.Need != "" {
			rule += " (needs " + d.Need + ")"
		}
		p.refuse(e, rule, d.who()+": "+d.Error, nil, hide)
	case slices.Contains(overrideOps, d.Op):
		p.Overrides = append(p.Overrides, Override{At: e.At, Seq: e.Seq, Op: d.Op, Target: d.Target, Who: d.who(), UID: d.UID,
			Outcome: d.Outcome, Error: d.Error})
		p.Totals.Overrides++
	case (d.Op == "deny" || d.Op == "access_deny") && d.Outcome == "done":
		p.approve(Approval{At: e.At, Seq: e.Seq, SessionID: e.SessionID, Decision: d.Op, Who: d.who(), UID: d.UID})
	}
}

func (p *PeriodSummary) addApproval(e *Entry, d *detail) {
	if d.Decision == "access_requested" { // a caller's request, not a person's decision
		return
	}
	a := Approval{At: e.At, Seq: e.Seq, SessionID: e.SessionID, Decision: cmp.Or(d.Decision, "approval"), Who: d.who(), UID: d.UID,
		RiskLevel: d.RiskLevel}
	if d.Signature > 0 {
		a.Signature = fmt.Sprintf("%d of %d", d.Signature, d.Required)
	}
	p.approve(a)
}

func (p *PeriodSummary) approve(a Approval) {
	p.Approvals = append(p.Approvals, a)
	p.count(&p.Approvers, a.Who)
	p.Totals.Approvals++
}

func (p *PeriodSummary) addQuestion(e *Entry, hide bool) {
	q := Question{At: e.At, Seq: e.Seq, Kind: string(e.Kind), SessionID: e.SessionID, Withheld: hide}
	var d detail
	if json.Unmarshal([]byte(e.Detail), &d) == nil {
		q.Checkpoint, q.Who = cmp.Or(d.Checkpoint, d.CheckID), d.Operator
		if d.Operator != "" || d.User != "" {
			q.Who = d.who()
		}
		if !hide {
			q.Question = cmp.Or(d.Question, d.Prompt)
			if len(d.Answer) > 0 && string(d.Answer) != "null" {
				var s string
				if json.Unmarshal(d.Answer, &s) != nil {
					s = string(d.Answer)
				}
				q.Answer = s
			}
		}
	}
	p.Questions = append(p.Questions, q)
	p.Totals.Questions++
}

func (p *PeriodSummary) refuse(e *Entry, rule, reason string, readings []envelope.Reading, hide bool) {
	p.Totals.Refusals++
	i := slices.IndexFunc(p.Refusals, func(c RuleCount) bool { return c.Rule == rule })
	if i < 0 {
		p.Refusals = append(p.Refusals, RuleCount{Rule: rule})
		i = len(p.Refusals) - 1
	}
	c := &p.Refusals[i]
	c.Count++
	c.LastAt, c.LastSeq, c.Withheld = e.At, e.Seq, hide
	c.Reason, c.Readings = "", nil
	if !hide {
		c.Reason, c.Readings = reason, readings
	}
}

func (p *PeriodSummary) count(cs *[]Count, name string) {
	if i := slices.IndexFunc(*cs, func(c Count) bool { return c.Name == name }); i >= 0 {
		(*cs)[i].Count++
		return
	}
	*cs = append(*cs, Count{Name: name, Count: 1})
}

// isQuestion reports whether k records a question asked of a person or its
// answer: kinds added after the report, recognised by their name.
func isQuestion(k Kind) bool {
	s := string(k)
	return strings.Contains(s, "question") || strings.Contains(s, "answer") || strings.Contains(s, "checkpoint")
}

func terminal(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "ABORTED", "REJECTED":
		return true
	}
	return false
}

// envelopeOf finds an interlock entry's "envelope" field without decoding
// the whole detail (the tool calls, most of the log, are read for it only).
func envelopeOf(detail string) string {
	const key = `"envelope":"`
	i := strings.Index(detail, key)
	if i < 0 {
		return ""
	}
	v := detail[i+len(key):]
	if j := strings.IndexByte(v, '"'); j >= 0 {
		return v[:j]
	}
	return ""
}

func periodStart(t time.Time, p Period, loc *time.Location) time.Time {
	t = t.In(loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	if p == PeriodWeek {
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		day = day.AddDate(0, 0, -back)
	}
	return day
}

func nextPeriod(start time.Time, p Period) time.Time {
	if p == PeriodWeek {
		return start.AddDate(0, 0, 7)
	}
	return start.AddDate(0, 0, 1)
}

// periodIndex is the index of the period holding t, given their ends.
func periodIndex(ends []time.Time, t time.Time) int {
	i, _ := slices.BinarySearchFunc(ends, t, func(end, t time.Time) int {
		if end.After(t) {
			return 1
		}
		return -1
	})
	return min(i, len(ends)-1)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
