package metrics_test

import (
	"context"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/metrics"
	"hcp-edge/envelope"
)

// TestToolFamilies: the tool pipeline's statistics are exposed per tool and
// version (calls, failures, toward-safe calls, refusals by rule) with the
// latency as a summary (p50, p99, sum, count), and parse as the Prometheus
// text format.
func TestToolFamilies(t *testing.T) {
	var h envelope.LatencyHistogram
	for i := 1; i <= 100; i++ {
		h.Observe(time.Duration(i) * time.Millisecond)
	}
	stats := []envelope.ToolStats{
		{Tool: envelope.ToolRef{Name: "furnace.set_setpoint", Version: "1.0.0"}, Calls: 100, Succeeded: 96, Refused: 3, Failed: 1,
			RefusedBy: map[envelope.Rule]uint64{envelope.RuleMax: 2, envelope.RuleStale: 1}, TowardSafe: 4,
			TotalLatency: 5050 * time.Millisecond, MaxLatency: 100 * time.Millisecond, Latency: h},
		{Tool: envelope.ToolRef{Name: "pump.set", Version: "1.0.0"}},
	}
	m := metrics.New()
	if err := m.Watch(metrics.State{Tools: func() []envelope.ToolStats { return stats }}); err != nil {
		t.Fatal(err)
	}
	srv, err := metrics.Serve("127.0.0.1:0", m.Handler(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	fams := scrape(t, "http://"+srv.Addr().String()+"/metrics")
	sp := map[string]string{"tool": "furnace.set_setpoint", "version": "1.0.0"}
	for name, want := range map[string]float64{
		"hcp_edge_tool_calls_total": 100, "hcp_edge_tool_failures_total": 1, "hcp_edge_tool_toward_safe_calls_total": 4,
	} {
		if v := value(t, fams, name, sp); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if v := value(t, fams, "hcp_edge_tool_calls_total", map[string]string{"tool": "pump.set", "version": "1.0.0"}); v != 0 {
		t.Errorf("pump.set calls %v", v)
	}
	for rule, want := range map[string]float64{"max": 2, "stale_reading": 1} {
		if v := value(t, fams, "hcp_edge_tool_refusals_total", map[string]string{"tool": "furnace.set_setpoint", "version": "1.0.0", "rule": rule}); v != want {
			t.Errorf("refusals by %s = %v, want %v", rule, v, want)
		}
	}
	sum := sample(t, fams, "hcp_edge_tool_latency_seconds", sp).GetSummary()
	if sum.GetSampleCount() != 100 || sum.GetSampleSum() != 5.05 || len(sum.GetQuantile()) != 2 {
		t.Fatalf("latency summary %v", sum)
	}
	for _, q := range sum.GetQuantile() {
		lo := map[float64]float64{0.5: 0.050, 0.99: 0.099}[q.GetQuantile()]
		if v := q.GetValue(); v < lo || v > lo*4/3 {
			t.Errorf("latency quantile %v = %v, want within [%v, 4/3 of it]", q.GetQuantile(), v, lo)
		}
	}
}
