package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/device/catalog"
	"hcp-edge/session/executor"
	"hcp-edge/transport/wire"
)

// seedTask is the seed's MoS2 task_submit as the local operator sends it.
const seedTask = "../../configs/examples/mos2-task.json"

// cliAsync runs hcp-edge in the background (hang guard 2 min); the result
// arrives on the channel.
func (e *env) cliAsync(args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = e.environ()
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		t0 := time.Now()
		err := cmd.Run()
		r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(t0), code: cmd.ProcessState.ExitCode()}
		if err != nil && cmd.ProcessState == nil {
			r.code, r.stderr = -1, err.Error()
		}
		ch <- r
	}()
	return ch
}

// arm arms the interlock as the operator tess would at the rig, and waits
// for the relay to read back energised (the recipe's preflight checks the
// relay feedback). On a loaded machine an instrument
// may be unread for longer than the comms-loss window when the daemon has
// just started (or just after a reset), and the interlock refuses to arm
// (a comms_loss trip condition holds) or the monitor latches: the operator
// waits, resets and arms again, until the hang guard.
func (e *env) arm() {
	e.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for try := 1; ; try++ {
		r := e.cli("arm", "--operator", "tess")
		if r.code == 0 && e.energised(deadline) {
			return
		}
		if r.code == 0 {
			r = e.cli("arm", "--operator", "tess") // latched again before the relay read back: its refusal
		}
		if !strings.Contains(r.stdout+r.stderr, "latched") || time.Now().After(deadline) {
			e.t.Fatalf("arm (try %d): exit %d: %s%s", try, r.code, r.stdout, r.stderr)
		}
		e.t.Logf("arm try %d refused: %s", try, strings.TrimSpace(r.stdout+r.stderr))
		time.Sleep(500 * time.Millisecond)
		if r := e.cli("reset", "--operator", "tess"); r.code != 0 && time.Now().After(deadline) {
			e.t.Fatalf("reset: exit %d: %s", r.code, r.stderr)
		}
	}
}

