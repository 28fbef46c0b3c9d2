package metrics

import (
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hcp-edge/hcp-edge/envelope"
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

// Metrics is the agent's registry and its event families. Its methods are
// safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	poll     *prometheus.HistogramVec
	pollErrs *prometheus.CounterVec
	trips    *prometheus.CounterVec
	gate     *prometheus.CounterVec

	mu     sync.RWMutex
	pollBy map[string]pollObs // poller name → its children, so that ObservePoll allocates nothing

	watchMu sync.Mutex
	watched bool
}

// pollObs are one poller's children of the poll families.
type pollObs struct {
	took prometheus.Observer
	errs prometheus.Counter
}

// New returns the registry with the Go runtime and process collectors and
// the event families, every known label combination of the counters
// present at zero.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), pollBy: map[string]pollObs{}}
	m.poll = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "monitor", Name: "poll_duration_seconds",
		Help:    "How long each read of the trip monitor's pollers took, by instrument (the poller: furnace, gauge, flow.<gas>, switch.<name>, input.<name>); failed reads included.",
		Buckets: PollBuckets,
	}, []string{"instrument"})
	m.pollErrs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "monitor", Name: "poll_errors_total",
		Help: "Reads of the trip monitor's pollers that failed (timeout, link or protocol error), by instrument.",
	}, []string{"instrument"})
	m.trips = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "interlock", Name: "trips_total",
		Help: "Emergency procedures the interlock ran, by cause: a trip kind (over_temperature, gas_leak_detected, over_pressure, comms_loss, estop: the monitor's trips) or safe_state (Interlock.SafeState: e-stop on the control socket, shutdown policy, engine fallback).",
	}, []string{"cause"})
	m.gate = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "gate", Name: "decisions_total",
		Help: "L3 gate decisions recorded in the audit log, by decision (accepted, pending_approval, rejected) and reason_code (the rejection's code; none otherwise).",
	}, []string{"decision", "reason_code"})
	for _, t := range tripCauses() {
		m.trips.WithLabelValues(t)
	}
	m.gate.WithLabelValues(string(gateAccepted), ReasonNone)
	m.gate.WithLabelValues(string(gatePending), ReasonNone)
	for _, c := range reasonCodes() {
		m.gate.WithLabelValues(string(gateRejected), c)
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.poll, m.pollErrs, m.trips, m.gate)
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

// Gatherer is the registry, for tests and for a caller that serves it
// another way.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves the registry in the Prometheus exposition formats: a
// family that cannot be read is left out and logged, the others are
// served; at most 4 scrapes at once, each within 10 s.
func (m *Metrics) Handler(log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            promLogger{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxScrapesInFlight,
		Timeout:             scrapeTimeout,
	})
	return promhttp.InstrumentMetricHandler(m.reg, h)
}

// promLogger adapts slog to promhttp.Logger.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Warn("metrics scrape", "err", slog.AnyValue(v))
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
		o.errs.Inc()
	}
}

func (m *Metrics) pollChildren(name string) pollObs {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.pollBy[name]; ok {
		return o
	}
	o := pollObs{took: m.poll.WithLabelValues(name), errs: m.pollErrs.WithLabelValues(name)}
	m.pollBy[name] = o
	return o
}

// countTrip counts one emergency procedure.
func (m *Metrics) countTrip(cause string) {
	if !slices.Contains(tripCauses(), cause) {
		cause = CauseOther
	}
	m.trips.WithLabelValues(cause).Inc()
}
