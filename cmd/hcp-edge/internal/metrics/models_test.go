package metrics_test

import (
	"context"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/metrics"
	"hcp-edge/session/modelrouter"
)

// TestModelFamilies: the model router's tracker is exposed per model
// (calls, answers taken, cost, outcomes, latency summary), with the day's
// spend and each remote instance's circuit, and parses as the Prometheus
// text format.
func TestModelFamilies(t *testing.T) {
	m := metrics.New()
	state := metrics.Models{
		Stats: []modelrouter.ModelStats{
			{Model: "local-fit", Tier: 1, Calls: 10, OK: 10, Accepted: 7, Outcomes: map[modelrouter.Outcome]int{modelrouter.OK: 10},
				P50: time.Millisecond, P99: 2 * time.Millisecond, Mean: time.Millisecond},
			{Model: "remote-best", Tier: 3, Calls: 4, OK: 3, Accepted: 3, Cost: 0.012,
				Outcomes: map[modelrouter.Outcome]int{modelrouter.OK: 3, modelrouter.ServerError: 1, modelrouter.Refused: 2},
				P50:      time.Second, P99: 3 * time.Second, Mean: 1500 * time.Millisecond},
		},
		SpentToday: 0.012,
		Circuits:   []modelrouter.CircuitState{{Model: "remote-best", Instance: "https://a/v1", State: "open"}, {Model: "remote-best", Instance: "https://b/v1", State: "closed"}},
	}
	if err := m.Watch(metrics.State{Models: func() metrics.Models { return state }}); err != nil {
		t.Fatal(err)
	}
	srv, err := metrics.Serve("127.0.0.1:0", m.Handler(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	fams := scrape(t, "http://"+srv.Addr().String()+"/metrics")
	rb := map[string]string{"model": "remote-best", "tier": "3"}
	for name, want := range map[string]float64{
		"hcp_edge_model_calls_total": 4, "hcp_edge_model_answers_taken_total": 3, "hcp_edge_model_cost_total": 0.012,
	} {
		if v := value(t, fams, name, rb); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	for o, want := range map[string]float64{"ok": 3, "server_error": 1, "refused": 2} {
		if v := value(t, fams, "hcp_edge_model_outcomes_total", map[string]string{"model": "remote-best", "tier": "3", "outcome": o}); v != want {
			t.Errorf("outcome %s = %v, want %v", o, v, want)
		}
	}
	if v := value(t, fams, "hcp_edge_model_spend_today", nil); v != 0.012 {
		t.Errorf("spend today %v", v)
	}
	if v := value(t, fams, "hcp_edge_model_circuit_open", map[string]string{"model": "remote-best", "instance": "https://a/v1"}); v != 1 {
		t.Errorf("circuit a %v", v)
	}
	if v := value(t, fams, "hcp_edge_model_circuit_open", map[string]string{"model": "remote-best", "instance": "https://b/v1"}); v != 0 {
		t.Errorf("circuit b %v", v)
	}
	sum := sample(t, fams, "hcp_edge_model_latency_seconds", rb).GetSummary()
	if sum.GetSampleCount() != 4 || sum.GetSampleSum() != 6 || len(sum.GetQuantile()) != 2 {
		t.Fatalf("latency summary %v", sum)
	}
}
