package main

// TestShippedCapabilities: every shipped capability run as shipped — the
// real binaries (rig-sim, hcp-edge run with configs/sim.yaml unchanged), the
// real broker, a transport/caller client logged in as the caller sim.yaml
// maps (harness-alpha-001), nothing granted beyond what sim.yaml grants.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rabbitmq/amqp091-go"

	"hcp-edge/configs"
	"hcp-edge/firmware-sim/control"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
	"hcp-edge/internal/syncbuf"
	"hcp-edge/session/executor"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// shippedConfig is the configuration file the agent ships with.
const shippedConfig = "../../configs/sim.yaml"

var (
	rigSimOnce sync.Once
	rigSimBin  string
	rigSimErr  error
)

// buildRigSim builds cmd/rig-sim once per test binary, beside hcp-edge.
func buildRigSim(t *testing.T) string {
	t.Helper()
	rigSimOnce.Do(func() {
		rigSimBin = filepath.Join(filepath.Dir(bin), "rig-sim")
		out, err := exec.Command("go", "build", "-o", rigSimBin, "../rig-sim").CombinedOutput()
		if err != nil {
			rigSimErr = fmt.Errorf("go build rig-sim: %v\n%s", err, out)
		}
	})
	if rigSimErr != nil {
		t.Fatal(rigSimErr)
	}
	return rigSimBin
}

// rigSimProc is a running rig-sim process.
type rigSimProc struct {
	t    *testing.T
	bin  string
	dir  string
	logs *syncbuf.Buffer
}

// startRigSim runs rig-sim with its defaults (the Modbus TCP address and the
// time scale sim.yaml expects) and args in a run directory of its own. The address is
// fixed (127.0.0.1:5020): while another test's simulator holds it, rig-sim
// exits at once, and this waits and tries again (hang guard 3 min).
func startRigSim(t *testing.T, args ...string) *rigSimProc {
	t.Helper()
	r := &rigSimProc{t: t, bin: buildRigSim(t), dir: t.TempDir()}
	deadline := time.Now().Add(brokerLongGuard)
	for {
		r.logs = &syncbuf.Buffer{}
		cmd := exec.Command(r.bin, append([]string{"run", "--dir", r.dir}, args...)...)
		cmd.Stdout, cmd.Stderr = r.logs, r.logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		ready := false
		for !ready {
			select {
			case err := <-exited:
				if !strings.Contains(r.logs.String(), "address already in use") || time.Now().After(deadline) {
					t.Fatalf("rig-sim exited: %v\n%s", err, r.logs)
				}
				t.Logf("127.0.0.1:5020 is taken (another simulator runs): waiting")
				time.Sleep(time.Second)
			case <-time.After(20 * time.Millisecond):
				ready = strings.Contains(r.logs.String(), "control ")
				if !ready && time.Now().After(deadline) {
					t.Fatalf("rig-sim not ready:\n%s", r.logs)
				}
				continue
			}
			break
		}
		if !ready {
			continue
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(hangGuard):
				_ = cmd.Process.Kill()
				<-exited
			}
			if t.Failed() {
				t.Logf("rig-sim log:\n%s", r.logs)
			}
		})
		return r
	}
}

