package main

import (
	"strings"
	"testing"
)

// TestSerialFirmwareMoS2: the MoS2 task runs to completion with
// configs/sim.yaml as shipped while the serial instruments emulate real
// firmware: the MFCs (rig-sim --mfc-variant) Ar an MCR-style 8v17 in SLPM,
// H2 a 5v12 printing unsigned setpoints, H2S a 10v20 with the padded gas
// column; the gauge controller (--gauge-model tpg262) a TPG 262 with two
// gauges, signed values and TID "PKR,PKR". Its HCP stream is the golden
// one; every setpoint lands in sccm (the SLPM controller is not set 1000
// times too high or low); the agent never writes to the gauge controller;
// and the run's MFC setpoints are counted: the non-volatile writes each
// controller would make in saved setpoint mode, which the agent refuses at
// start. One run for both families: each is a whole MoS2 run on its
// variants, at half the suite's time of two.
func TestSerialFirmwareMoS2(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the real binaries and broker")
	}
	t.Parallel()
	b, sim := startShippedConfig(t, shippedConfig, "--mfc-variant", "ar=slpm,h2=pre6v,h2s=padded", "--gauge-model", "tpg262")
	b.arm()
	r := b.startMoS2(t)
	defer r.c.Close()
	all := r.finish(t, brokerLongGuard)
	checkStream(t, all, r.sid)
	if checkCompleted(t, all[len(all)-1], r.ts, sim.grown()) == "COMPLETED" {
		checkGolden(t, goldenMoS2, all)
	}
	setpoints := map[string]int{}
	for _, w := range simWrites(t, sim) {
		if w.Device == "gauge" {
			t.Errorf("the agent wrote to the gauge controller: %+v", w)
		}
		if !strings.HasPrefix(w.Device, "mfc-") {
			continue
		}
		if w.Channel == "setpoint_nvm" {
			t.Errorf("a non-volatile setpoint write on %s: %+v", w.Device, w)
		}
		if w.Channel == "setpoint" && w.Accepted {
			setpoints[w.Device]++
		}
		if w.Channel == "setpoint" && w.Value > 500 {
			t.Errorf("%s: setpoint %g sccm, above every full scale: a unit misread", w.Device, w.Value)
		}
	}
	t.Logf("MFC setpoints over the whole MoS2 run (= non-volatile writes in saved mode): %v", setpoints)
	if len(setpoints) == 0 {
		t.Error("no MFC setpoint over the whole run")
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}
