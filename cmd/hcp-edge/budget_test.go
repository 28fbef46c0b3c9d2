package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/session/budget"
)

// budgetTask writes the seed's task (configs/examples/mos2-task.json) with
// constraints.budgets set to budgets and returns its path.
func budgetTask(t *testing.T, budgets string) string {
	t.Helper()
	data, err := os.ReadFile(seedTask)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	p := env["payload"].(map[string]any)
	c, _ := p["constraints"].(map[string]any)
	if c == nil {
		c = map[string]any{}
		p["constraints"] = c
	}
	var b any
	if err := json.Unmarshal([]byte(budgets), &b); err != nil {
		t.Fatal(err)
	}
	c["budgets"] = b
	out, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBudgetOverrunThroughDaemon runs the seed's synthesis through the
// daemon with the shipped configuration (configs/sim.yaml and the shipped
// capability policy) and a task that asks for at most 1 scc of H2S: status
// and sessions show its live usage while it runs; once growth has let more
// H2S through it fails with budget_exceeded naming H2S, and the rig is left
// safe.
func TestBudgetOverrunThroughDaemon(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator")
	}
	e := newEnv(t, nil)
	e.start()
	e.arm()
	watch := e.cliAsync("submit", budgetTask(t, `{"gas_volume_scc":{"H2S":1}}`), "--watch")
	p := e.waitSession("pending", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
	e.mustCLI("approve", p.ApprovalID, "--operator", "olga")
	running := e.waitSession("running with budgets", func(s sessionView) bool {
		return s.ID == p.ID && s.State == "RUNNING" && s.Budgets != nil
	})
	var h2s *budget.Line
	for i, l := range running.Budgets.Lines {
		if l.Budget == budget.GasVolume && l.Gas == "H2S" {
			h2s = &running.Budgets.Lines[i]
		}
	}
	if h2s == nil || h2s.Limit == nil || *h2s.Limit != 1 {
		t.Fatalf("sessions --json budgets %+v", running.Budgets)
	}
	if tbl := e.mustCLI("sessions"); !strings.Contains(tbl.stdout, "BUDGET") {
		t.Fatalf("sessions table:\n%s", tbl.stdout)
	}
	if st := e.mustCLI("status"); !strings.Contains(st.stdout, p.ID) || !strings.Contains(st.stdout, "gas_volume.H2S") {
		t.Fatalf("status while the session runs:\n%s", st.stdout)
	}
	var r result
	select {
	case r = <-watch:
	case <-time.After(2 * time.Minute):
		t.Fatal("submit --watch did not end")
	}
	fin := decodeFinal(t, r)
	tf, err := fin.TaskFailed()
	if err != nil || r.code != exitFailure {
		t.Fatalf("final %s (exit %d): %v\n%s", fin.Type, r.code, err, r.stderr)
	}
	var det struct {
		Budget *budget.ExceededError `json:"budget"`
	}
	if err := json.Unmarshal(tf.ErrorDetails, &det); err != nil || tf.ErrorCode != budget.Code || det.Budget == nil ||
		det.Budget.Gas != "H2S" || det.Budget.Used <= 1 {
		t.Fatalf("task_failed %s %s %s: %v", tf.ErrorCode, tf.ErrorMessage, tf.ErrorDetails, err)
	}
	t.Logf("%s: %s", tf.ErrorCode, tf.ErrorMessage)
	deadline := time.Now().Add(hangGuard)
	for {
		s := e.p.Snapshot()
		if !s.Furnace.HeaterEnable && !s.Coils["h2s_valve"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rig not safe after the overrun: heater %v h2s_valve %v", s.Furnace.HeaterEnable, s.Coils["h2s_valve"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
}