// energised waits for the relay to read back energised (true), or for the
// monitor to latch first (false; the caller resets and arms again).
func (e *env) energised(deadline time.Time) bool {
	e.t.Helper()
	for {
		st := e.mustCLI("status", "--json").stdout
		switch {
		case strings.Contains(st, `"relay": "energised"`):
			return true
		case strings.Contains(st, `"latched": true`):
			return false
		case time.Now().After(deadline):
			e.t.Fatalf("relay never read back energised:\n%s", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sessionsJSON is hcp-edge sessions --all --json.
func (e *env) sessionsJSON() []sessionView {
	e.t.Helper()
	r := e.mustCLI("sessions", "--all", "--json")
	var out []sessionView
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		e.t.Fatalf("sessions --json: %v\n%s", err, r.stdout)
	}
	return out
}

// waitSession polls sessions until ok accepts one (hang guard).
func (e *env) waitSession(what string, ok func(sessionView) bool) sessionView {
	e.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		for _, s := range e.sessionsJSON() {
			if ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no session %s: %+v", what, e.sessionsJSON())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func decodeFinal(t *testing.T, r result) *wire.Envelope {
	t.Helper()
	env, err := wire.Decode([]byte(r.stdout))
	if err != nil {
		t.Fatalf("final message: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	return env
}

// TestMoS2ThroughCLI: the seed's task submitted with submit --watch, R3 so
// pending, approved with approve, completes with a monolayer; its outputs
// validate; artifact get copies each artifact and verifies its checksum,
// and refuses a tampered one.
func TestMoS2ThroughCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator (~25 s)")
	}
	t.Parallel() // its own rig and state: runs beside the other whole-recipe tests
	e := newEnv(t, nil)
	e.start()
	e.arm()
	t0 := time.Now()
	watch := e.cliAsync("submit", seedTask, "--watch")
	pending := e.waitSession("pending approval", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
	if pending.Risk != "R3" || pending.Caller != "local" || pending.Capability != executor.CVDName {
		t.Fatalf("pending session %+v, want R3 by local", pending)
	}
	// Approving by the approval id; the operator is required.
	if r := e.cli("approve", pending.ApprovalID); r.code != exitUsage {
		t.Fatalf("approve without --operator: exit %d", r.code)
	}
	e.mustCLI("approve", pending.ApprovalID, "--operator", "olga")
	running := e.waitSession("running with progress", func(s sessionView) bool {
		return s.ID == pending.ID && s.State == "RUNNING" && s.Progress != nil
	})
	t.Logf("running: %s", running.Progress.Stage)
	var r result
	select {
	case r = <-watch:
	case <-time.After(2 * time.Minute):
		t.Fatal("submit --watch did not end")
	}
	t.Logf("submit --watch: exit %d after %v", r.code, time.Since(t0).Round(time.Millisecond))
	if r.code != exitOK {
		t.Fatalf("submit --watch: exit %d\n%s\n%s", r.code, r.stderr, r.stdout)
	}
	// Not a terminal: plain lines, one per message, no carriage returns.
	if strings.Contains(r.stderr, "\r") || !strings.Contains(r.stderr, "progress heating") || !strings.Contains(r.stderr, "approval_pending") {
		t.Fatalf("watch output is not plain lines:\n%s", r.stderr)
	}
	fin := decodeFinal(t, r)
	tc, err := fin.TaskCompleted()
	if err != nil {
		t.Fatalf("final %s: %v", fin.Type, err)
	}
	var out map[string]any
	if err := json.Unmarshal(tc.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	if out["layer_count"] != 1.0 {
		t.Fatalf("layer_count %v, want 1 (outputs %v)", out["layer_count"], out)
	}
	var sub wire.Envelope
	data, _ := os.ReadFile(seedTask)
	if err := json.Unmarshal(data, &sub); err != nil {
		t.Fatal(err)
	}
	ts, _ := sub.TaskSubmit()
	eo := ts.ExpectedOutput
	if err := executor.ValidateOutputs(out, &executor.ExpectedOutput{RequiredFields: eo.RequiredFields, Schema: eo.Schema}); err != nil {
		t.Fatal(err)
	}
	if len(tc.Artifacts) == 0 {
		t.Fatal("no artifacts")
	}
	dir := t.TempDir()
	for _, a := range tc.Artifacts {
		dst := filepath.Join(dir, a.Name)
		r := e.mustCLI("artifact", "get", a.URI, "-o", dst, "--json")
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(got)
		if "sha256:"+hex.EncodeToString(sum[:]) != a.Checksum || int64(len(got)) != a.SizeBytes {
			t.Fatalf("artifact %s: copy does not match %+v\n%s", a.URI, a, r.stdout)
		}
	}
	// A tampered artifact is refused and not copied.
	a := tc.Artifacts[0]
	sid, name, err := parseArtifactURI(a.URI)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, artifactsDir, sid, name), []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "tampered")
	if r := e.cli("artifact", "get", a.URI, "-o", dst); r.code != exitFailure || !strings.Contains(r.stderr, "does not match") {
		t.Fatalf("tampered artifact: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("tampered copy left behind: %v", err)
	}
	if r := e.cli("artifact", "get", "hcp://"+sid+"/artifacts/../state.db"); r.code != exitUsage {
		t.Fatalf("path traversal: exit %d", r.code)
	}
	done := e.waitSession("completed", func(s sessionView) bool { return s.ID == pending.ID && s.State == "COMPLETED" })
	if done.Operator != "olga" {
		t.Fatalf("operator %q, want olga", done.Operator)
	}
	// The analysis was a call of the compute tool raman.analyze through
	// the tool pipeline: its statistics are with the rig tools'.
	var tools reply.Tools
	if err := json.Unmarshal([]byte(e.mustCLI("tools", "--json").stdout), &tools); err != nil {
		t.Fatal(err)
	}
	analysed := false
	for _, tl := range tools.Tools {
		analysed = analysed || (tl.Tool == catalog.ToolAnalyze && tl.Calls >= 1 && tl.Succeeded == tl.Calls)
	}
	if !analysed {
		t.Fatalf("no successful raman.analyze call in the tool statistics: %+v", tools.Tools)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
}

// TestDenyAbortAndSessions: deny through the CLI (the watcher gets
// task_rejected, exit 1), abort mid-run (session_closed ABORTED, exit 1, the
// rig safe), sessions as a table and as JSON, and the usage errors.
func TestDenyAbortAndSessions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("sessions against the simulator")
	}
	e := newEnv(t, nil)
	e.start()
	if r := e.mustCLI("sessions"); !strings.Contains(r.stdout, "no sessions") {
		t.Fatalf("sessions on a fresh daemon:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"deny", "x", "--operator", "o"}, {"approve"}, {"submit"}, {"submit", "/nonexistent"}, {"artifact", "get", "nope"}} {
		if r := e.cli(args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
	if r := e.cli("approve", "apr-none", "--operator", "o"); r.code != exitFailure || !strings.Contains(r.stderr, "no such") {
		t.Fatalf("approve unknown: exit %d %s", r.code, r.stderr)
	}

	// Deny.
	watch := e.cliAsync("submit", seedTask, "--watch")
	p := e.waitSession("pending", func(s sessionView) bool { return s.State == "PENDING" })
	e.mustCLI("deny", p.ID, "--operator", "olga", "--reason", "furnace booked")
	r := <-watch
	fin := decodeFinal(t, r)
	rej, err := fin.TaskRejected()
	if r.code != exitFailure || err != nil || rej.ReasonCode != "forbidden" || !strings.Contains(rej.ReasonMessage, "furnace booked") {
		t.Fatalf("denied: exit %d %+v %v\n%s", r.code, rej, err, r.stderr)
	}

	// Abort mid-run: submit without --watch prints the approval id.
	e.arm()
	r = e.mustCLI("submit", seedTask)
	var sr submitResult
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || sr.ApprovalID == "" || sr.SessionID == "" {
		t.Fatalf("submit: %v %+v\n%s", err, sr, r.stdout)
	}
	e.mustCLI("approve", sr.ApprovalID, "--operator", "olga")
	e.waitSession("heating", func(s sessionView) bool {
		return s.ID == sr.SessionID && s.Progress != nil && (s.Progress.Stage == "heating" || s.Progress.Stage == "material_growth")
	})
	tbl := e.mustCLI("sessions")
	if !strings.Contains(tbl.stdout, sr.SessionID) || !strings.Contains(tbl.stdout, "RUNNING") || !strings.Contains(tbl.stdout, "CAPABILITY") {
		t.Fatalf("sessions table:\n%s", tbl.stdout)
	}
	e.mustCLI("abort", sr.SessionID, "--reason", "wrong substrate")
	e.waitSession("aborted", func(s sessionView) bool { return s.ID == sr.SessionID && s.State == "ABORTED" })
	if r := e.cli("abort", sr.SessionID); r.code != exitFailure {
		t.Fatalf("abort of a closed session: exit %d", r.code)
	}
	deadline := time.Now().Add(hangGuard)
	for {
		s := e.p.Snapshot()
		if !s.Furnace.HeaterEnable && !s.Coils["h2s_valve"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rig not safe after the abort: heater %v h2s_valve %v", s.Furnace.HeaterEnable, s.Coils["h2s_valve"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	all := e.sessionsJSON()
	if len(all) != 2 || all[0].State != "REJECTED" || all[1].State != "ABORTED" {
		t.Fatalf("sessions --all --json: %+v", all)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
}

// submitSeedApproved submits the seed's MoS2 task over the local CLI
// (submit --watch), approves it as operator olga once it is pending, and
// returns the watch's result once the session has ended with exit 0 within
// limit (the test fails otherwise).
func (e *env) submitSeedApproved(limit time.Duration) result {
	e.t.Helper()
	watch := e.cliAsync("submit", seedTask, "--watch")
	pending := e.waitSession("pending approval", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
	e.mustCLI("approve", pending.ApprovalID, "--operator", "olga")
	var r result
	select {
	case r = <-watch:
	case <-time.After(limit):
		e.t.Fatal("submit --watch did not end")
	}
	if r.code != exitOK {
		e.t.Fatalf("submit --watch: exit %d\n%s\n%s", r.code, r.stderr, r.stdout)
	}
	return r
}
