package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hcp-edge/hcp-edge/session/lifecycle"
)

// State holds what is read at every scrape. A nil function leaves its
// families out of the exposition.
type State struct {
	// Latched reports whether the interlock is latched
	// (envelope.Interlock.Latched).
	Latched func() bool
	// Sessions counts the sessions of the state file by L2 state, within
	// ctx (StateTimeout).
	Sessions func(ctx context.Context) (map[lifecycle.State]int, error)
	// Uplink reads the uplink (broker connection and outbox); nil when no
	// broker is configured.
	Uplink func() Uplink
}

// Uplink is the uplink at a scrape (transport/amqp.Supervisor.State).
type Uplink struct {
	Connected  bool
	Blocked    bool   // the broker blocked publishing (resource alarm)
	Reconnects uint64 // successful connects after the first
	Backlog    int    // messages waiting in the outbox
	Telemetry  int    // of which telemetry class
	OldestAge  time.Duration
}

// StateTimeout bounds the reads of State at one scrape.
const StateTimeout = 5 * time.Second

// Watch registers the scrape-time families read from s. It may be called
// once.
func (m *Metrics) Watch(s State) error {
	m.watchMu.Lock()
	defer m.watchMu.Unlock()
	if m.watched {
		return errors.New("metrics: Watch called twice")
	}
	if err := m.reg.Register(newStateCollector(s)); err != nil {
		return err
	}
	m.watched = true
	return nil
}

// stateCollector turns a State into const metrics at every scrape.
type stateCollector struct {
	s                              State
	latched, sessions              *prometheus.Desc
	connected, blocked, reconnects *prometheus.Desc
	backlog, telemetry, oldest     *prometheus.Desc
}

func newStateCollector(s State) *stateCollector {
	d := func(sub, name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, sub, name), help, labels, nil)
	}
	return &stateCollector{s: s,
		latched: d("interlock", "latched", "1 while the interlock is latched (by a trip or an e-stop; only an operator's reset clears it), else 0."),
		sessions: d("", "sessions", "Sessions in the state file by L2 state (PENDING, RUNNING, PAUSED, ABORTING and the terminal REJECTED, ABORTED, COMPLETED, FAILED: a closed session stays in the state file).",
			"state"),
		connected:  d("broker", "connected", "1 while the uplink is connected to the broker (topology declared), else 0."),
		blocked:    d("broker", "blocked", "1 while the broker blocks the uplink's publishing (a resource alarm), else 0."),
		reconnects: d("broker", "reconnects_total", "Successful connections to the broker after the first since the agent started."),
		backlog:    d("outbox", "messages", "Messages waiting in the uplink's durable outbox (every class)."),
		telemetry:  d("outbox", "telemetry_messages", "Messages waiting in the uplink's outbox that are telemetry (dropped first when the bound is reached)."),
		oldest:     d("outbox", "oldest_message_age_seconds", "Age of the oldest message waiting in the uplink's outbox; 0 when it is empty."),
	}
}

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.s.Latched != nil {
		ch <- c.latched
	}
	if c.s.Sessions != nil {
		ch <- c.sessions
	}
	if c.s.Uplink != nil {
		for _, d := range []*prometheus.Desc{c.connected, c.blocked, c.reconnects, c.backlog, c.telemetry, c.oldest} {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if c.s.Latched != nil {
		gauge(c.latched, b2f(c.s.Latched()))
	}
	if c.s.Sessions != nil {
		ctx, cancel := context.WithTimeout(context.Background(), StateTimeout)
		n, err := c.s.Sessions(ctx)
		cancel()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.sessions, err)
		} else {
			for _, st := range lifecycle.States() {
				gauge(c.sessions, float64(n[st]), string(st))
			}
		}
	}
	if c.s.Uplink != nil {
		u := c.s.Uplink()
		gauge(c.connected, b2f(u.Connected))
		gauge(c.blocked, b2f(u.Blocked))
		ch <- prometheus.MustNewConstMetric(c.reconnects, prometheus.CounterValue, float64(u.Reconnects))
		gauge(c.backlog, float64(u.Backlog))
		gauge(c.telemetry, float64(u.Telemetry))
		gauge(c.oldest, u.OldestAge.Seconds())
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
