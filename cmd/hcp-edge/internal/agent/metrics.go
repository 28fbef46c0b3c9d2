package agent

import (
	"context"
	"log/slog"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/metrics"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hcp-edge/internal/uplink"
	"hcp-edge/envelope"
	"hcp-edge/internal/diskspace"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
)

// agentMetrics is the daemon's Prometheus endpoint (agent.metrics_listen,
// docs/METRICS.md). A nil *agentMetrics — no endpoint configured — passes
// everything through and measures nothing.
//
// Start order: newAgentMetrics right after the state file opens (the
// interlock's auditor, the monitor's poll hook and the gate's recorder are
// wrapped as they are built), start after the control socket and the
// uplink. Stop: close, before the engine and the state file close.
type agentMetrics struct {
	m   *metrics.Metrics
	st  *store.Store
	log *slog.Logger
	srv *metrics.Server
}

// newAgentMetrics returns the metrics of the daemon over st, or nil when
// agent.metrics_listen is empty.
func newAgentMetrics(f rigconfig.File, st *store.Store, log *slog.Logger) *agentMetrics {
	if f.Agent.MetricsListen == "" {
		return nil
	}
	return &agentMetrics{m: metrics.New(), st: st, log: log.With("component", "metrics")}
}

// auditor wraps the interlock's auditor to count trips and safe states.
func (a *agentMetrics) auditor(next envelope.Auditor) envelope.Auditor {
	if a == nil {
		return next
	}
	return a.m.Auditor(next)
}

// onPoll is the monitor's poll hook (envelope.MonitorOpts.OnPoll), nil
// without metrics.
func (a *agentMetrics) onPoll() func(string, time.Duration, error) {
	if a == nil {
		return nil
	}
	return a.m.ObservePoll
}

// gateRecorder wraps the gate's recorder to count decisions by reason.
func (a *agentMetrics) gateRecorder(next gate.Recorder) gate.Recorder {
	if a == nil {
		return next
	}
	return a.m.Recorder(next)
}

// start registers the scrape-time families (latch, sessions, tools, models, uplink) and
// serves them on agent.metrics_listen.
func (a *agentMetrics) start(f rigconfig.File, il *envelope.Interlock, iv *envelope.Invoker, up *uplink.Uplink, disk *diskspace.Watcher, models *modelAnalyzer) error {
	if a == nil {
		return nil
	}
	s := metrics.State{
		Latched:  func() bool { l, _ := il.Latched(); return l },
		Sessions: a.sessions,
		Tools:    iv.Stats,
	}
	if models != nil {
		s.Models = models.metrics
	}
	if up != nil {
		s.Uplink = up.MetricsState
	}
	if disk != nil {
		s.Disk = diskMetrics(disk)
	}
	if err := a.m.Watch(s); err != nil {
		return err
	}
	srv, err := metrics.Serve(f.Agent.MetricsListen, a.m.Handler(a.log), a.log)
	if err != nil {
		return err
	}
	a.srv = srv
	a.log.Info("metrics endpoint serving", "url", "http://"+srv.Addr().String()+"/metrics")
	return nil
}

// sessions counts the state file's sessions by state.
func (a *agentMetrics) sessions(ctx context.Context) (map[lifecycle.State]int, error) {
	ss, err := a.st.Sessions(ctx, false)
	if err != nil {
		return nil, err
	}
	n := make(map[lifecycle.State]int, len(lifecycle.States()))
	for _, s := range ss {
		n[s.State]++
	}
	return n, nil
}

// close stops the endpoint (scrapes in progress finish within ctx) and
// forgets the store. Safe to call more than once.
func (a *agentMetrics) close(ctx context.Context) error {
	if a == nil {
		return nil
	}
	if a.srv == nil {
		return nil
	}
	return a.srv.Shutdown(ctx)
}
