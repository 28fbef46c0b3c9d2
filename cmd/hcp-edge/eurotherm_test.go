package main

// The Eurotherm 3200 as technicians configure it (issue 41): rig-sim's 3216
// at 0, 1 or 2 decimals (dEC.P) and per-second, per-minute or per-hour ramp
// units (rmP.U). The shipped profile (one decimal, per minute) refuses any
// other configuration in `hcp-edge probe` and at the agent's start, naming
// the setting; a profile written for the unit's configuration runs the whole
// MoS2 recipe, and the run's writes of non-volatile parameters are counted.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
)

// euroVariantProfile is the shipped eurotherm-3200 profile as a lab writes
// it for a unit at dec decimals and ramp units u (its own profiles_dir).
func euroVariantProfile(t *testing.T, dec int, u plant.EuroRampUnit) string {
	t.Helper()
	raw := map[plant.EuroRampUnit]int{plant.EuroPerMinute: 0, plant.EuroPerHour: 1, plant.EuroPerSecond: 2}[u]
	unit := map[plant.EuroRampUnit]string{plant.EuroPerMinute: "celsius_per_minute", plant.EuroPerHour: "celsius_per_hour", plant.EuroPerSecond: "celsius_per_second"}[u]
	s := string(configs.Profiles()["profiles/eurotherm-3200.yaml"])
	for _, r := range [][2]string{
		{"address: 525, equals: 1", fmt.Sprintf("address: 525, equals: %d", dec)},
		{"address: 531, equals: 0", fmt.Sprintf("address: 531, equals: %d", raw)},
		{"unit: celsius_per_minute, range: [0, 3000]", "unit: " + unit + ", range: [0, 3000]"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("fixture: %q not in the shipped profile", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return s
}

// newEuroEnv starts rig-sim's real models with the 3216 configured as cfg,
// and writes configs/sim-eurotherm.yaml pointing at it; with profile set,
// the furnace uses it (as profile eurotherm-lab, in the env's profiles_dir).
func newEuroEnv(t *testing.T, cfg plant.EurothermConfig, profile string) *env {
	t.Helper()
	r, err := rig.Start(context.Background(), rig.Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: 300,
		StartSerial: rig.SerialInstruments, FurnaceModel: plant.FurnaceEurotherm3200, DIOModel: plant.DIOADAM6052,
		RelayWatchdog: 2 * time.Second, Eurotherm: &cfg})
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	e := &env{t: t, r: r, p: r.Plant(), dir: t.TempDir()}
	e.sock = filepath.Join(e.dir, "control.sock")
	b, err := os.ReadFile(eurothermConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	rep := func(from, to string) {
		if !strings.Contains(text, from) {
			t.Fatalf("fixture: %q not in sim-eurotherm.yaml", from)
		}
		text = strings.Replace(text, from, to, 1)
	}
	rep("sim_dir: /tmp/hcp-rig-sim", "sim_dir: "+r.Dir())
	rep("address: 127.0.0.1:5020", "address: "+r.ModbusAddr().String())
	if profile != "" {
		pd := filepath.Join(e.dir, "profiles")
		if err := os.MkdirAll(pd, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pd, "eurotherm-lab.yaml"), []byte(profile), 0o600); err != nil {
			t.Fatal(err)
		}
		rep("sim_dir: "+r.Dir(), "sim_dir: "+r.Dir()+"\n  profiles_dir: "+pd)
		rep("profile: eurotherm-3200}", "profile: eurotherm-lab}")
	}
	e.cfg = filepath.Join(e.dir, "hcp-edge.yaml")
	if err := os.WriteFile(e.cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.p.ADAMWriteCoils("test", plant.ADAMDOBase, []bool{true, true}); err != nil { // pump, gate valve
		t.Fatal(err)
	}
	deadline := time.Now().Add(pumpGuard)
	for e.p.ChamberPressure() > 100 {
		if time.Now().After(deadline) {
			t.Fatalf("chamber did not pump down: %.0f Pa", e.p.ChamberPressure())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return e
}

// TestProbeRefusesAnEurothermConfiguredOtherwise: probe, read-only, fails on
// a 3216 at 0 decimals and on one ramping per hour, naming dEC.P and rmP.U;
// on the unit as the profile expects it, the settings table says ok.
func TestProbeRefusesAnEurothermConfiguredOtherwise(t *testing.T) {
	for _, tc := range []struct {
		cfg  plant.EurothermConfig
		want string // the setting named; "" = none
	}{
		{plant.EurothermConfig{Decimals: 1, RampUnits: plant.EuroPerMinute}, ""},
		{plant.EurothermConfig{Decimals: 0, RampUnits: plant.EuroPerMinute}, "decimal point (dEC.P)"},
		{plant.EurothermConfig{Decimals: 2, RampUnits: plant.EuroPerMinute}, "decimal point (dEC.P)"},
		{plant.EurothermConfig{Decimals: 1, RampUnits: plant.EuroPerHour}, "ramp units (rmP.U)"},
	} {
		t.Run(fmt.Sprintf("dec%d-per-%s", tc.cfg.Decimals, tc.cfg.RampUnits), func(t *testing.T) {
			e := newEuroEnv(t, tc.cfg, "")
			t.Setenv("HCP_RIG_SIM_DIR", "")
			before := len(e.p.Writes(0))
			var out, errOut bytes.Buffer
			code := run(context.Background(), []string{"probe", "--config", e.cfg}, &out, &errOut)
			for _, w := range e.p.Writes(0)[before:] {
				t.Logf("probe wrote %s %s via %s = %v", w.Device, w.Channel, w.Via, w.Value)
				if w.Device == "furnace" || w.Device == "dio" {
					t.Fatalf("probe wrote %s %s = %v", w.Device, w.Channel, w.Value)
				}
			}
			text := out.String()
			if tc.want == "" {
				if strings.Contains(text, "MISMATCH") {
					t.Fatalf("mismatch on the unit the profile describes:\n%s", text)
				}
				return
			}
			if code == exitOK {
				t.Fatalf("probe passed a unit whose %s differs from the profile:\n%s", tc.want, text)
			}
			var line string
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, tc.want) {
					line = l
				}
			}
			if !strings.Contains(line, "MISMATCH") || !strings.Contains(line, "furnace") {
				t.Fatalf("no MISMATCH row for %s:\n%s\n%s", tc.want, text, errOut.String())
			}
		})
	}
}

// TestStartRefusesAnEurothermAtZeroDecimals: the agent, on the shipped
// profile, refuses to start on a 3216 at 0 decimals before its first write,
// saying what it found and what the profile expects.
func TestStartRefusesAnEurothermAtZeroDecimals(t *testing.T) {
	e := newEuroEnv(t, plant.EurothermConfig{Decimals: 0, RampUnits: plant.EuroPerHour}, "")
	before := len(e.p.Writes(0))
	cmd := exec.Command(bin, "run", "--config", e.cfg)
	cmd.Env = e.environ()
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the agent started on a unit that differs from its profile:\n%s", logs.String())
		}
	case <-time.After(hangGuard):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the agent did not refuse to start:\n%s", logs.String())
	}
	for _, want := range []string{"decimal point (dEC.P)", "ramp units (rmP.U)", "refusing to start"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("start refusal does not say %q:\n%s", want, logs.String())
		}
	}
	for _, w := range e.p.Writes(0)[before:] {
		if w.Device == "furnace" {
			t.Fatalf("the refused start wrote %s = %v to the furnace", w.Channel, w.Value)
		}
	}
}

