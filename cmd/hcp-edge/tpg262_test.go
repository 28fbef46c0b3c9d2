package main

import "testing"

// TestTPG262MoS2: the seed's MoS2 task runs to completion with rig-sim's
// gauge controller a TPG 262 (`--gauge-model tpg262`: two gauges, signed
// values, TID "PKR,PKR"), through the real binaries and broker with
// configs/sim.yaml as shipped; its HCP stream is the golden one, and the
// agent never wrote to the gauge controller.
func TestTPG262MoS2(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the real binaries and broker")
	}
	t.Parallel()
	b, sim := startShipped(t, "--gauge-model", "tpg262")
	b.arm()
	r := b.startMoS2(t)
	defer r.c.Close()
	all := r.finish(t, brokerLongGuard)
	checkStream(t, all, r.sid)
	if checkCompleted(t, all[len(all)-1], r.ts, sim.grown()) == "COMPLETED" {
		checkGolden(t, goldenMoS2, all)
	}
	for _, w := range simWrites(t, sim) {
		if w.Device == "gauge" {
			t.Errorf("the agent wrote to the gauge controller: %+v", w)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}
