package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hiltest/hilbench"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/internal/wallclock"
	"hcp-edge/session/analysis"
	"hcp-edge/session/audit"
	"hcp-edge/session/budget"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/token"
	"hcp-edge/transport/wire"
)

const simScale = 600

// seedSubmit is the seed's MoS2 task_submit (seeds/002).
const seedConstraints = `{"max_duration":"PT72H","confidence_threshold":0.95,"data_classification":"T2"}`

var seedExpected = &wire.ExpectedOutput{Format: "raman_spectrum_analysis",
	RequiredFields: []string{"peak_distance", "layer_count", "confidence"},
	Schema: json.RawMessage(`{"type":"object","required":["peak_distance","layer_count"],"properties":{
		"peak_distance":{"type":"number"},"layer_count":{"type":"integer"},
		"confidence":{"type":"number","minimum":0,"maximum":1}}}`)}

func seedEnv(t testing.TB) *wire.Envelope {
	env := submitEnv(t, "cvd-material-synthesis", cvdInputs, seedConstraints)
	var s wire.TaskSubmit
	if err := json.Unmarshal(env.Payload, &s); err != nil {
		t.Fatal(err)
	}
	s.Intent = "Synthesize monolayer MoS2 on SiO2/Si substrate and perform Raman spectroscopy characterization"
	s.ExpectedOutput = seedExpected
	out, err := wire.NewEnvelope(nil, &s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// simBench is the whole simulated rig in-process (cmd/hiltest/hilbench):
// firmware-sim, every driver, the interlock (envelope/testdata) with the real
// token Authorizer, the Invoker and the monitor, armed.
type simBench struct {
	*hilbench.Bench
	acts *budget.ActionCounter // counts the executed actions of each session from the audit stream
}

// simHarness is an engine over the in-process simulated rig, with the real
// token Authorizer in the interlock.
func simHarness(t *testing.T, mods ...func(*Config)) (*harness, *simBench) {
	t.Helper()
	return simHarnessClock(t, wallclock.New(), mods...)
}

// simHarnessClock is simHarness on the process clock pc: the one Authority
// that issues the tokens and verifies them in the interlock, the
// revocations, the engine and the store all read it, as in the agent.
func simHarnessClock(t *testing.T, pc *wallclock.Clock, mods ...func(*Config)) (*harness, *simBench) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	priv, err := token.LoadOrCreateKey(filepath.Join(dir, "token.key"))
	if err != nil {
		t.Fatal(err)
	}
	opts := token.DefaultOpts()
	opts.Clock = pc
	auth, err := token.New(priv, opts)
	if err != nil {
		t.Fatal(err)
	}
	rev := token.NewRevocations(pc)
	authz, err := token.NewAuthorizer(auth, testEnvelope(t), rev)
	if err != nil {
		t.Fatal(err)
	}
	acts := budget.NewActionCounter()
	rates, _ := executor.NewScaledClock(simScale) // the tools' rate limits run on the plant's time
	b := &simBench{acts: acts, Bench: hilbench.New(t, hilbench.Opts{TimeScale: simScale, Authorizer: authz,
		Audit: acts.Auditor, Invoker: &envelope.InvokerOpts{RateClock: rates.Now}, Materials: analysis.MaterialNames(), Arm: "e2e-operator"})}
	if err := executor.RegisterAnalysis(b.Invoker, nil); err != nil { // the tier-1 fit, as an agent without models
		t.Fatal(err)
	}
	reg := registry(t)
	rsCap, _ := reg.Resolve(executor.RigStatusName, "1.x")
	lcCap, _ := reg.Resolve(executor.LeakCheckName, "1.x")
	cvd := shippedRecipe(t, executor.CVDName)
	rs, _ := executor.NewRigStatus(rsCap)
	lc, _ := executor.NewLeakCheck(lcCap)
	h := newHarnessClock(t, path, executor.ToolRig(b.Invoker, b.Monitor), simScale, []executor.Executor{cvd, rs, lc}, pc, func(c *Config) {
		c.Tokens, c.Clock = auth, pc
		c.Revocations = rev
		c.SafeState = b.Interlock.SafeState
		c.Actions = b.acts
		c.DefaultAbortTimeout = 5 * time.Second
		for _, m := range mods {
			m(c)
		}
	})
	return h, b
}

func TestSimSeedEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end against the simulator")
	}
	t.Parallel() // its own rig and state: runs beside the other whole-recipe tests
	h, b := simHarness(t)
	ctx := context.Background()
	start := time.Now()
	res, apr := pendingSubmit(t, h)
	if err := h.e.Approve(ctx, apr, "olga"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, res.SessionID, lifecycle.Running)

	// Beside the synthesis: a second one is refused, rig-status runs.
	second := h.submit(t, "alpha", seedEnv(t))
	if rej, err := second.Replies[0].TaskRejected(); err != nil || rej.ReasonCode != "resource_unavailable" {
		t.Fatalf("second synthesis: %+v %v", rej, err)
	}
	side := h.submit(t, "alpha", submitEnv(t, "rig-status", `{}`, ""))
	if side.Replies[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("rig-status: %v", side.Replies[0].Type)
	}
	h.waitState(t, side.SessionID, lifecycle.Completed)
	if msgs := h.out.of(side.SessionID, side.Replies); msgs[len(msgs)-1].Type != wire.TypeTaskCompleted {
		t.Fatalf("rig-status ended with %v", msgs[len(msgs)-1].Type)
	}

	// The synthesis ends completed; or, when the loaded machine stalled it
	// at the simulator's time scale into clearly more H2S than planned
	// (overgrown), failed on the caller's confidence threshold (between one
	// layer and two the spectrum is ambiguous), as it must.
	if st := h.waitTerminal(t, res.SessionID); st != lifecycle.Completed {
		snap := b.Plant.Snapshot()
		if st != lifecycle.Failed || !overgrown(snap) {
			t.Fatalf("synthesis ended %s (plant layers %.3f, H2S %.2f× the plan)", st, snap.Layers, exposureRatio(snap))
		}
		t.Logf("failed as it must: the loaded machine gave the plant %.2f× the planned H2S (%.3f layers)", exposureRatio(snap), snap.Layers)
		return
	}
	msgs := h.out.of(res.SessionID, res.Replies)
	evs := events(t, msgs)
	contiguous(t, evs)
	h.storedSeqs(t, res.SessionID)
	checkRecipeIdentity(t, h, res.SessionID, msgs, shippedRecipe(t, executor.CVDName))
	if acc, err := side.Replies[0].TaskAccepted(); err != nil || acc.Recipe != nil {
		t.Errorf("rig-status is no recipe: task_accepted recipe %+v (%v)", acc.Recipe, err)
	}
	last := msgs[len(msgs)-1]
	tc, err := last.TaskCompleted()
	if err != nil {
		t.Fatalf("last message %s: %v", last.Type, err)
	}
	var out map[string]any
	if err := json.Unmarshal(tc.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	t.Logf("wall %v, %d events, layers %v, distance %v, confidence %v", time.Since(start), len(evs),
		out["layer_count"], out["peak_distance"], out["confidence"])
	if snap := b.Plant.Snapshot(); out["layer_count"] != 1.0 {
		if lc, _ := out["layer_count"].(float64); lc < 2 || !overgrown(snap) {
			t.Fatalf("layer_count %v, want 1 (plant layers %.3f, H2S %.2f× the plan)", out["layer_count"], snap.Layers, exposureRatio(snap))
		}
		t.Logf("layer_count %v: the loaded machine gave the plant %.2f× the planned H2S (%.3f layers); the result reports what grew",
			out["layer_count"], exposureRatio(snap), snap.Layers)
	}
	if err := executor.ValidateOutputs(out, &executor.ExpectedOutput{RequiredFields: seedExpected.RequiredFields, Schema: seedExpected.Schema}); err != nil {
		t.Fatal(err)
	}
	if len(tc.Artifacts) != 5 { // spectrum (JSON and JCAMP-DX), growth log and their two SVG plots
		t.Fatalf("artifacts %+v", tc.Artifacts)
	}
	for _, a := range tc.Artifacts {
		name := strings.TrimPrefix(a.URI, "hcp://"+res.SessionID+"/artifacts/")
		data, err := os.ReadFile(filepath.Join(h.cfg.StateDir, "artifacts", res.SessionID, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if a.SizeBytes != int64(len(data)) || a.Checksum != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("artifact %+v", a)
		}
	}
	if tc.ExecutionSummary == nil || tc.ExecutionSummary.StepsExecuted < 10 || tc.ExecutionSummary.CheckpointsCreated < 10 {
		t.Fatalf("summary %+v", tc.ExecutionSummary)
	}
	// No refusal but for stale readings, which the executor tries again on
	// a new snapshot (a loaded machine); the session completed only if that
	// try was accepted.
	for _, e := range b.Audit.All() {
		if e.Decision == envelope.DecisionRefused && e.Rule != envelope.RuleStale {
			t.Errorf("refused: %+v", e)
		}
	}
}

func TestSimAbortMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end against the simulator")
	}
	h, b := simHarness(t)
	ctx := context.Background()
	res, apr := pendingSubmit(t, h)
	if err := h.e.Approve(ctx, apr, "olga"); err != nil {
		t.Fatal(err)
	}
	// Abort once the furnace heats (ramp).
	deadline := time.Now().Add(30 * time.Second)
	for !b.Monitor.Readings().Furnace.HeaterEnabled {
		if time.Now().After(deadline) {
			t.Fatal("heater never on")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.e.Abort(ctx, res.SessionID, "caller changed its mind"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, res.SessionID, lifecycle.Aborted)
	evs := events(t, h.out.of(res.SessionID, res.Replies))
	contiguous(t, evs)
	last := evs[len(evs)-1]
	if last.EventType != "session_closed" || !strings.Contains(string(last.Data), `"ABORTED"`) {
		t.Fatalf("last event %s %s", last.EventType, last.Data)
	}
	// The rig ends safe: heater off, reactive gas off, and the carrier
	// closed after its purge (nobody owns the rig after an abort: argon
	// left flowing would run the cylinder empty).
	deadline = time.Now().Add(10 * time.Second)
	for {
		r := b.Monitor.Readings()
		if !r.Furnace.HeaterEnabled && r.Flows["H2S"].Setpoint == 0 && !r.Switches["h2s_valve"].On &&
			r.Flows["Ar"].Setpoint == 0 && !r.Switches["ar_valve"].On {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rig not safe after abort: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTerminal waits for id to reach a terminal state and returns it.
func (h *harness) waitTerminal(t testing.TB, id string) lifecycle.State {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := h.e.State(context.Background(), id)
		if err == nil && st.Terminal() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s in %s (%v), not ended", id, st, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exposureRatio and overgrown judge a run by the plant against the default
// recipe's plan (hilbench.Overgrown).
func exposureRatio(snap plant.Snapshot) float64 {
	return hilbench.ExposureRatio(snap, hilbench.SeedExposure)
}

func overgrown(snap plant.Snapshot) bool {
	return hilbench.Overgrown(snap, hilbench.SeedExposure)
}

// checkRecipeIdentity: the session's task_accepted names the recipe x runs
// (name, version, sha256), and its audit has the recipe entry.
func checkRecipeIdentity(t *testing.T, h *harness, sid string, msgs []*wire.Envelope, x *executor.RecipeExecutor) {
	t.Helper()
	want, err := x.Identity("")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range msgs {
		if acc, err := m.TaskAccepted(); err == nil {
			found = true
			if r := acc.Recipe; r == nil || r.Name != want.Name || r.Version != want.Version || r.SHA256 != want.SHA256 {
				t.Errorf("task_accepted recipe %+v, want %+v", r, want)
			}
		}
	}
	if !found {
		t.Error("no task_accepted")
	}
	es, err := h.st.Audit().Replay(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Kind == audit.KindRecipe && strings.Contains(e.Detail, want.SHA256) {
			return
		}
	}
	t.Errorf("no recipe entry with %s in the session's audit", want.SHA256)
}