// TestEurothermVariantsMoS2: the whole MoS2 recipe on a 3216 at 0 and at 2
// decimals and on one ramping per hour, each through a profile written for
// its configuration; every accepted write of a parameter the 3200 keeps in
// non-volatile memory over the run (from the agent's start) is counted.
func TestEurothermVariantsMoS2(t *testing.T) {
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator, twice")
	}
	t.Parallel()                                 // its own rigs and state: runs beside the other whole-recipe tests
	for _, cfg := range []plant.EurothermConfig{ // 0 and 2 decimals, per-hour and per-second ramps, in two runs
		{Decimals: 0, RampUnits: plant.EuroPerHour},
		{Decimals: 2, RampUnits: plant.EuroPerSecond},
	} {
		t.Run(fmt.Sprintf("dec%d-per-%s", cfg.Decimals, cfg.RampUnits), func(t *testing.T) {
			t.Parallel() // each its own rig and daemon
			e := newEuroEnv(t, cfg, euroVariantProfile(t, cfg.Decimals, cfg.RampUnits))
			e.start()
			e.arm()
			r := e.submitSeedApproved(3 * time.Minute)
			fin := decodeFinal(t, r)
			if _, err := fin.TaskCompleted(); err != nil {
				t.Fatalf("final %s: %v", fin.Type, err)
			}
			count := map[string]int{}
			for _, w := range e.p.Writes(0) {
				if w.Device == "furnace" && w.Accepted && w.Via != "test" {
					count[w.Channel]++
				}
			}
			nv := e.p.Snapshot().Furnace.Eurotherm.NVWrites
			t.Logf("writes over the agent's start and the whole run: comms_setpoint %d, setpoint_rate %d; non-volatile %v",
				count["comms_setpoint"], count["setpoint_rate"], nv)
			// From the unit's power-on state (manual, local setpoint, OP.HI
			// 100 %): the start halts (OP.HI 0), selects auto and the remote
			// setpoint once; the run arms (OP.HI 100) and halts (OP.HI 0).
			// Nothing else of the run may reach non-volatile memory.
			if nv["target_setpoint"] != 0 || nv["output_high_limit"] > 3 || nv["auto_manual"] > 1 || nv["remote_select"] > 1 {
				t.Errorf("non-volatile writes %v: want TG.SP 0, OP.HI ≤ 3 (start, arm, halt), A-M ≤ 1 and remote select ≤ 1", nv)
			}
			// What the agent itself set on the unit at start (auto, the
			// remote setpoint) is in the audit, each with its channel.
			al := e.mustCLI("audit", "log", "--kind", "control", "--json")
			for _, ch := range []string{"auto_manual", "remote_select"} {
				if nv[ch] > 0 && !strings.Contains(al.stdout, `"channel":"`+ch+`"`) {
					t.Errorf("the start wrote %s (%d non-volatile writes) and the audit does not say so:\n%s", ch, nv[ch], al.stdout)
				}
			}
			if err := e.stop(); err != nil {
				t.Fatalf("daemon exit: %v\n%s", err, e.logs)
			}
		})
	}
}
