package metrics

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/session/lifecycle"
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
	// Tools reads the per-tool statistics of the tool pipeline
	// (envelope.Invoker.Stats).
	Tools func() []envelope.ToolStats
	// Models reads the model router's tracker and circuits.
	Models func() Models
	// Disk reads the state directory's free-space alarm
	// (internal/diskspace.Watcher.State).
	Disk func() Disk
}

// Disk is the state directory's free space at a scrape.
type Disk struct {
	Low           bool   // the alarm: command intake paused
	Free          uint64 // bytes available
	Watermark     uint64 // bytes
	ReserveHeld   bool   // the reserve file is allocated
	Alarms        uint64 // alarms raised since start
	WriteFailures uint64 // local write failures of the state file since start
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

// Watch adds the scrape-time families read from s. It may be called once.
func (m *Metrics) Watch(s State) error {
	m.watchMu.Lock()
	defer m.watchMu.Unlock()
	if m.state != nil {
		return errors.New("metrics: Watch called twice")
	}
	m.state = &s
	return nil
}

// write writes the families of s whose read succeeds.
func (s *State) write(w *expoWriter, log *slog.Logger) {
	if s.Latched != nil {
		w.single(Namespace+"_interlock_latched", "1 while the interlock is latched (by a trip or an e-stop; only an operator's reset clears it), else 0.",
			"gauge", b2f(s.Latched()))
	}
	if s.Sessions != nil {
		ctx, cancel := context.WithTimeout(context.Background(), StateTimeout)
		n, err := s.Sessions(ctx)
		cancel()
		if err != nil {
			log.Warn("metrics scrape: sessions left out", "err", err)
		} else {
			name := Namespace + "_sessions"
			w.header(name, "Sessions in the state file by L2 state (PENDING, RUNNING, PAUSED, ABORTING and the terminal REJECTED, ABORTED, COMPLETED, FAILED: a closed session stays in the state file).", "gauge")
			labels := []string{"state"}
			for _, st := range lifecycle.States() {
				w.sample(name, "", labels, []string{string(st)}, "", "", float64(n[st]))
			}
		}
	}
	if s.Tools != nil {
		writeTools(w, s.Tools())
	}
	if s.Models != nil {
		writeModels(w, s.Models())
	}
	if s.Disk != nil {
		d := s.Disk()
		w.single(Namespace+"_disk_low", "1 while the state directory's free space is below agent.disk.watermark_mib (or a write failed for want of space): command intake is paused, commands wait in their queue; else 0.", "gauge", b2f(d.Low))
		w.single(Namespace+"_disk_free_bytes", "Free space of the state directory's file system.", "gauge", float64(d.Free))
		w.single(Namespace+"_disk_watermark_bytes", "The free-space watermark below which command intake pauses.", "gauge", float64(d.Watermark))
		w.single(Namespace+"_disk_reserve_held", "1 while the disk reserve for the terminal steps of running sessions is allocated, else 0.", "gauge", b2f(d.ReserveHeld))
		w.single(Namespace+"_disk_alarms_total", "Free-space alarms raised since the agent started.", "counter", float64(d.Alarms))
		w.single(Namespace+"_disk_write_failures_total", "Writes of the state file that failed for want of space (or an I/O error) since the agent started.", "counter", float64(d.WriteFailures))
	}
	if s.Uplink != nil {
		u := s.Uplink()
		w.single(Namespace+"_broker_connected", "1 while the uplink is connected to the broker (topology declared), else 0.", "gauge", b2f(u.Connected))
		w.single(Namespace+"_broker_blocked", "1 while the broker blocks the uplink's publishing (a resource alarm), else 0.", "gauge", b2f(u.Blocked))
		w.single(Namespace+"_broker_reconnects_total", "Successful connections to the broker after the first since the agent started.", "counter", float64(u.Reconnects))
		w.single(Namespace+"_outbox_messages", "Messages waiting in the uplink's durable outbox (every class).", "gauge", float64(u.Backlog))
		w.single(Namespace+"_outbox_telemetry_messages", "Messages waiting in the uplink's outbox that are telemetry (dropped first when the bound is reached).", "gauge", float64(u.Telemetry))
		w.single(Namespace+"_outbox_oldest_message_age_seconds", "Age of the oldest message waiting in the uplink's outbox; 0 when it is empty.", "gauge", u.OldestAge.Seconds())
	}
}

// writeTools writes the tool pipeline's families: calls, refusals by rule,
// failures, calls toward the safe state, and the latency as a summary
// (p50 and p99 from the Invoker's fixed histogram).
func writeTools(w *expoWriter, stats []envelope.ToolStats) {
	labels := []string{"tool", "version"}
	counter := func(name, help string, v func(envelope.ToolStats) uint64) {
		w.header(name, help, "counter")
		for _, s := range stats {
			w.sample(name, "", labels, []string{s.Tool.Name, s.Tool.Version}, "", "", float64(v(s)))
		}
	}
	counter(Namespace+"_tool_calls_total", "Calls of a catalog tool through the tool pipeline (every action of a recipe is one).",
		func(s envelope.ToolStats) uint64 { return s.Calls })
	counter(Namespace+"_tool_failures_total", "Calls of a tool that failed while executing (instrument error, timeout, read-back, output).",
		func(s envelope.ToolStats) uint64 { return s.Failed })
	counter(Namespace+"_tool_toward_safe_calls_total", "Calls of a tool that moved an output toward its safe state (never refused for scope or rate).",
		func(s envelope.ToolStats) uint64 { return s.TowardSafe })
	counter(Namespace+"_tool_fresh_waits_total", "Calls whose action waited, within the instruments' bound, for a fresh reading before the interlock judged it (late, not stale).",
		func(s envelope.ToolStats) uint64 { return s.FreshWaits })
	name := Namespace + "_tool_refusals_total"
	w.header(name, "Calls of a tool refused by a rule (an envelope rule, permission_required, unauthorized, rate_limit, invalid_input, unknown_tool); nothing reached an instrument.", "counter")
	rl := []string{"tool", "version", "rule"}
	for _, s := range stats {
		rules := make([]string, 0, len(s.RefusedBy))
		for r := range s.RefusedBy {
			rules = append(rules, string(r))
		}
		slices.Sort(rules)
		for _, r := range rules {
			w.sample(name, "", rl, []string{s.Tool.Name, s.Tool.Version, r}, "", "", float64(s.RefusedBy[envelope.Rule(r)]))
		}
	}
	name = Namespace + "_tool_latency_seconds"
	w.header(name, "Latency of a tool call, from lookup to the validated output; quantiles are the upper bounds of fixed histogram buckets (at most a third over).", "summary")
	for _, s := range stats {
		v := []string{s.Tool.Name, s.Tool.Version}
		w.sample(name, "", labels, v, "quantile", "0.5", s.P50().Seconds())
		w.sample(name, "", labels, v, "quantile", "0.99", s.P99().Seconds())
		w.sample(name, "_sum", labels, v, "", "", s.TotalLatency.Seconds())
		w.sample(name, "_count", labels, v, "", "", float64(s.Calls))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