// run runs a rig-sim client command against this simulator.
func (r *rigSimProc) run(args ...string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	out, err := exec.CommandContext(ctx, r.bin, append(args, "--dir", r.dir)...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("rig-sim %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// grown is the simulated plant as rig-sim status --json reports it.
func (r *rigSimProc) grown() *plant.Snapshot {
	r.t.Helper()
	var st control.Status
	if err := json.Unmarshal([]byte(r.run("status", "--json")), &st); err != nil {
		r.t.Fatalf("rig-sim status --json: %v", err)
	}
	return &st.Snapshot
}

// submitAndFinish submits a task as the caller and reads it to its final
// message, which it returns after checking the event sequence.
func (b *brokerEnv) submitAndFinish(t *testing.T, c *caller.Client, capab, inputs string, guard time.Duration) *wire.Envelope {
	t.Helper()
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: capab, CallerID: b.callerID,
		Intent: "shipped " + capab, Inputs: json.RawMessage(inputs)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, task, guard)
	checkSequence(t, msgs)
	return msgs[len(msgs)-1]
}

// completedOutputs decodes a task_completed's outputs, failing on any other
// final message.
func completedOutputs(t *testing.T, fin *wire.Envelope) map[string]any {
	t.Helper()
	tc, err := fin.TaskCompleted()
	if err != nil {
		t.Fatalf("final %s: %v (%s)", fin.Type, err, mustEncode(fin))
	}
	var out map[string]any
	if err := json.Unmarshal(tc.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShippedCapabilities runs rig-status, leak-check (a tight chamber, then
// the simulator's chamber-leak fault making the rate of rise exceed the
// threshold) and the seed's cvd-material-synthesis to completion through the
// broker against rig-sim and `hcp-edge run --config configs/sim.yaml`, the
// file as shipped (only the environment places the state directory, the
// simulator's run directory, the broker login of the callee and a callee id
// of its own). The leak checks run with the token sim.yaml's gate issues
// (rig.read, rig.operate): their preflight and cleanup close the reactive
// gases toward safe.
func TestShippedCapabilities(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the real binaries and broker")
	}
	t.Parallel()
	b, sim := startShipped(t)
	// Discovery offers the shipped recipes as capabilities, each with the
	// risk floor derived from what it does.
	tap := b.tap()
	t.Run("discovery", func(t *testing.T) {
		offers := b.discover(t, tap)
		for name, floor := range map[string]string{"cvd-material-synthesis": "R3", "ws2-sulfurization": "R4", "h2-anneal": "R3",
			"rig-status": "R1", "leak-check": "R2"} {
			if o, ok := offers[name]; !ok || o.RiskFloor != floor {
				t.Errorf("%s offered %v with floor %q, want %s", name, ok, o.RiskFloor, floor)
			}
		}
	})

	// One consumer of the caller's queue at a time: a second client would
	// share its messages round-robin.
	c := b.client(nil)
	t.Run("rig-status", func(t *testing.T) {
		out := completedOutputs(t, b.submitAndFinish(t, c, executor.RigStatusName, `{}`, brokerLongGuard))
		if out["furnace"] == nil || out["pressure"] == nil || out["interlock"] == nil {
			t.Fatalf("outputs %v", out)
		}
		t.Logf("rig-status: pressure %v, stale %v", out["pressure"], out["stale"])
	})
	b.arm()

	leakCheck := func(t *testing.T, threshold float64) map[string]any {
		t.Helper()
		out := completedOutputs(t, b.submitAndFinish(t, c, executor.LeakCheckName,
			fmt.Sprintf(`{"max_rate_of_rise_pa_per_min":%g}`, threshold), brokerLongGuard))
		t.Logf("leak-check at %g Pa/min: passed %v, rate of rise %v Pa/min (%v → %v Pa over %v s)", threshold,
			out["passed"], out["rate_of_rise_pa_per_min"], out["base_pressure_pa"], out["final_pressure_pa"], out["hold_seconds"])
		return out
	}
	t.Run("leak-check tight chamber", func(t *testing.T) {
		out := leakCheck(t, 10)
		if rate, _ := out["rate_of_rise_pa_per_min"].(float64); out["passed"] != true || !(rate > 0 && rate < 10) {
			t.Fatalf("tight chamber: %v", out)
		}
	})
	t.Run("leak-check leaking chamber", func(t *testing.T) {
		sim.run("fault", "inject", plant.FaultChamberLeak, "--target", "12")
		defer sim.run("fault", "clear", plant.FaultChamberLeak)
		out := leakCheck(t, 10)
		if rate, _ := out["rate_of_rise_pa_per_min"].(float64); out["passed"] != false || !(rate > 10) {
			t.Fatalf("leaking chamber (about 15 Pa/min against 10): %v", out)
		}
	})
	if err := c.Close(); err != nil { // startMoS2 has a client of its own
		t.Fatal(err)
	}
	t.Run("cvd-material-synthesis", func(t *testing.T) {
		r := b.startMoS2(t)
		defer r.c.Close() // one consumer of the caller's queue at a time
		all := r.finish(t, brokerLongGuard)
		checkStream(t, all, r.sid)
		if checkCompleted(t, all[len(all)-1], r.ts, sim.grown()) == "COMPLETED" {
			checkGolden(t, goldenMoS2, all)
			exportAndCheck(t, b.env, r.sid) // export_test.go
			fetchELNAndCheck(t, r.c, r.sid)
		}
	})
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// TestShippedRecipes runs the shipped WS2 and H2/Ar anneal recipes to
// completion through the broker against rig-sim and `hcp-edge run --config
// configs/sim.yaml`, as TestShippedCapabilities runs the MoS2 one, each on
// a fresh simulator and agent: WS2 with WO3 in the boat from the start (a
// sample of its own; the result names WS2), WS2 again with MoO3 in the boat
// (issue 34: MoS2 found where WS2 was expected, and said so), the anneal on
// a rig whose interlock has seen no H2S
// (H2 after H2S needs the envelope's purge: 2 min of the instruments'
// clock, 10 h of the simulator's process time).
func TestShippedRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the real binaries and broker")
	}
	amqptest.Require(t) // every subtest needs the broker: without it the whole test skips, naming it
	t.Parallel()
	t.Run("ws2-sulfurization", func(t *testing.T) {
		t.Parallel()
		b, sim := startShipped(t, "--precursor", "WO3")
		b.arm()
		r := b.startApproved(t, &wire.TaskSubmit{Capability: "ws2-sulfurization", CallerID: b.callerID, Intent: "shipped WS2 recipe",
			Inputs: json.RawMessage(`{"substrate":"SiO2/Si","growth_temperature":800,"growth_duration":"PT10M"}`)})
		defer r.c.Close()
		all := r.finish(t, brokerLongGuard)
		checkStream(t, all, r.sid)
		checkRecipeAccepted(t, all, "ws2-sulfurization")
		out := completedOutputs(t, all[len(all)-1])
		grown := sim.grown()
		t.Logf("WS2: layer count %v, distance %v, confidence %v; plant %.3f layers of %s", out["layer_count"], out["peak_distance"],
			out["confidence"], grown.Layers, grown.Film.Material())
		if lc, _ := out["layer_count"].(float64); lc < 1 || grown.Film.Material() != "WS2" {
			t.Fatalf("WS2: layer count %v, plant film %s", out["layer_count"], grown.Film.Material())
		}
		if mat := materialOf(out); mat["name"] != "WS2" || mat["matches_recipe"] != true || out["material_matches_recipe"] != true {
			t.Fatalf("WS2: raman_analysis.material %v, material_matches_recipe %v", mat, out["material_matches_recipe"])
		}
		exportAndCheck(t, b.env, r.sid) // export_test.go
		if err := b.stop(); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, b.logs)
		}
	})
	// The boat is loaded by hand: the WS2 recipe run with MoO3 left in it
	// (rig-sim --precursor MoO3) grows MoS2. The session completes with
	// what it measured, as MoS2, and says so: the result's
	// material_matches_recipe is false, a material_mismatch warning event
	// names both materials, and the session's audit log holds the finding.
	t.Run("ws2-sulfurization with MoO3 in the boat", func(t *testing.T) {
		t.Parallel()
		b, sim := startShipped(t, "--precursor", "MoO3")
		b.arm()
		r := b.startApproved(t, &wire.TaskSubmit{Capability: "ws2-sulfurization", CallerID: b.callerID, Intent: "WS2 recipe, wrong precursor",
			Inputs: json.RawMessage(`{"substrate":"SiO2/Si","growth_temperature":750,"growth_duration":"PT10M"}`)})
		defer r.c.Close()
		all := r.finish(t, brokerLongGuard)
		checkStream(t, all, r.sid)
		out := completedOutputs(t, all[len(all)-1])
		grown := sim.grown()
		mat := materialOf(out)
		t.Logf("WS2 recipe, MoO3 boat: material %v, layer count %v, distance %v; plant %.3f layers of %s", mat, out["layer_count"],
			out["peak_distance"], grown.Layers, grown.Film.Material())
		if grown.Film.Material() != "MoS2" || mat["name"] != "MoS2" || mat["expected"] != "WS2" || mat["matches_recipe"] != false ||
			out["material_matches_recipe"] != false {
			t.Fatalf("raman_analysis.material %v, material_matches_recipe %v; plant %s", mat, out["material_matches_recipe"], grown.Film.Material())
		}
		if lc, _ := out["layer_count"].(float64); lc < 1 {
			t.Fatalf("layer count %v: the MoS2 grown is not measured", out["layer_count"])
		}
		warned := false
		for _, m := range all {
			ev, err := m.Event()
			if err != nil || ev.EventType != "warning" {
				continue
			}
			var w struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			}
			if json.Unmarshal(ev.Data, &w) == nil && w.Code == "material_mismatch" && w.Details["expected"] == "WS2" && w.Details["found"] == "MoS2" {
				warned = true
			}
		}
		if !warned {
			t.Fatal("no material_mismatch warning event naming WS2 expected and MoS2 found")
		}
		var rp auditReplayResult
		if err := json.Unmarshal([]byte(b.mustCLI("audit", "replay", r.sid, "--json", "--operator", "bob").stdout), &rp); err != nil {
			t.Fatal(err)
		}
		audited := false
		var kinds []string
		for _, en := range rp.Entries {
			var d map[string]any
			_ = json.Unmarshal(en.Detail, &d)
			audited = audited || (en.Kind == "analysis" && d["code"] == "material_mismatch" && d["found"] == "MoS2" && d["expected"] == "WS2")
			kinds = append(kinds, en.Kind)
		}
		if !audited {
			t.Fatalf("no audit entry of the mismatch among %d: %v", len(rp.Entries), kinds)
		}
		if err := b.stop(); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, b.logs)
		}
	})
	t.Run("h2-anneal", func(t *testing.T) {
		t.Parallel()
		b, sim := startShipped(t)
		b.arm()
		r := b.startApproved(t, &wire.TaskSubmit{Capability: "h2-anneal", CallerID: b.callerID, Intent: "shipped anneal recipe",
			Inputs: json.RawMessage(`{"substrate":"sapphire","anneal_temperature":450,"anneal_duration":"PT10M"}`)})
		defer r.c.Close()
		all := r.finish(t, brokerLongGuard)
		checkStream(t, all, r.sid)
		checkRecipeAccepted(t, all, "h2-anneal")
		out := completedOutputs(t, all[len(all)-1])
		logRows, _ := out["process_log"].([]any)
		t.Logf("anneal: peak %v, leak rate %v, %d log rows", out["peak_temperature"], out["leak_rate_pa_per_min"], len(logRows))
		if len(logRows) == 0 || out["raman_analysis"] != nil || sim.grown().Layers != 0 {
			t.Fatalf("anneal outputs %v", out)
		}
		if err := b.stop(); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, b.logs)
		}
	})
}

