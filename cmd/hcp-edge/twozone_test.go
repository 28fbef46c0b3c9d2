package main

// The third rig (issue 42): MoS2 from solid precursors in a two-zone
// furnace, brought up from configuration alone. rig-sim --rig
// mos2-two-zone and `hcp-edge run --config configs/mos2-two-zone.yaml` as
// shipped, through the real broker: the shipped mos2-solid recipe to
// completion, and a trip in the sulfur zone halting both zones and every
// line.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/safestate"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// twoZoneConfig is the shipped configuration of the two-zone rig.
const twoZoneConfig = "../../configs/mos2-two-zone.yaml"

// twoZoneInputs are configs/examples/mos2-solid-task.json's: one layer at
// 750 °C in 16 min.
const twoZoneInputs = `{"substrate":"SiO2/Si","growth_temperature":750,"sulfur_temperature":200,"growth_duration":"PT16M"}`

// startTwoZone runs `rig-sim run --rig mos2-two-zone` and `hcp-edge run
// --config configs/mos2-two-zone.yaml` on the test's own vhost, armed.
func startTwoZone(t *testing.T, simArgs ...string) (*brokerEnv, *rigSimProc) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end through the real binaries and broker")
	}
	amqptest.Require(t)
	b, sim := startShippedConfig(t, twoZoneConfig, append([]string{"--rig", "mos2-two-zone"}, simArgs...)...)
	b.arm()
	return b, sim
}

// TestTwoZoneRig: the shipped mos2-solid recipe runs to completion on the
// two-zone rig: both zones driven (the growth zone first, then the sulfur
// zone; both cold at the end), the sulfur delivered grows about one layer,
// and the analysis names one layer of MoS2.
func TestTwoZoneRig(t *testing.T) {
	t.Parallel() // its rig-sim waits for 127.0.0.1:5020 as the other shipped-configuration tests do
	b, sim := startTwoZone(t)
	r := b.startApproved(t, &wire.TaskSubmit{Capability: "mos2-solid", CallerID: b.callerID, Intent: "MoS2 from solid precursors, two zones",
		Inputs: json.RawMessage(twoZoneInputs)})
	defer r.c.Close()
	all := r.finish(t, brokerLongGuard)
	checkStream(t, all, r.sid)
	checkRecipeAccepted(t, all, "mos2-solid")
	out := completedOutputs(t, all[len(all)-1])
	g := sim.grown()
	t.Logf("layer count %v, confidence %v; plant: %s %.2f layers, zones %+v, sources %+v", out["layer_count"], out["confidence"], g.Material, g.Layers, g.Zones, g.Solid)
	if g.Rig != plant.RigMoS2TwoZone || g.Solid == nil || len(g.Zones) != 2 {
		t.Fatalf("rig-sim: rig %q, zones %v, sources %v", g.Rig, g.Zones, g.Solid)
	}
	// The film grew from the sulfur the carrier brought (the MoO3 boat is
	// spent afterwards: the sulfur zone cools after the growth zone, and
	// the sulfur reaching the cooled boat sulfurizes it, which the film does
	// not see).
	if g.Solid.DeliveredSCCMs <= 0 || g.Material != "MoS2" || g.Layers < 0.9 || g.Layers > 1.6 {
		t.Errorf("sulfur delivered %g sccm·s; film %s %.2f layers: want about one layer of MoS2", g.Solid.DeliveredSCCMs, g.Material, g.Layers)
	}
	for name, z := range g.Zones {
		if z.TemperatureC > 80 {
			t.Errorf("zone %s at %.1f °C after the run", name, z.TemperatureC)
		}
	}
	if lc, _ := out["layer_count"].(float64); lc != 1 || materialOf(out)["name"] != "MoS2" {
		t.Errorf("layer count %v, material %v", out["layer_count"], materialOf(out))
	}
	checkTwoZoneShown(t, b, r.sid)
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
	// probe (the daemon stopped: it opens the RS-485 line itself) reads
	// both zones' controllers.
	pr := b.cli("probe", "--config", b.cfg)
	t.Logf("probe in %v", pr.took.Round(time.Millisecond))
	for _, tc := range []string{"sulfur_tc", "growth_tc"} {
		if !regexp.MustCompile(`(?m)^` + tc + `\s+ok\s+PV `).MatchString(pr.stdout) {
			t.Errorf("probe shows no reading of %s (exit %d):\n%s%s", tc, pr.code, pr.stdout, pr.stderr)
		}
	}
}

