package modelrouter

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Invocation is one record of the tracker: a model invoked (or refused)
// for a task.
type Invocation struct {
	At time.Time `json:"at"`
	// Task is the Request's Task: the session id in the agent.
	Task       string        `json:"task,omitempty"`
	Model      string        `json:"model"`
	Instance   string        `json:"instance,omitempty"`
	Tier       int           `json:"tier"`
	Latency    time.Duration `json:"latency_ns"`
	TokensIn   int           `json:"tokens_in"`
	TokensOut  int           `json:"tokens_out"`
	Cost       float64       `json:"cost"`
	Outcome    Outcome       `json:"outcome"`
	Confidence float64       `json:"confidence"`
	// Accepted is true when the decision took this invocation's answer.
	Accepted bool `json:"accepted"`
	// Error says why the invocation failed or was refused.
	Error string `json:"error,omitempty"`
	// Class is the data class of the request ("": T1). The confidence of
	// a Sealed class's answer is not added to the statistics.
	Class DataClass `json:"data_class,omitempty"`
}

// ModelStats is what the tracker knows of one model.
type ModelStats struct {
	Model string `json:"model"`
	Tier  int    `json:"tier"`
	// Calls counts invocations sent (not refusals); Outcomes every record.
	Calls    int             `json:"calls"`
	OK       int             `json:"ok"`
	Accepted int             `json:"accepted"`
	Outcomes map[Outcome]int `json:"outcomes"`
	// Latency percentiles over the last latencyWindow calls sent.
	P50  time.Duration `json:"p50_ns"`
	P99  time.Duration `json:"p99_ns"`
	Mean time.Duration `json:"mean_ns"`
	// MeanConfidence of the answers that came, T3/T4 data's left out
	// (DataClass.Sealed).
	MeanConfidence float64 `json:"mean_confidence"`
	TokensIn       int     `json:"tokens_in"`
	TokensOut      int     `json:"tokens_out"`
	Cost           float64 `json:"cost"`
	CostToday      float64 `json:"cost_today"`
}

// latencyWindow is how many latencies per model the percentiles read.
const latencyWindow = 2048

// Tracker records every invocation and keeps per-model statistics and
// spend. It is safe for concurrent use; it keeps no goroutine.
type Tracker struct {
	mu     sync.Mutex
	now    func() time.Time
	models map[string]*modelRec
	day    string
	today  float64
}

type modelRec struct {
	s       ModelStats
	lat     []time.Duration // ring
	next    int
	sumLat  time.Duration
	sumConf float64
	confN   int // answers whose confidence is in sumConf (not Sealed data's)
	day     string
}

// NewTracker returns an empty tracker reading the clock now (nil:
// time.Now) for the day of the daily spend.
func NewTracker(now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{now: now, models: map[string]*modelRec{}}
}

// Record adds one invocation.
func (t *Tracker) Record(inv Invocation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	day := t.now().UTC().Format(time.DateOnly)
	if day != t.day {
		t.day, t.today = day, 0
	}
	m := t.models[inv.Model]
	if m == nil {
		m = &modelRec{s: ModelStats{Model: inv.Model, Tier: inv.Tier, Outcomes: map[Outcome]int{}}}
		t.models[inv.Model] = m
	}
	if m.day != day {
		m.day, m.s.CostToday = day, 0
	}
	m.s.Outcomes[inv.Outcome]++
	if inv.Accepted {
		m.s.Accepted++
	}
	if inv.Outcome == Refused {
		return
	}
	m.s.Calls++
	if inv.Outcome == OK {
		m.s.OK++
		if !inv.Class.Sealed() {
			m.sumConf += inv.Confidence
			m.confN++
		}
	}
	m.s.TokensIn += inv.TokensIn
	m.s.TokensOut += inv.TokensOut
	m.s.Cost += inv.Cost
	m.s.CostToday += inv.Cost
	t.today += inv.Cost
	m.sumLat += inv.Latency
	if len(m.lat) < latencyWindow {
		m.lat = append(m.lat, inv.Latency)
	} else {
		m.lat[m.next] = inv.Latency
		m.next = (m.next + 1) % latencyWindow
	}
}

// SpentToday is the cost of every invocation today (UTC).
func (t *Tracker) SpentToday() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.now().UTC().Format(time.DateOnly) != t.day {
		return 0
	}
	return t.today
}

// Stats returns every model's statistics, by tier then id.
func (t *Tracker) Stats() []ModelStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ModelStats, 0, len(t.models))
	day := t.now().UTC().Format(time.DateOnly)
	for _, m := range t.models {
		s := m.s
		if m.day != day {
			s.CostToday = 0 // spent on an earlier day
		}
		s.Outcomes = make(map[Outcome]int, len(m.s.Outcomes))
		for k, v := range m.s.Outcomes {
			s.Outcomes[k] = v
		}
		if len(m.lat) > 0 {
			l := slices.Clone(m.lat)
			sort.Slice(l, func(i, j int) bool { return l[i] < l[j] }) // sort.Slice: no generic sort of int64s in the binary (8 kB)
			s.P50 = l[(len(l)-1)/2]
			s.P99 = l[min(len(l)-1, (len(l)*99)/100)]
			s.Mean = m.sumLat / time.Duration(m.s.Calls)
		}
		if m.confN > 0 {
			s.MeanConfidence = m.sumConf / float64(m.confN)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tier != out[j].Tier {
			return out[i].Tier < out[j].Tier
		}
		return out[i].Model < out[j].Model
	})
	return out
}

// Recommendations reads the statistics and says what to change: a model
// that fails often, one whose answers are rarely taken, one whose p99 is
// far above its typical latency, and spend concentrated on a model whose
// answers a cheaper one matches.
func (t *Tracker) Recommendations(reg Registry) []string {
	var out []string
	byID := map[string]Model{}
	for _, m := range reg.Models {
		byID[m.ID] = m
	}
	for _, s := range t.Stats() {
		if s.Calls >= 10 {
			if fail := 1 - float64(s.OK)/float64(s.Calls); fail > 0.2 {
				out = append(out, fmt.Sprintf("%s fails %.0f %% of its calls (%v): check its instances, or lower its place in the routing", s.Model, 100*fail, s.Outcomes))
			}
			if m, ok := byID[s.Model]; ok && m.Latency > 0 && s.P99 > 3*m.Latency {
				out = append(out, fmt.Sprintf("%s p99 latency %v is over 3× its typical %v: raise typical_latency or add an instance", s.Model, s.P99.Round(time.Millisecond), m.Latency))
			}
			if s.OK > 0 && float64(s.Accepted)/float64(s.OK) < 0.2 && s.Tier > 1 {
				out = append(out, fmt.Sprintf("%s answered %d times but only %d answers were taken: its escalations rarely help", s.Model, s.OK, s.Accepted))
			}
		}
		if s.Cost > 0 && s.OK > 0 && s.MeanConfidence < 0.6 {
			out = append(out, fmt.Sprintf("%s costs %.4f with mean confidence %.2f: a local tier may do as well", s.Model, s.Cost, s.MeanConfidence))
		}
	}
	return out
}