// startShipped starts rig-sim (with simArgs) and `hcp-edge run --config
// configs/sim.yaml`, the file as shipped, on the real broker (only the
// environment places the state directory, the simulator's run directory,
// the broker login of the callee and a callee id of its own), and waits
// for the uplink. Both stop at the end of t.
func startShipped(t *testing.T, simArgs ...string) (*brokerEnv, *rigSimProc) {
	t.Helper()
	return startShippedConfig(t, shippedConfig, simArgs...)
}

// startShippedConfig is startShipped with the shipped configuration at
// cfg (configs/sim.yaml must equal the embedded default).
func startShippedConfig(t *testing.T, cfg string, simArgs ...string) (*brokerEnv, *rigSimProc) {
	t.Helper()
	own := amqptest.OwnBench(t) // skips loudly without a broker (fails under HCP_REQUIRE_PEERS=1)
	conn := amqptest.Dial(t, own.AlphaURL())
	cfgPath, err := filepath.Abs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg == shippedConfig {
		if shipped, err := os.ReadFile(cfgPath); err != nil || !bytes.Equal(shipped, configs.SimYAML) {
			t.Fatalf("configs/sim.yaml differs from the embedded default (%v)", err)
		}
	}
	sim := startRigSim(t, simArgs...)
	if sim.dir == rig.DefaultOpts().Dir {
		t.Fatal("the simulator must not use the shared default run directory")
	}
	// The shipped ids on a vhost of the test's own, provisioned as
	// `hcp-edge broker provision` provisions configs/sim.yaml; the daemon's
	// broker login in its environment (the tests run in parallel).
	b := &brokerEnv{conn: conn, calleeID: amqptest.CalleeID, callerID: amqptest.AlphaID, own: &own}
	b.env = &env{t: t, dir: t.TempDir(), cfg: cfgPath, simDir: sim.dir}
	b.sock = filepath.Join(b.dir, "control.sock")
	b.extra = append(b.extra, "HCP_AMQP_URL="+own.URL(), "HCP_CALLEE_ID="+b.calleeID)
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	return b, sim
}