// checkTwoZoneShown: every heated zone of the two-zone rig is shown by
// its configured name: hcp-edge status (each zone's PV, setpoint, output
// and heater), the session's exported .eln (both zones' controllers as
// instruments, the growth log's temperature column per zone, the process
// profile's temperature and setpoint per zone).
func checkTwoZoneShown(t *testing.T, b *brokerEnv, sid string) {
	t.Helper()
	st := b.mustCLI("status")
	t.Logf("status in %v:\n%s", st.took.Round(time.Millisecond), st.stdout)
	for _, z := range []string{"sulfur", "growth"} {
		if !regexp.MustCompile(`(?m)^` + z + `\s+PV [0-9.]+ °C, setpoint [0-9.]+ °C, output [0-9.]+ %, heater (on|off)`).MatchString(st.stdout) {
			t.Errorf("status shows no reading of zone %s", z)
		}
	}
	f := filepath.Join(t.TempDir(), "two-zone.eln")
	ex := b.mustCLI("export", sid, "--out", f)
	t.Logf("export in %v", ex.took.Round(time.Millisecond))
	zr, err := zip.OpenReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	files := map[string]string{}
	for _, zf := range zr.File {
		if rc, err := zf.Open(); err == nil {
			data, _ := io.ReadAll(rc)
			_ = rc.Close()
			files[path.Base(zf.Name)] = string(data)
		}
	}
	for name, want := range map[string][]string{
		"ro-crate-metadata.json": {`"#instrument-sulfur_tc"`, `"#instrument-growth_tc"`, "heated zone sulfur", "heated zone growth"},
		"growth_log.csv":         {"elapsed_seconds,stage,temperature_c,temperature_sulfur_c,temperature_growth_c,pressure_pa"},
		"process_profile.svg":    {"sulfur temperature", "sulfur setpoint", "growth temperature", "growth setpoint", "sulfur over_temperature trip"},
	} {
		for _, w := range want {
			if !strings.Contains(files[name], w) {
				t.Errorf("the exported record's %s (%d bytes) lacks %q", name, len(files[name]), w)
			}
		}
	}
}

