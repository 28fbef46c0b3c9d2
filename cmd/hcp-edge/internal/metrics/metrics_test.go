package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"hcp-edge/cmd/hcp-edge/internal/metrics"
	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/capability"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// scrape GETs url and parses the text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
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

// sample returns the metric of family name whose labels include want.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("family %s missing", name)
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s%v missing", name, want)
	return nil
}

// value is a counter's or gauge's value.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	m := sample(t, fams, name, want)
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", name)
	return 0
}

type auditFunc func(context.Context, envelope.Entry) error

func (f auditFunc) Record(ctx context.Context, e envelope.Entry) error { return f(ctx, e) }

// decide runs one task_submit through g as user.
func decide(t *testing.T, g *gate.Gate, user, capab string) gate.Decision {
	t.Helper()
	sub := &wire.TaskSubmit{Capability: capab, CallerID: "alpha", Intent: "metrics test", Inputs: json.RawMessage(`{}`)}
	env, err := wire.NewEnvelope(nil, sub, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d, err := g.Decide(context.Background(), gate.Request{MessageID: env.MessageID.String(), BrokerUser: user, Submit: sub})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestEndpoint: every family over a real socket, parsed with expfmt: the
// poll histogram, trips counted through the interlock's auditor seam, gate
// decisions counted through a real gate over a real audit log, and the
// scrape-time state.
func TestEndpoint(t *testing.T) {
	m := metrics.New()

	m.ObservePoll("furnace", 3*time.Millisecond, nil)
	m.ObservePoll("furnace", 1100*time.Millisecond, device.ErrTimeout)
	m.ObservePoll("gauge", 20*time.Millisecond, nil)

	var recorded []envelope.Decision
	fail := errors.New("disk full")
	a := m.Auditor(auditFunc(func(_ context.Context, e envelope.Entry) error {
		recorded = append(recorded, e.Decision)
		if e.Reason == "fail" {
			return fail
		}
		return nil
	}))
	for _, e := range []envelope.Entry{
		{Decision: envelope.DecisionTripped, Trip: envelope.TripOverTemperature},
		{Decision: envelope.DecisionTripped, Trip: envelope.TripOverTemperature, Reason: "fail"},
		{Decision: envelope.DecisionTripped, Trip: envelope.Trip("made_up")},
		{Decision: envelope.DecisionHalted, Reason: "estop by tess"},
		{Decision: envelope.DecisionAccepted},
		{Decision: envelope.DecisionReset},
	} {
		if err := a.Record(context.Background(), e); (err != nil) != (e.Reason == "fail") || (err != nil && !errors.Is(err, fail)) {
			t.Fatalf("Record %+v: %v", e, err)
		}
	}
	if len(recorded) != 6 {
		t.Fatalf("the wrapped auditor got %d entries, want every one (6)", len(recorded))
	}

	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg, err := capability.LoadDir("../../../../configs/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	cfg := gate.DefaultConfig()
	cfg.Unattended = nil
	cfg.BrokerUsers = map[string]string{"alpha": "alpha"}
	cfg.Callers = map[string]gate.CallerACL{"alpha": {Capabilities: []string{"rig-status"}, MaxRiskLevel: capability.R3,
		MaxDataClassification: gate.T2}}
	g, err := gate.New(cfg, reg, m.Recorder(st.Audit()), gate.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, capab string
		want        gate.Outcome
	}{
		{"alpha", "rig-status", gate.Accepted},
		{"alpha", "rig-status", gate.Accepted},
		{"ghost", "rig-status", gate.Rejected},    // unauthorized
		{"alpha", "leak-check", gate.Rejected},    // forbidden
		{"alpha", "no-such-thing", gate.Rejected}, // invalid_input
	} {
		if d := decide(t, g, c.user, c.capab); d.Outcome != c.want {
			t.Fatalf("%s by %s: %s, want %s", c.capab, c.user, d.Outcome, c.want)
		}
	}
	if n, err := st.Audit().Verify(context.Background()); err != nil || n != 5 {
		t.Fatalf("audit log through the recorder: %d entries, %v; want 5", n, err)
	}
	// In the engine a decision is recorded in the store transaction of its
	// submit: one whose transaction rolls back is not counted, one whose
	// transaction commits is (accepted: 2 above + 1 here).
	for _, commit := range []bool{false, true} {
		sub := &wire.TaskSubmit{Capability: "rig-status", CallerID: "alpha", Intent: "metrics test", Inputs: json.RawMessage(`{}`)}
		env, err := wire.NewEnvelope(nil, sub, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		rollback := errors.New("rolled back")
		err = st.Update(context.Background(), func(w *store.Tx) error {
			d, err := g.DecideWith(context.Background(), gate.Request{MessageID: env.MessageID.String(), BrokerUser: "alpha", Submit: sub}, m.Recorder(w))
			if err != nil || d.Outcome != gate.Accepted {
				t.Fatalf("decision in a transaction: %+v, %v", d, err)
			}
			if !commit {
				return rollback
			}
			return nil
		})
		if commit != (err == nil) {
			t.Fatalf("commit %v: %v", commit, err)
		}
	}

	if err := m.Watch(metrics.State{
		Latched: func() bool { return true },
		Sessions: func(context.Context) (map[lifecycle.State]int, error) {
			return map[lifecycle.State]int{lifecycle.Running: 2, lifecycle.Completed: 5}, nil
		},
		Uplink: func() metrics.Uplink {
			return metrics.Uplink{Connected: true, Reconnects: 1, Backlog: 3, Telemetry: 1, OldestAge: 1500 * time.Millisecond}
		},
		Disk: func() metrics.Disk {
			return metrics.Disk{Low: true, Free: 3 << 20, Watermark: 4 << 20, ReserveHeld: false, Alarms: 1, WriteFailures: 7}
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.Watch(metrics.State{}); err == nil {
		t.Fatal("a second Watch was accepted")
	}

	srv, err := metrics.Serve("127.0.0.1:0", m.Handler(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + srv.Addr().String() + "/metrics"
	fams := scrape(t, url)

	h := sample(t, fams, "hcp_edge_monitor_poll_duration_seconds", map[string]string{"instrument": "furnace"}).GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() < 1.1 || h.GetSampleSum() > 1.11 {
		t.Fatalf("furnace poll histogram: count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.GetBucket() {
		want := uint64(0)
		switch {
		case b.GetUpperBound() >= 2.5:
			want = 2
		case b.GetUpperBound() >= 0.005:
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Fatalf("furnace bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"hcp_edge_monitor_poll_errors_total", map[string]string{"instrument": "furnace"}, 1},
		{"hcp_edge_monitor_poll_errors_total", map[string]string{"instrument": "gauge"}, 0},
		{"hcp_edge_interlock_trips_total", map[string]string{"cause": "over_temperature"}, 2},
		{"hcp_edge_interlock_trips_total", map[string]string{"cause": "other"}, 1},
		{"hcp_edge_interlock_trips_total", map[string]string{"cause": "safe_state"}, 1},
		{"hcp_edge_interlock_trips_total", map[string]string{"cause": "gas_leak_detected"}, 0},
		{"hcp_edge_interlock_latched", nil, 1},
		{"hcp_edge_gate_decisions_total", map[string]string{"decision": "accepted", "reason_code": "none"}, 3},
		{"hcp_edge_gate_decisions_total", map[string]string{"decision": "pending_approval", "reason_code": "none"}, 0},
		{"hcp_edge_gate_decisions_total", map[string]string{"decision": "rejected", "reason_code": "unauthorized"}, 1},
		{"hcp_edge_gate_decisions_total", map[string]string{"decision": "rejected", "reason_code": "forbidden"}, 1},
		{"hcp_edge_gate_decisions_total", map[string]string{"decision": "rejected", "reason_code": "invalid_input"}, 1},
		{"hcp_edge_sessions", map[string]string{"state": "RUNNING"}, 2},
		{"hcp_edge_sessions", map[string]string{"state": "COMPLETED"}, 5},
		{"hcp_edge_sessions", map[string]string{"state": "FAILED"}, 0},
		{"hcp_edge_broker_connected", nil, 1},
		{"hcp_edge_broker_blocked", nil, 0},
		{"hcp_edge_broker_reconnects_total", nil, 1},
		{"hcp_edge_outbox_messages", nil, 3},
		{"hcp_edge_outbox_telemetry_messages", nil, 1},
		{"hcp_edge_outbox_oldest_message_age_seconds", nil, 1.5},
		{"hcp_edge_disk_low", nil, 1},
		{"hcp_edge_disk_free_bytes", nil, 3 << 20},
		{"hcp_edge_disk_watermark_bytes", nil, 4 << 20},
		{"hcp_edge_disk_reserve_held", nil, 0},
		{"hcp_edge_disk_alarms_total", nil, 1},
		{"hcp_edge_disk_write_failures_total", nil, 7},
	}
	for _, c := range checks {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(fams["hcp_edge_sessions"].GetMetric()); n != len(lifecycle.States()) {
		t.Errorf("hcp_edge_sessions has %d series, want one per state (%d)", n, len(lifecycle.States()))
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "promhttp_metric_handler_requests_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
	for name, f := range fams {
		if strings.HasPrefix(name, "hcp_edge_") && f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
	}

	if resp, err := http.Get("http://" + srv.Addr().String() + "/"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /: %v %v, want 404", resp, err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("the endpoint still answers after Shutdown")
	}
}

// TestStateFailure: a family whose read fails is left out and the others
// are served.
func TestStateFailure(t *testing.T) {
	m := metrics.New()
	if err := m.Watch(metrics.State{
		Latched: func() bool { return false },
		Sessions: func(context.Context) (map[lifecycle.State]int, error) {
			return nil, errors.New("state file closed")
		},
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := metrics.Serve("localhost:0", m.Handler(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	fams := scrape(t, "http://"+srv.Addr().String()+"/metrics")
	if _, ok := fams["hcp_edge_sessions"]; ok {
		t.Fatal("hcp_edge_sessions served although its read failed")
	}
	if _, ok := fams["hcp_edge_broker_connected"]; ok {
		t.Fatal("uplink families served without an uplink")
	}
	if v := value(t, fams, "hcp_edge_interlock_latched", nil); v != 0 {
		t.Fatalf("latched %v", v)
	}
}

// TestServeLoopbackOnly: an address that binds beyond loopback is refused
// after the bind, and a port in use is an error.
func TestServeLoopbackOnly(t *testing.T) {
	m := metrics.New()
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		if srv, err := metrics.Serve(addr, m.Handler(nil), nil); !errors.Is(err, metrics.ErrNotLoopback) {
			if srv != nil {
				_ = srv.Shutdown(context.Background())
			}
			t.Fatalf("Serve(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
	srv, err := metrics.Serve("[::1]:0", m.Handler(nil), nil)
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer srv.Shutdown(context.Background())
	if _, err := metrics.Serve(srv.Addr().String(), m.Handler(nil), nil); err == nil {
		t.Fatal("a second server on the same port")
	}
}

// TestObservePollAllocs: the monitor's hook allocates nothing once an
// instrument has been seen.
func TestObservePollAllocs(t *testing.T) {
	m := metrics.New()
	m.ObservePoll("flow.Ar", time.Millisecond, nil)
	if n := testing.AllocsPerRun(1000, func() {
		m.ObservePoll("flow.Ar", 2*time.Millisecond, nil)
		m.ObservePoll("flow.Ar", 2*time.Millisecond, device.ErrTimeout)
	}); n != 0 {
		t.Fatalf("ObservePoll allocates %v times per call pair", n)
	}
}

// BenchmarkObservePoll is the cost the metrics add to one monitor poll.
func BenchmarkObservePoll(b *testing.B) {
	m := metrics.New()
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("switch.s%d", i)
		m.ObservePoll(names[i], time.Millisecond, nil)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.ObservePoll(names[i%len(names)], 3*time.Millisecond, nil)
			i++
		}
	})
}