// checkRecipeAccepted: the session's task_accepted names the shipped
// recipe it runs, with a sha256 of 64 hex digits.
func checkRecipeAccepted(t *testing.T, all []*wire.Envelope, name string) {
	t.Helper()
	for _, m := range all {
		if m.Type != wire.TypeTaskAccepted {
			continue
		}
		acc, err := m.TaskAccepted()
		if err != nil || acc.Recipe == nil || acc.Recipe.Name != name || acc.Recipe.Version == "" || len(acc.Recipe.SHA256) != 64 {
			t.Fatalf("task_accepted recipe %+v (%v), want %s", acc.Recipe, err, name)
		}
		return
	}
	t.Fatal("no task_accepted")
}

// discover asks the agent, as the caller through the broker, for the
// capabilities it may use (capabilities_request) and returns the offers
// by name. tap is the caller's queue (b.tap).
func (b *brokerEnv) discover(t *testing.T, tap <-chan amqp091.Delivery) map[string]wire.CapabilityOffer {
	t.Helper()
	id := uuid.NewString()
	body := fmt.Sprintf(`{"hcp_version":"1.0","message_id":%q,"timestamp":%q,"session_id":null,"type":"capabilities_request","payload":{}}`,
		id, time.Now().UTC().Format(wire.TimestampLayout))
	publishCommand(t, b.conn, b.calleeID, amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding,
		DeliveryMode: wire.DeliveryMode, MessageId: id, Type: string(wire.TypeCapabilitiesRequest), Timestamp: time.Now(),
		UserId: amqptest.AlphaUser, Body: []byte(body)})
	deadline := time.After(hangGuard)
	for {
		select {
		case d := <-tap:
			env, err := wire.Decode(d.Body)
			if err != nil || env.Type != wire.TypeCapabilitiesResponse {
				continue
			}
			if irt, _ := d.Headers[wire.HeaderInReplyTo].(string); irt != id {
				continue
			}
			var resp wire.CapabilitiesResponse
			if err := json.Unmarshal(env.Payload, &resp); err != nil {
				t.Fatal(err)
			}
			out := map[string]wire.CapabilityOffer{}
			for _, o := range resp.Capabilities {
				out[o.Capability.Name] = o
			}
			return out
		case <-deadline:
			t.Fatalf("no capabilities_response to %s within %v", id, hangGuard)
		}
	}
}

// materialOf is a result's raman_analysis.material.
func materialOf(out map[string]any) map[string]any {
	ra, _ := out["raman_analysis"].(map[string]any)
	m, _ := ra["material"].(map[string]any)
	return m
}