// TestTwoZoneSulfurTripHaltsAll (HIL): during mos2-solid's growth hold, a
// thermal runaway of the sulfur zone's heater (rig-sim fault inject
// thermal-runaway --target sulfur) takes the sulfur zone above its
// over_temperature trip (240 °C); the trip halts both zones' heaters (each
// 3200's output high limit 0) and every line (flow setpoint 0, line valve
// closed), and fails the session.
func TestTwoZoneSulfurTripHaltsAll(t *testing.T) {
	t.Parallel()
	b, sim := startTwoZone(t)
	r := b.startApproved(t, &wire.TaskSubmit{Capability: "mos2-solid", CallerID: b.callerID, Intent: "MoS2, sulfur zone runaway",
		Inputs: json.RawMessage(twoZoneInputs)})
	defer r.c.Close()
	b.waitSession("growing", func(s sessionView) bool {
		return s.ID == r.sid && s.Progress != nil && s.Progress.Stage == "material_growth"
	})
	sim.run("fault", "inject", plant.FaultThermalRunaway, "--target", "sulfur")
	all := r.finish(t, brokerLongGuard)
	last := all[len(all)-1]
	if last.Type != wire.TypeTaskFailed || !strings.Contains(string(mustEncode(last)), "safety_violation") {
		t.Fatalf("final %s, want task_failed with safety_violation", mustEncode(last))
	}
	g := sim.grown()
	t.Logf("after the trip: zones %+v, mfcs %+v", g.Zones, g.MFCs)
	for _, name := range []string{"sulfur", "growth"} {
		z, ok := g.Zones[name]
		if !ok || z.Eurotherm == nil || z.Eurotherm.OutputHighPct != 0 {
			t.Errorf("zone %s: %+v, want its heater off (output high limit 0)", name, z)
		}
	}
	if len(g.MFCs) == 0 {
		t.Fatal("no gas line in the snapshot")
	}
	for name, m := range g.MFCs {
		if m.SetpointSCCM != 0 || m.ValveOpen {
			t.Errorf("line %s: setpoint %g sccm, valve open %v, want closed", name, m.SetpointSCCM, m.ValveOpen)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// twoZoneLine is the mode of the two-zone rig's RS-485 line in its
// configuration, whose baud rate rig-sim emulates for the e-stop's time.
const twoZoneLine = "19200 8E1"

// TestTwoZoneEStopLatency measures (HCP_ESTOP_LATENCY=N, as
// TestEStopLatency) the e-stop on the two-zone rig, where both zones'
// Eurotherm 3200s share one RS-485 line at 19200 baud (rig-sim's
// --rtu-baud: each exchange as slow as on that line): from the CLI's
// start to every output read back safe (both heaters, the I/O module's
// coils, the MFC), through the daemon. It logs p50/p99 and asserts nothing
// about them (the goal: p99 <= 25 ms, issue 42).
//
//	HCP_ESTOP_LATENCY=20 go test -run TestTwoZoneEStopLatency -v ./cmd/hcp-edge/
func TestTwoZoneEStopLatency(t *testing.T) {
	if os.Getenv("HCP_ESTOP_LATENCY") == "" {
		t.Skip("a measurement: set HCP_ESTOP_LATENCY=N to run it")
	}
	n := 20
	if k, err := strconv.Atoi(os.Getenv("HCP_ESTOP_LATENCY")); err == nil && k > 1 {
		n = k
	}
	// The zones' line as slow as the configuration's (rs485: 19200 8E1):
	// a pty alone would answer at memory speed.
	if cfg, err := os.ReadFile(twoZoneConfig); err != nil || !bytes.Contains(cfg, []byte("mode: "+twoZoneLine)) {
		t.Fatalf("%s: its RS-485 line is not %q (%v): update twoZoneLine", twoZoneConfig, twoZoneLine, err)
	}
	b, _ := startTwoZone(t, "--rtu-baud", strings.Fields(twoZoneLine)[0])
	var took, halt, readBack []time.Duration
	for i := 0; i < n; i++ {
		if i > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = control.Do(ctx, b.sock, control.Request{Op: control.OpReset, Operator: "latency"}, time.Second)
			cancel()
			b.arm()
		}
		r := b.cli("estop", "--operator", "latency", "--json")
		if r.code != 0 {
			t.Fatalf("e-stop %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		var rep safestate.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("estop --json: %v\n%s", err, r.stdout)
		}
		ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
		took, halt, readBack = append(took, r.took), append(halt, ms(rep.HaltMS)), append(readBack, ms(rep.ReadBackMS))
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		slices.Sort(d)
		return d[min(len(d)-1, int(p*float64(len(d))))].Round(100 * time.Microsecond)
	}
	msf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	t.Logf("kv way=two-zone n=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f", n, msf(pct(took, 0.5)), msf(pct(took, 0.99)), msf(pct(took, 1)))
	t.Logf("two-zone e-stop: n=%d p50=%v p99=%v max=%v (CLI start to all outputs read back safe); the daemon's halts p50=%v p99=%v, read-backs p50=%v p99=%v",
		n, pct(took, 0.5), pct(took, 0.99), pct(took, 1), pct(halt, 0.5), pct(halt, 0.99), pct(readBack, 0.5), pct(readBack, 0.99))
}
