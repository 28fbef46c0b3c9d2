package budget_test

import (
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/budget"
)

// A task asks for at most 20 scc of H2S under a policy of 1500; the rig,
// simulated 300 times fast, flows 3 sccm of H2S.
func ExampleTracker() {
	policy := budget.Limits{GasVolume: map[string]float64{"H2S": 1500}, Actions: 500}
	task, _ := budget.ParseTask([]byte(`{"constraints":{"budgets":{"gas_volume_scc":{"H2S":20}}}}`))
	start := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	tr := budget.NewTracker(policy.Tighter(task), budget.State{}, budget.Opts{Scale: 300, Start: start})
	for s := 0; s <= 2; s++ {
		at := start.Add(time.Duration(s) * time.Second)
		tr.Observe(envelope.Readings{At: at, Flows: map[string]device.FlowStatus{"H2S": {Flow: device.SCCM(3), At: at}}})
		fmt.Printf("%d s: %.0f scc, %v\n", s, tr.Usage(at).GasVolume["H2S"], tr.Check(at))
	}
	// Output:
	// 0 s: 0 scc, <nil>
	// 1 s: 15 scc, <nil>
	// 2 s: 30 scc, budget gas_volume of H2S exceeded: 30 scc used, limit 20 scc
}
