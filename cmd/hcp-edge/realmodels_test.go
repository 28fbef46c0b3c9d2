package main

// The MoS2 recipe on rig-sim's real controller models (issue 33): the
// furnace on the Eurotherm 3200 profile and the outputs on the ADAM-6052
// profile, both against firmware-sim's emulations written from the manuals
// (configs/manuals), through the real broker with configs/sim-eurotherm.yaml
// as shipped. The 3200 has no comms watchdog: the configuration's dead-agent
// path is the watchdog relay held by the agent's heartbeat, which the
// SIGKILL test proves from outside the agent.

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/firmware-sim/control"
	"hcp-edge/firmware-sim/plant"
)

// eurothermConfig is the shipped configuration of the real-models rig.
const eurothermConfig = "../../configs/sim-eurotherm.yaml"

// realModelArgs start rig-sim with the real models and the watchdog relay
// the configuration's gpio.relay_watchdog names.
func realModelArgs(t *testing.T) []string {
	t.Helper()
	f, err := rigconfig.Load(eurothermConfig)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--furnace-model", "eurotherm3200", "--dio-model", "adam6052",
		"--relay-watchdog", f.Rig.GPIO.RelayWatchdog.String()}
}

// startRealModels runs rig-sim with the real models and `hcp-edge run
// --config configs/sim-eurotherm.yaml` on the test's own vhost.
func startRealModels(t *testing.T) (*brokerEnv, *rigSimProc) {
	t.Helper()
	return startShippedConfig(t, eurothermConfig, realModelArgs(t)...)
}

// simWrites reads rig-sim's write log.
func simWrites(t *testing.T, sim *rigSimProc) []plant.Write {
	t.Helper()
	c := control.NewClient(filepath.Join(sim.dir, "control.sock"))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := c.Writes(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestRealModelsMoS2: the seed's MoS2 task runs to completion on the
// Eurotherm and ADAM profiles, its HCP stream the golden one; the target
// setpoint (memory rated for 100,000 writes) is never written in a loop:
// the whole run writes it at most a handful of times, the comms setpoint
// takes every step.
func TestRealModelsMoS2(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the real binaries and broker")
	}
	t.Parallel()
	b, sim := startRealModels(t)
	b.arm()
	r := b.startMoS2(t)
	defer r.c.Close()
	all := r.finish(t, brokerLongGuard)
	checkStream(t, all, r.sid)
	if checkCompleted(t, all[len(all)-1], r.ts, sim.grown()) == "COMPLETED" {
		checkGolden(t, goldenMoS2, all)
	}
	count := map[string]int{}
	for _, w := range simWrites(t, sim) {
		if w.Accepted {
			count[w.Channel]++
		}
	}
	t.Logf("writes over the whole MoS2 run: target_setpoint %d, comms_setpoint %d", count["target_setpoint"], count["comms_setpoint"])
	// Write endurance (issue 41): every write of a parameter the 3200 keeps in
	// non-volatile memory, over the whole run from the agent's start.
	nv := 0
	for _, ch := range []string{"target_setpoint", "output_high_limit", "auto_manual", "remote_select"} {
		nv += count[ch]
	}
	t.Logf("non-volatile writes over the whole run: %d (OP.HI %d, A-M %d, remote select %d, TG.SP %d); setpoint_rate %d",
		nv, count["output_high_limit"], count["auto_manual"], count["remote_select"], count["target_setpoint"], count["setpoint_rate"])
	if count["target_setpoint"] > 5 {
		t.Errorf("the target setpoint (rated for 100,000 writes) was written %d times in one run", count["target_setpoint"])
	}
	if count["comms_setpoint"] == 0 {
		t.Errorf("no write of the comms setpoint: the recipe's setpoints went elsewhere")
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// TestRealModelsDeadAgent: SIGKILL the agent mid-ramp on the Eurotherm,
// which has no comms watchdog and keeps asking for power: the watchdog
// relay, no longer beaten, removes heater power within
// gpio.relay_watchdog (plus the simulator's poll), judged from outside by
// the simulator's own state.
func TestRealModelsDeadAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the real binaries and broker")
	}
	t.Parallel()
	f, err := rigconfig.Load(eurothermConfig)
	if err != nil {
		t.Fatal(err)
	}
	hold := f.Rig.GPIO.RelayWatchdog
	b, sim := startRealModels(t)
	b.arm()
	r := b.startMoS2(t)
	defer r.c.Close()
	deadline := time.Now().Add(brokerLongGuard)
	for {
		s := sim.grown()
		if s.Furnace.HeaterActive && s.Furnace.TemperatureC > 100 {
			t.Logf("mid-ramp: %.0f °C, output %.1f %%", s.Furnace.TemperatureC, s.Furnace.OutputPct)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the furnace never heated: %+v", s.Furnace)
		}
		time.Sleep(50 * time.Millisecond)
	}
	killed := time.Now()
	b.kill()
	for {
		s := sim.grown()
		if !s.Furnace.HeaterActive && !s.GPIO["relay_fb"] {
			took := time.Since(killed)
			demand := -1.0
			if s.Furnace.Eurotherm != nil {
				demand = s.Furnace.Eurotherm.WorkingOutputPct
			}
			t.Logf("heater power removed %v after SIGKILL (relay watchdog %v); the controller still asks %.1f %%",
				took.Round(time.Millisecond), hold, demand)
			if took > hold+time.Second {
				t.Errorf("heater power removed %v after the kill, past the relay watchdog's %v (+1 s)", took, hold)
			}
			return
		}
		if time.Since(killed) > hold+10*time.Second {
			t.Fatalf("heater still powered %v after SIGKILL: %+v", time.Since(killed), s.Furnace)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
