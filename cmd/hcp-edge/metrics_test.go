package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// withMetrics sets agent.metrics_listen in e's configuration to a free
// loopback port and returns the endpoint's URL.
func withMetrics(t *testing.T, e *env) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	setAgentKey(t, e.cfg, "metrics_listen: "+addr)
	return "http://" + addr + "/metrics"
}

// setAgentKey adds line to the agent section of the configuration file.
func setAgentKey(t *testing.T, path, line string) {
	t.Helper()
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "\nagent:\n") {
		t.Fatal("fixture: no agent section in the configuration")
	}
	cfg = []byte(strings.Replace(string(cfg), "\nagent:\n", "\nagent:\n  "+line+"\n", 1))
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
}

// families is one parsed scrape.
type families map[string]*dto.MetricFamily

// scrapeMetrics GETs url until the endpoint answers (it starts after the
// control socket; hang guard) and parses the text exposition.
func scrapeMetrics(t *testing.T, url string) families {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		resp, err := http.Get(url)
		if err == nil {
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", url, resp.Status)
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := p.TextToMetricFamilies(resp.Body)
			if err != nil {
				t.Fatalf("parse %s: %v", url, err)
			}
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric returns the sample of family name with exactly labels.
func (f families) metric(t *testing.T, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	fam, ok := f[name]
	if !ok {
		t.Fatalf("family %s missing", name)
	}
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		if fmt.Sprint(have) == fmt.Sprint(labels) { // maps print sorted by key
			return m
		}
	}
	t.Fatalf("%s%v missing", name, labels)
	return nil
}

// value is a counter's or gauge's value.
func (f families) value(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	m := f.metric(t, name, labels)
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", name)
	return 0
}

// localTask writes a task_submit of the local operator to a file.
func localTask(t *testing.T, capab, inputs string) string {
	t.Helper()
	env, err := wire.NewEnvelope(nil, &wire.TaskSubmit{Capability: capab, CapabilityVersion: "1.x", CallerID: rigconfig.LocalUser,
		Intent: "metrics test", Inputs: json.RawMessage(inputs)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), capab+".json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitLatched polls status --json until the latch is as wanted (hang guard).
func (e *env) waitLatched(want bool) {
	e.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for e.statusJSON().Latched != want {
		if time.Now().After(deadline) {
			e.t.Fatalf("latch never %t", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMetricsEndpoint: the daemon with agent.metrics_listen serves
// /metrics (parsed with expfmt): the Go and process collectors, the poll
// latency of every monitored instrument, the gate decisions of a local
// rig-status session and of a rejected task, the sessions by state as
// sessions --all lists them, a hardware e-stop trip (cause estop) and an
// e-stop on the control socket (cause safe_state) with the latch; no
// uplink families without a broker; the endpoint stops with the daemon.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the rig and the daemon")
	}
	e := newEnv(t, nil)
	url := withMetrics(t, e)
	e.start()
	// The poll families have samples once every instrument has been polled
	// (the daemon answers its control socket before that on a loaded
	// machine): scrape until they do, within the hang guard.
	fams := scrapeMetrics(t, url)
	for deadline := time.Now().Add(hangGuard); fams["hcp_edge_monitor_poll_duration_seconds"] == nil && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		fams = scrapeMetrics(t, url)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes",
		"process_cpu_seconds_total", "hcp_edge_monitor_poll_duration_seconds", "hcp_edge_monitor_poll_errors_total",
		"hcp_edge_interlock_trips_total", "hcp_edge_interlock_latched", "hcp_edge_sessions", "hcp_edge_gate_decisions_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "hcp_edge_broker_") || strings.HasPrefix(name, "hcp_edge_outbox_") {
			t.Errorf("uplink family %s served without a broker", name)
		}
	}

	// A local rig-status session completes; an unknown capability is rejected.
	if r := e.mustCLI("submit", localTask(t, executor.RigStatusName, `{}`), "--watch"); decodeFinal(t, r).Type != wire.TypeTaskCompleted {
		t.Fatalf("rig-status did not complete:\n%s", r.stdout)
	}
	r := e.cli("submit", localTask(t, "no-such-capability", `{}`), "--watch")
	if r.code != exitFailure || !strings.Contains(r.stdout, "invalid_input") {
		t.Fatalf("unknown capability: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// The e-stop input trips the monitor (cause estop); released and reset.
	if err := e.p.Inject(plant.FaultEstop, ""); err != nil {
		t.Fatal(err)
	}
	e.waitLatched(true)
	// The monitor latches at once and counts when the procedure's halts are
	// done and it records the trip.
	deadline := time.Now().Add(hangGuard)
	for {
		fams = scrapeMetrics(t, url)
		v := fams.value(t, "hcp_edge_interlock_trips_total", map[string]string{"cause": "estop"})
		if v == 1 {
			break
		}
		if v > 1 || time.Now().After(deadline) {
			t.Fatalf("trips{cause=estop} = %v after the e-stop input, want 1", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := fams.value(t, "hcp_edge_interlock_latched", nil); v != 1 {
		t.Fatalf("latched = %v after a trip", v)
	}
	if err := e.p.Clear(plant.FaultEstop, ""); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(hangGuard)
	for e.statusJSON().Values["input."+rigconfig.InputEStop] != false {
		if time.Now().After(deadline) {
			t.Fatal("e-stop input never released")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.mustCLI("reset", "--operator", "tess")
	if v := scrapeMetrics(t, url).value(t, "hcp_edge_interlock_latched", nil); v != 0 {
		t.Fatalf("latched = %v after the reset", v)
	}
	// The e-stop of the control socket (Interlock.SafeState).
	e.mustCLI("estop", "--operator", "tess")

	fams = scrapeMetrics(t, url)
	for _, tr := range envelope.Trips() {
		want := 0.0
		if tr == envelope.TripEStop {
			want = 1
		}
		if v := fams.value(t, "hcp_edge_interlock_trips_total", map[string]string{"cause": string(tr)}); v != want {
			t.Errorf("trips{cause=%s} = %v, want %v", tr, v, want)
		}
	}
	if v := fams.value(t, "hcp_edge_interlock_trips_total", map[string]string{"cause": "safe_state"}); v != 1 {
		t.Errorf("trips{cause=safe_state} = %v after the e-stop, want 1", v)
	}
	if v := fams.value(t, "hcp_edge_interlock_latched", nil); v != 1 {
		t.Errorf("latched = %v after the e-stop", v)
	}
	if v := fams.value(t, "hcp_edge_gate_decisions_total", map[string]string{"decision": "accepted", "reason_code": "none"}); v != 1 {
		t.Errorf("gate accepted = %v, want 1 (the rig-status session)", v)
	}
	if v := fams.value(t, "hcp_edge_gate_decisions_total", map[string]string{"decision": "rejected", "reason_code": "invalid_input"}); v != 1 {
		t.Errorf("gate rejected{invalid_input} = %v, want 1", v)
	}
	byState := map[string]float64{}
	for _, s := range e.sessionsJSON() {
		byState[s.State]++
	}
	if byState[string(lifecycle.Completed)] != 1 {
		t.Errorf("sessions --all: %v, want one COMPLETED (rig-status)", byState)
	}
	for _, st := range lifecycle.States() {
		if v := fams.value(t, "hcp_edge_sessions", map[string]string{"state": string(st)}); v != byState[string(st)] {
			t.Errorf("sessions{state=%s} = %v, sessions --all lists %v", st, v, byState[string(st)])
		}
	}
	polled := 0
	for _, m := range fams["hcp_edge_monitor_poll_duration_seconds"].GetMetric() {
		h := m.GetHistogram()
		name := m.GetLabel()[0].GetValue()
		if h.GetSampleCount() == 0 || !(h.GetSampleSum() > 0) {
			t.Errorf("poll histogram of %s: count %d sum %v", name, h.GetSampleCount(), h.GetSampleSum())
		}
		polled++
	}
	st := e.statusJSON()
	if polled != len(st.Healthy) {
		t.Errorf("poll histogram for %d instruments, the monitor polls %d (%v)", polled, len(st.Healthy), st.Healthy)
	}
	for inst := range st.Healthy {
		fams.metric(t, "hcp_edge_monitor_poll_duration_seconds", map[string]string{"instrument": inst})
		fams.metric(t, "hcp_edge_monitor_poll_errors_total", map[string]string{"instrument": inst})
	}
	fh := fams.metric(t, "hcp_edge_monitor_poll_duration_seconds", map[string]string{"instrument": "furnace"}).GetHistogram()
	t.Logf("furnace: %d polls, mean %.2f ms", fh.GetSampleCount(), 1000*fh.GetSampleSum()/float64(fh.GetSampleCount()))

	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
	if !strings.Contains(e.logs.String(), "metrics endpoint serving") {
		t.Fatalf("no metrics start in the log:\n%s", e.logs)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("the endpoint answers after the daemon stopped")
	}
}

// TestMetricsUplink: with a broker, the uplink's families: connected, the
// outbox drained after a rig-status session through the broker, which
// counts as a gate decision and a COMPLETED session.
func TestMetricsUplink(t *testing.T) {
	t.Parallel()
	b := newBrokerEnv(t)
	setGate(t, b)
	url := withMetrics(t, b.env)
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	c := b.client(nil)
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.RigStatusName, CapabilityVersion: "1.x",
		Intent: "metrics of the uplink", Inputs: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, task, hangGuard)
	if fin := msgs[len(msgs)-1]; fin.Type != wire.TypeTaskCompleted {
		t.Fatalf("final %s", fin.Type)
	}
	b.waitUplink("drained", func(u *uplinkStatus) bool { return u.Backlog == 0 })
	fams := scrapeMetrics(t, url)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"hcp_edge_broker_connected", nil, 1},
		{"hcp_edge_broker_blocked", nil, 0},
		{"hcp_edge_outbox_messages", nil, 0},
		{"hcp_edge_outbox_telemetry_messages", nil, 0},
		{"hcp_edge_outbox_oldest_message_age_seconds", nil, 0},
		{"hcp_edge_gate_decisions_total", map[string]string{"decision": "accepted", "reason_code": "none"}, 1},
		{"hcp_edge_sessions", map[string]string{"state": "COMPLETED"}, 1},
	} {
		if v := fams.value(t, c.name, c.labels); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	fams.metric(t, "hcp_edge_broker_reconnects_total", nil)
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// setGate replaces the gate section (the last of the configuration) with
// one that maps harness-alpha-001's login to b's caller id alone: sim.yaml
// maps the login too, and newBrokerEnv's inserted section repeats its keys.
func setGate(t *testing.T, b *brokerEnv) {
	t.Helper()
	data, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, ok := strings.Cut(string(data), "\ngate:\n")
	if !ok {
		t.Fatal("fixture: no gate section in the configuration")
	}
	cfg += fmt.Sprintf(`
gate:
  broker_users:
    %s: %s
  callers:
    %s:
      capabilities: [rig-status]
      max_risk_level: R3
      max_data_classification: T2
  unattended: null
`, amqptest.AlphaUser, b.callerID, b.callerID)
	if err := os.WriteFile(b.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsListenLoopbackOnly: a metrics_listen beyond loopback is
// refused by config check and by run (exit 2, naming the key).
func TestMetricsListenLoopbackOnly(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "hcp-edge.yaml")
	if err := os.WriteFile(cfg, configs.SimYAML, 0o600); err != nil {
		t.Fatal(err)
	}
	setAgentKey(t, cfg, "metrics_listen: 0.0.0.0:9464")
	for _, args := range [][]string{{"config", "check", cfg}, {"run", "--config", cfg}} {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		cancel()
		xe, ok := err.(*exec.ExitError)
		if !ok || xe.ExitCode() != exitUsage || !strings.Contains(string(out), "agent.metrics_listen") ||
			!strings.Contains(string(out), "not a loopback address") {
			t.Fatalf("%v: %v, want exit %d naming agent.metrics_listen\n%s", args, err, exitUsage, out)
		}
	}
}
