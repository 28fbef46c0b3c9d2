package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/session/capability"
	"hcp-edge/transport/wire"
)

// labRecipe is the shipped H2/Ar anneal as a lab's own recipe, under
// another name and version: with rename, its anneal phase has another
// display name (what a process log shows of a recipe's phases).
func labRecipe(t *testing.T, name, version, phase string) []byte {
	t.Helper()
	data, ok := configs.Recipes()["recipes/h2-anneal.yaml"]
	if !ok {
		t.Fatal("no shipped recipe recipes/h2-anneal.yaml")
	}
	s := string(data)
	for _, r := range [][2]string{{"name: h2-anneal", "name: " + name}, {"version: 1.0.0", "version: " + version},
		{"      name: anneal\n", "      name: " + phase + "\n"}} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("fixture: %q not in h2-anneal.yaml", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return []byte(s)
}

// withRecipesDir gives b's configuration agent.recipes_dir (recipes,
// beside the configuration file, mode 0755) and lets harness-alpha-001 run
// the lab's recipes names too. It returns the directory.
func withRecipesDir(t *testing.T, b *brokerEnv, names ...string) string {
	t.Helper()
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	const acl = "capabilities: [cvd-material-synthesis, ws2-sulfurization, h2-anneal, rig-status, leak-check]"
	s := string(cfg)
	for _, r := range [][2]string{{"  log_level: info\n", "  log_level: info\n  recipes_dir: recipes\n"},
		{acl, strings.TrimSuffix(acl, "]") + ", " + strings.Join(names, ", ") + "]"}} {
		if strings.Count(s, r[0]) != 1 {
			t.Fatalf("fixture: %q not once in the configuration", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	if err := os.WriteFile(b.cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(b.cfg), "recipes")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return dir
}

func writeRecipe(t *testing.T, dir, file string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p+".tmp", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p+".tmp", 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

// stagesOf are the stages of a completed anneal's process log.
func stagesOf(t *testing.T, fin *wire.Envelope) map[string]int {
	t.Helper()
	out := completedOutputs(t, fin)
	rows, _ := out["process_log"].([]any)
	stages := map[string]int{}
	for _, r := range rows {
		m, _ := r.(map[string]any)
		s, _ := m["stage"].(string)
		stages[s]++
	}
	return stages
}

// waitLog waits until the daemon's log holds what.
func (e *env) waitLog(what string) {
	e.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !strings.Contains(e.logs.String(), what) {
		if time.Now().After(deadline) {
			e.t.Fatalf("the daemon did not log %q:\n%s", what, e.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRecipeReloadSIGHUP: a recipe an operator adds to recipes_dir is
// offered to callers (capabilities_request through the broker) after
// SIGHUP, without a restart, and so is a new version of one; a session
// running a lab recipe when its file changes and the agent reloads is
// unaffected: it completes with the recipe it started with (its phases'
// names in its process log, its identity in task_accepted).
func TestRecipeReloadSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("a lab recipe through the broker against the simulator")
	}
	t.Parallel()
	b := newBrokerEnv(t) // skips loudly without a broker, fails under HCP_REQUIRE_PEERS=1
	dir := withRecipesDir(t, b, "lab-anneal", "lab-dry-anneal")
	writeRecipe(t, dir, "lab-anneal.yaml", labRecipe(t, "lab-anneal", "1.0.0", "anneal"))
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	b.arm()
	tap := b.tap()
	offers := b.discover(t, tap)
	if o, ok := offers["lab-anneal"]; !ok || o.Capability.Version != "1.0.0" || o.RiskFloor != "R3" {
		t.Fatalf("lab-anneal not offered at start: %+v", o)
	}
	if _, ok := offers["lab-dry-anneal"]; ok {
		t.Fatal("lab-dry-anneal offered before it exists")
	}

	r := b.startApproved(t, &wire.TaskSubmit{Capability: "lab-anneal", CallerID: b.callerID, Intent: "a lab's anneal",
		Inputs: json.RawMessage(`{"substrate":"sapphire","anneal_temperature":400,"anneal_duration":"PT10M"}`)})
	defer r.c.Close()
	// Mid-run: the operator edits the running recipe (a new version, its
	// anneal phase renamed), adds another, and reloads.
	writeRecipe(t, dir, "lab-anneal.yaml", labRecipe(t, "lab-anneal", "1.1.0", "soak"))
	writeRecipe(t, dir, "lab-dry-anneal.yaml", labRecipe(t, "lab-dry-anneal", "1.0.0", "anneal"))
	if err := b.daemon.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	b.waitLog("recipes reloaded (SIGHUP)")
	offers = b.discover(t, tap)
	if o, ok := offers["lab-dry-anneal"]; !ok || o.RiskFloor != "R3" {
		t.Fatalf("lab-dry-anneal not offered after SIGHUP: %+v", o)
	}
	if o := offers["lab-anneal"]; o.Capability.Version != "1.1.0" {
		t.Fatalf("lab-anneal offered at %q after SIGHUP, want 1.1.0", o.Capability.Version)
	}
	for _, s := range b.sessionsJSON() {
		if s.ID == r.sid && s.State != "RUNNING" {
			t.Fatalf("the running session is %s after the reload", s.State)
		}
	}

	all := r.finish(t, brokerLongGuard)
	checkStream(t, all, r.sid)
	checkRecipeAccepted(t, all, "lab-anneal")
	for _, m := range all {
		if acc, err := m.TaskAccepted(); err == nil && acc.Recipe.Version != "1.0.0" {
			t.Fatalf("task_accepted recipe %+v, want 1.0.0", acc.Recipe)
		}
	}
	stages := stagesOf(t, all[len(all)-1])
	t.Logf("process log stages: %v", stages)
	if stages["anneal"] == 0 || stages["soak"] != 0 {
		t.Fatalf("the session ran another recipe than it started with: stages %v", stages)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// TestRecipeKillEditRestart: the agent SIGKILLed mid-run (heating) of a lab recipe,
// the recipe's file edited (same name and version, its anneal phase
// renamed) before the restart: the restarted agent refuses the edited file
// (a change of content needs a new version) and the session resumes from
// its checkpoint and completes with the recipe it started with, kept in
// the state file.
func TestRecipeKillEditRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("SIGKILLs the agent mid-run of a lab recipe")
	}
	t.Parallel()
	b := newBrokerEnv(t)
	dir := withRecipesDir(t, b, "lab-anneal")
	writeRecipe(t, dir, "lab-anneal.yaml", labRecipe(t, "lab-anneal", "1.0.0", "anneal"))
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	b.arm()
	r := b.startApproved(t, &wire.TaskSubmit{Capability: "lab-anneal", CallerID: b.callerID, Intent: "a lab's anneal",
		Inputs: json.RawMessage(`{"substrate":"sapphire","anneal_temperature":500,"anneal_duration":"PT10M"}`)})
	defer r.c.Close()
	// Killed while heating: no H2 flows yet (a dead agent closes nothing,
	// and the H2 budget would count what flowed meanwhile).
	b.waitSessionFor(time.Minute, "heating", func(s sessionView) bool {
		return s.ID == r.sid && s.Progress != nil && s.Progress.Stage == "heating"
	})
	b.kill()
	writeRecipe(t, dir, "lab-anneal.yaml", labRecipe(t, "lab-anneal", "1.0.0", "soak"))
	b.env = restartEnv(b.env)
	b.waitLog("a change of content needs a new version")
	// The recovery holds a physical session until the operator has armed
	// the rig and resumes it.
	b.waitSessionFor(hangGuard, "held after the restart", func(s sessionView) bool { return s.ID == r.sid && s.State == "PAUSED" })
	b.arm()
	b.mustCLI("resume", r.sid, "--operator", "olga")

	all := r.finish(t, brokerLongGuard)
	fin := all[len(all)-1]
	stages := stagesOf(t, fin)
	t.Logf("process log stages: %v", stages)
	if stages["anneal"] == 0 || stages["soak"] != 0 {
		t.Fatalf("the session resumed with another recipe: stages %v", stages)
	}
	checkTotalsSpanRestart(t, all)
	out := b.mustCLI("audit", "replay", r.sid, "--operator", "olga").stdout
	if !strings.Contains(out, "recipe lab-anneal@1.0.0") {
		t.Fatalf("audit replay does not show the recipe:\n%s", out)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// checkTotalsSpanRestart: the execution_summary of a run interrupted by a
// restart counts both parts: every step of the recipe (the progress
// events' "step i/N"), every checkpoint its caller heard of, a duration
// of at least the wall time from RUNNING to the last checkpoint before the
// restart (the process clock runs at time_scale >= 1); and its
// risk_events list the hold after the restart.
func checkTotalsSpanRestart(t *testing.T, all []*wire.Envelope) {
	t.Helper()
	fin := all[len(all)-1]
	tc, err := fin.TaskCompleted()
	if err != nil || tc.ExecutionSummary == nil {
		t.Fatalf("final %s: %v", fin.Type, err)
	}
	sum := tc.ExecutionSummary
	ckpts := map[uint64]bool{}
	steps := 0
	var first, lastCkptBefore time.Time
	recovered := false
	for _, m := range all {
		ev, err := m.Event()
		if err != nil {
			continue
		}
		if first.IsZero() && ev.EventType == wire.EventStateChanged && strings.Contains(string(ev.Data), `"RUNNING"`) {
			first = m.Timestamp
		}
		recovered = recovered || (ev.EventType == wire.EventStateChanged && strings.Contains(string(ev.Data), "recovered_from_checkpoint"))
		switch ev.EventType {
		case wire.EventCheckpointCreated:
			ckpts[ev.Sequence] = true
			if !recovered {
				lastCkptBefore = m.Timestamp
			}
		case wire.EventProgress:
			var p struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(ev.Data, &p)
			var i, n int
			if _, err := fmt.Sscanf(p.Message, "step %d/%d", &i, &n); err == nil {
				steps = n
			}
		}
	}
	took, err := capability.ParseDuration(sum.Duration)
	if err != nil || steps == 0 || sum.StepsExecuted != steps || sum.CheckpointsCreated != len(ckpts) ||
		!recovered || took < lastCkptBefore.Sub(first) {
		t.Fatalf("summary %+v (%v): want %d steps, %d checkpoints, at least %v before the restart (recovered %t)",
			sum, err, steps, len(ckpts), lastCkptBefore.Sub(first), recovered)
	}
	held := false
	for _, r := range sum.RiskEvents {
		held = held || strings.Contains(r, " interlock_hold: ")
	}
	if !held {
		t.Fatalf("risk_events %q: no interlock_hold", sum.RiskEvents)
	}
	t.Logf("execution_summary across the restart: %+v", sum)
}
