package metrics

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"hcp-edge/envelope"
)

// Namespace prefixes every family of the agent's own: hcp_edge_*.
const Namespace = "hcp_edge"

// Cause labels of hcp_edge_interlock_trips_total besides the envelope's
// trip kinds (envelope.Trips).
const (
	// CauseSafeState counts Interlock.SafeState: an e-stop on the control
	// socket, the shutdown policy safe_state, the engine's fallback when an
	// abort or a recovery cannot clean up.
	CauseSafeState = "safe_state"
	// CauseOther counts a trip whose kind this build does not know.
	CauseOther = "other"
)

// ReasonNone is the reason_code label of a gate decision that is not a
// rejection; ReasonOther that of a rejection with a code this build does
// not know.
const (
	ReasonNone  = "none"
	ReasonOther = "other"
)

// PollBuckets are the upper bounds, in seconds, of the poll latency
// histogram: a Modbus or serial read takes milliseconds, a timed-out one
// the interlock's read timeout (1 s by default).
var PollBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// Handler limits: at most this many scrapes are served at once, each
// within this time (scrapes come from a local Prometheus or node agent).
const (
	maxScrapesInFlight = 4
	scrapeTimeout      = 10 * time.Second
)

// Metrics is the agent's families and the Go runtime and process families
// read at each scrape. Its methods are safe for concurrent use.
type Metrics struct {
	poll     *histogramVec
	pollErrs *counterVec
	trips    *counterVec
	gate     *counterVec
	scrapes  *counterVec   // promhttp_metric_handler_requests_total, by code
	inFlight atomic.Int64  // scrapes being served
	slots    chan struct{} // maxScrapesInFlight tokens

	mu     sync.RWMutex
	pollBy map[string]pollObs // poller name → its children, so that ObservePoll allocates nothing

	watchMu sync.Mutex
	state   *State // set once by Watch
}

// pollObs are one poller's children of the poll families.
type pollObs struct {
	took *histogram
	errs *atomic.Uint64
}

// New returns the families, every known label combination of the counters
// present at zero.
func New() *Metrics {
	m := &Metrics{pollBy: map[string]pollObs{}, slots: make(chan struct{}, maxScrapesInFlight)}
	m.poll = newHistogramVec(Namespace+"_monitor_poll_duration_seconds",
		"How long each read of the trip monitor's pollers took, by instrument (the poller: furnace, gauge, flow.<gas>, switch.<name>, input.<name>); failed reads included.",
		"instrument", PollBuckets)
	m.pollErrs = newCounterVec(Namespace+"_monitor_poll_errors_total",
		"Reads of the trip monitor's pollers that failed (timeout, link or protocol error), by instrument.", "instrument")
	m.trips = newCounterVec(Namespace+"_interlock_trips_total",
		"Emergency procedures the interlock ran, by cause: a trip kind (over_temperature, gas_leak_detected, over_pressure, comms_loss, estop: the monitor's trips) or safe_state (Interlock.SafeState: e-stop on the control socket, shutdown policy, engine fallback).",
		"cause")
	m.gate = newCounterVec(Namespace+"_gate_decisions_total",
		"L3 gate decisions recorded in the audit log, by decision (accepted, pending_approval, rejected) and reason_code (the rejection's code; none otherwise).",
		"decision", "reason_code")
	m.scrapes = newCounterVec("promhttp_metric_handler_requests_total",
		"Total number of scrapes by HTTP status code.", "code")
	for _, t := range tripCauses() {
		m.trips.with(t)
	}
	m.gate.with(string(gateAccepted), ReasonNone)
	m.gate.with(string(gatePending), ReasonNone)
	for _, c := range reasonCodes() {
		m.gate.with(string(gateRejected), c)
	}
	for _, c := range []string{"200", "500", "503"} {
		m.scrapes.with(c)
	}
	return m
}

// tripCauses are the cause labels known in advance.
func tripCauses() []string {
	var out []string
	for _, t := range envelope.Trips() {
		out = append(out, string(t))
	}
	return append(out, CauseSafeState)
}

// Write writes every family in the Prometheus text format (version 0.0.4)
// to w: the agent's event families, the scrape-time State families whose
// read succeeds (a failed read leaves its family out and is logged), the
// handler's own, and the Go runtime and process families.
func (m *Metrics) Write(w io.Writer, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ew := newExpoWriter(w)
	m.poll.write(ew)
	m.pollErrs.write(ew)
	m.trips.write(ew)
	m.gate.write(ew)
	m.watchMu.Lock()
	st := m.state
	m.watchMu.Unlock()
	if st != nil {
		st.write(ew, log)
	}
	m.scrapes.write(ew)
	ew.single("promhttp_metric_handler_requests_in_flight", "Current number of scrapes being served.", "gauge",
		float64(m.inFlight.Load()))
	writeRuntime(ew)
	writeProcess(ew)
	return ew.flush()
}

// Handler serves the families in the Prometheus text format: a family
// that cannot be read is left out and logged, the others are served; at
// most 4 scrapes at once (503 beyond), each within 10 s.
func (m *Metrics) Handler(log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case m.slots <- struct{}{}:
			defer func() { <-m.slots }()
		default:
			m.scrapes.with("503").Add(1)
			http.Error(w, "too many scrapes in flight", http.StatusServiceUnavailable)
			return
		}
		m.inFlight.Add(1)
		defer m.inFlight.Add(-1)
		var buf bytes.Buffer
		if err := m.Write(&buf, log); err != nil {
			m.scrapes.with("500").Add(1)
			log.Warn("metrics scrape", "err", err)
			http.Error(w, "metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		m.scrapes.with("200").Add(1)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		_, _ = w.Write(buf.Bytes())
	})
	return http.TimeoutHandler(h, scrapeTimeout, "metrics: scrape timed out")
}

// ObservePoll records one poll of the trip monitor; its signature is
// envelope.MonitorOpts.OnPoll's. After the first poll of an instrument it
// allocates nothing.
func (m *Metrics) ObservePoll(name string, took time.Duration, err error) {
	m.mu.RLock()
	o, ok := m.pollBy[name]
	m.mu.RUnlock()
	if !ok {
		o = m.pollChildren(name)
	}
	o.took.Observe(took.Seconds())
	if err != nil {
		o.errs.Add(1)
	}
}

func (m *Metrics) pollChildren(name string) pollObs {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.pollBy[name]; ok {
		return o
	}
	o := pollObs{took: m.poll.with(name), errs: m.pollErrs.with(name)}
	m.pollBy[name] = o
	return o
}

// countTrip counts one emergency procedure.
func (m *Metrics) countTrip(cause string) {
	if !slices.Contains(tripCauses(), cause) {
		cause = CauseOther
	}
	m.trips.with(cause).Add(1)
}
