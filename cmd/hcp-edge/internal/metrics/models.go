package metrics

import (
	"slices"
	"strconv"

	"hcp-edge/session/modelrouter"
)

// Models is the model router at a scrape: the tracker's statistics per
// model, the day's spend and every remote instance's circuit.
type Models struct {
	Stats      []modelrouter.ModelStats
	SpentToday float64
	Circuits   []modelrouter.CircuitState
}

// writeModels writes the model router's families: invocations, outcomes,
// answers taken, latency (p50, p99 of the tracker's window), cost, the
// day's spend and the circuits.
func writeModels(w *expoWriter, m Models) {
	labels := []string{"model", "tier"}
	lv := func(s modelrouter.ModelStats) []string { return []string{s.Model, strconv.Itoa(s.Tier)} }
	counter := func(name, help string, v func(modelrouter.ModelStats) float64) {
		w.header(name, help, "counter")
		for _, s := range m.Stats {
			w.sample(name, "", labels, lv(s), "", "", v(s))
		}
	}
	counter(Namespace+"_model_calls_total", "Invocations of an analysis model sent (a refusal is not one).",
		func(s modelrouter.ModelStats) float64 { return float64(s.Calls) })
	counter(Namespace+"_model_answers_taken_total", "Answers of a model that decided an analysis.",
		func(s modelrouter.ModelStats) float64 { return float64(s.Accepted) })
	counter(Namespace+"_model_cost_total", "What a model's invocations cost, in the registry's currency.",
		func(s modelrouter.ModelStats) float64 { return s.Cost })
	name := Namespace + "_model_outcomes_total"
	w.header(name, "Invocations of a model by outcome (ok, timeout, rate_limited, server_error, unreachable, bad_answer, invalid_request, canceled) and the router's refusals (refused: not cleared for the data class, over budget, circuit open, rate limit).", "counter")
	ol := []string{"model", "tier", "outcome"}
	for _, s := range m.Stats {
		outs := make([]string, 0, len(s.Outcomes))
		for o := range s.Outcomes {
			outs = append(outs, string(o))
		}
		slices.Sort(outs)
		for _, o := range outs {
			w.sample(name, "", ol, append(lv(s), o), "", "", float64(s.Outcomes[modelrouter.Outcome(o)]))
		}
	}
	name = Namespace + "_model_latency_seconds"
	w.header(name, "Latency of a model's invocations; quantiles over the tracker's last 2048 calls of the model.", "summary")
	for _, s := range m.Stats {
		w.sample(name, "", labels, lv(s), "quantile", "0.5", s.P50.Seconds())
		w.sample(name, "", labels, lv(s), "quantile", "0.99", s.P99.Seconds())
		w.sample(name, "_sum", labels, lv(s), "", "", s.Mean.Seconds()*float64(s.Calls))
		w.sample(name, "_count", labels, lv(s), "", "", float64(s.Calls))
	}
	w.single(Namespace+"_model_spend_today", "What the analysis models cost today (UTC), against the router's daily budget; kept across restarts.", "gauge", m.SpentToday)
	name = Namespace + "_model_circuit_open"
	w.header(name, "1 while a remote model instance's circuit breaker is open (0.5 half-open: one probe allowed), else 0.", "gauge")
	cl := []string{"model", "instance"}
	for _, c := range m.Circuits {
		v := 0.0
		switch c.State {
		case "open":
			v = 1
		case "half-open":
			v = 0.5
		}
		w.sample(name, "", cl, []string{c.Model, c.Instance}, "", "", v)
	}
}
