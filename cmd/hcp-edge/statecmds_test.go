package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/session/executor"
	"hcp-edge/transport/wire"
)

// stateUsageJSON is the part of `state usage --json` the tests read.
type stateUsageJSON struct {
	Path  string `json:"state_file"`
	State struct {
		FileBytes int64 `json:"file_bytes"`
		FreeBytes int64 `json:"free_bytes"`
		Buckets   []struct {
			Name  string `json:"name"`
			Keys  int    `json:"keys"`
			Bytes int64  `json:"bytes"`
		} `json:"buckets"`
		Classes []struct {
			Class    string `json:"class"`
			Sessions int    `json:"sessions"`
			Closed   int    `json:"closed"`
			Bytes    int64  `json:"bytes"`
		} `json:"classes"`
	} `json:"state"`
	Artifacts int64 `json:"artifacts_bytes"`
	Results   int64 `json:"results_bytes"`
}

// inUse is the bytes of the pages in use by every bucket.
func (u stateUsageJSON) inUse() int64 {
	var n int64
	for _, b := range u.State.Buckets {
		n += b.Bytes
	}
	return n
}

// delta is the growth per session of each bucket from a to b over n
// sessions, for the log.
func delta(a, b stateUsageJSON, n int) string {
	was := map[string]int64{}
	for _, x := range a.State.Buckets {
		was[x.Name] = x.Bytes
	}
	var parts []string
	for _, x := range b.State.Buckets {
		if d := (x.Bytes - was[x.Name]) / int64(n); d != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", x.Name, d))
		}
	}
	return strings.Join(parts, ", ")
}

func (u stateUsageJSON) sessions() int {
	n := 0
	for _, c := range u.State.Classes {
		n += c.Sessions
	}
	return n
}

func (e *env) stateUsage(args ...string) stateUsageJSON {
	e.t.Helper()
	r := e.mustCLI(append([]string{"state", "usage", "--json"}, args...)...)
	var u stateUsageJSON
	if err := json.Unmarshal([]byte(r.stdout), &u); err != nil {
		e.t.Fatalf("state usage --json: %v\n%s", err, r.stdout)
	}
	return u
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestStateUsageCompactThroughCLI: the real binary against the simulator.
// A leak check (with its plot artifact) and N rig-status sessions
// (HCP_STATE_GROWTH_N, default 20) give the growth per session; `state
// usage` answers through the running daemon; `state compact` is refused
// while the daemon holds the file (exit 1, the file unchanged); with the
// daemon stopped, `state prune` removes every closed session (records,
// artifacts, results), `audit verify` still passes, `state compact`
// shrinks the pruned file (sizes in the log), a damaged copy is refused
// unchanged, and the daemon starts on the compacted file and runs a
// session.
func TestStateUsageCompactThroughCLI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the daemon against the simulator")
	}
	n := 20
	if s := os.Getenv("HCP_STATE_GROWTH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("HCP_STATE_GROWTH_N=%q", s)
		}
	}
	e := newEnv(t, nil)
	e.start()
	stateFile := filepath.Join(e.dir, "state.db")
	u0 := e.stateUsage()
	if u0.Path != stateFile || len(u0.State.Buckets) == 0 {
		t.Fatalf("state usage through the daemon: %+v", u0)
	}
	if r := e.mustCLI("state", "usage"); !strings.Contains(r.stdout, "measured by the running daemon") || !strings.Contains(r.stdout, "BUCKET") {
		t.Fatalf("state usage:\n%s", r.stdout)
	}

	e.arm()
	leak := localTask(t, executor.LeakCheckName, `{"max_rate_of_rise_pa_per_min":10,"hold_seconds":30}`)
	if r := e.cli("submit", leak, "--watch"); decodeFinal(t, r).Type != wire.TypeTaskCompleted {
		t.Fatalf("leak-check did not complete: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	u1 := e.stateUsage()
	rs := localTask(t, executor.RigStatusName, `{}`)
	for i := range n {
		if r := e.cli("submit", rs, "--watch"); decodeFinal(t, r).Type != wire.TypeTaskCompleted {
			t.Fatalf("rig-status %d did not complete: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	u2 := e.stateUsage()
	t.Logf("growth: leak-check %d bytes in use (%s), %d of artifacts; rig-status %d bytes in use per session (n=%d: %s); file %d bytes at %d sessions",
		u1.inUse()-u0.inUse(), delta(u0, u1, 1), u1.Artifacts, (u2.inUse()-u1.inUse())/int64(n), n, delta(u1, u2, n), u2.State.FileBytes, n+1)
	// HCP_STATE_GROWTH_MOS2=k adds k approved MoS2 runs (~25 s each) to
	// the measurement (docs/STATE.md's figures).
	k, _ := strconv.Atoi(os.Getenv("HCP_STATE_GROWTH_MOS2"))
	for range k {
		watch := e.cliAsync("submit", mos2Task(t), "--watch")
		p := e.waitSession("pending approval", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
		e.mustCLI("approve", p.ApprovalID, "--operator", "olga")
		// A run on a plant whose precursor earlier runs used may grow the
		// wrong film and fail: it wrote the same, it counts.
		if r := <-watch; decodeFinal(t, r).Type != wire.TypeTaskCompleted && decodeFinal(t, r).Type != wire.TypeTaskFailed {
			t.Fatalf("MoS2 did not end: exit %d\n%s", r.code, r.stderr)
		}
	}
	if k > 0 {
		u := e.stateUsage()
		t.Logf("growth: MoS2 %d bytes in use per session (k=%d: %s), %d of artifacts per session; file %d bytes",
			(u.inUse()-u2.inUse())/int64(k), k, delta(u2, u, k), (u.Artifacts-u2.Artifacts)/int64(k), u.State.FileBytes)
		n += k
		u2 = u
	}
	if u2.sessions() != n+1 || u2.Artifacts == 0 || u2.Results == 0 {
		t.Fatalf("after %d sessions: %d sessions, artifacts %d, results %d bytes", n+1, u2.sessions(), u2.Artifacts, u2.Results)
	}

	// The daemon holds the file: compact is refused, the file unchanged.
	before, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	r := e.cli("state", "compact")
	if r.code != 1 || !strings.Contains(r.stderr, "in use") || !strings.Contains(r.stderr, "stop the daemon") {
		t.Fatalf("compact with the daemon running: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(stateFile + ".compact"); err == nil {
		t.Fatal("a copy was left beside the state file")
	}
	if err := e.stop(); err != nil {
		t.Fatalf("daemon stop: %v\n%s", err, e.logs)
	}
	if after, _ := os.ReadFile(stateFile); len(after) != len(before) {
		t.Fatalf("the refused compact changed the file: %d → %d bytes", len(before), len(after))
	}

	// Daemon stopped: prune every closed session (closed before now).
	r = e.mustCLI("state", "prune", "--older-than", "PT0.001S", "--json")
	var pr struct {
		Report struct {
			Pruned []struct {
				SessionID string `json:"session_id"`
				Artifacts int    `json:"artifacts"`
				Results   bool   `json:"results"`
			} `json:"pruned"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &pr); err != nil || len(pr.Report.Pruned) != n+1 {
		t.Fatalf("state prune: %v\n%s", err, r.stdout)
	}
	arts := 0
	for _, p := range pr.Report.Pruned {
		arts += p.Artifacts
		if !p.Results {
			t.Errorf("session %s: no result copy removed", p.SessionID)
		}
	}
	if arts == 0 {
		t.Error("no artifact removed (the leak check has a plot)")
	}
	u3 := e.stateUsage("--state-dir", e.dir)
	if u3.sessions() != 0 || u3.Artifacts != 0 || u3.Results != 0 || u3.State.FreeBytes == 0 {
		t.Fatalf("after prune: %d sessions, artifacts %d, results %d, free %d", u3.sessions(), u3.Artifacts, u3.Results, u3.State.FreeBytes)
	}
	if r := e.mustCLI("audit", "verify", "--state-dir", e.dir); !strings.Contains(r.stdout, "chain: intact") {
		t.Fatalf("audit verify after prune:\n%s", r.stdout)
	}
	if r := e.mustCLI("audit", "replay", pr.Report.Pruned[0].SessionID, "--state-dir", e.dir); !strings.Contains(r.stdout, "retention") {
		t.Fatalf("audit replay of a pruned session does not show its removal:\n%s", r.stdout)
	}

	// A damaged copy: refused, unchanged.
	dmg := t.TempDir()
	b, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	for i := 4 * 4096; i+48 < len(b); i += 4096 {
		copy(b[i+16:i+48], bytes.Repeat([]byte{0xA5}, 32))
	}
	if err := os.WriteFile(filepath.Join(dmg, "state.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	r = e.cli("state", "compact", "--state-dir", dmg)
	if r.code != 1 || !strings.Contains(r.stderr, "damaged") || !strings.Contains(r.stderr, "not changed") {
		t.Fatalf("compact of a damaged file: exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dmg, "state.db")); !bytes.Equal(got, b) {
		t.Fatal("the damaged file was changed")
	}

	// Compact the pruned file.
	sizeBefore := fileSize(t, stateFile)
	r = e.mustCLI("state", "compact", "--json")
	var cr struct {
		Before int64 `json:"before_bytes"`
		After  int64 `json:"after_bytes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cr); err != nil {
		t.Fatalf("state compact --json: %v\n%s", err, r.stdout)
	}
	t.Logf("state compact of the pruned file: %d → %d bytes (pages in use before the prune: %d)", cr.Before, cr.After, u2.inUse())
	if cr.Before != sizeBefore || cr.After >= cr.Before || fileSize(t, stateFile) != cr.After {
		t.Fatalf("compact did not shrink the file: %+v (file %d)", cr, fileSize(t, stateFile))
	}
	if r := e.mustCLI("audit", "verify", "--state-dir", e.dir); !strings.Contains(r.stdout, "chain: intact") {
		t.Fatalf("audit verify after compact:\n%s", r.stdout)
	}

	// The daemon starts on the compacted file (its start checks it) and runs a session.
	e2 := *e // a daemon of its own for the cleanup to stop
	e2.stopped = false
	e2.start()
	if r := e2.cli("submit", rs, "--watch"); decodeFinal(t, r).Type != wire.TypeTaskCompleted {
		t.Fatalf("rig-status on the compacted file: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := e2.mustCLI("audit", "verify"); !strings.Contains(r.stdout, "chain: intact") {
		t.Fatalf("audit verify through the restarted daemon:\n%s", r.stdout)
	}
	if err := e2.stop(); err != nil {
		t.Fatalf("daemon stop: %v\n%s", err, e2.logs)
	}
	checkAuditArchives(t, e) // auditlog_test.go: what the prune archived, and audit archive by hand
}

// TestStateFlags: -h on every state verb prints its usage and exits 0;
// usage errors exit 2 with the problem on stderr; an empty state directory
// exits 1 naming the missing file.
func TestStateFlags(t *testing.T) {
	for _, v := range [][]string{{"state"}, {"state", "usage"}, {"state", "compact"}, {"state", "prune"}} {
		var out, errb bytes.Buffer
		args := append(append([]string{}, v...), "-h")
		if code := run(context.Background(), args, &out, &errb); code != exitOK || !strings.Contains(strings.ToLower(out.String()), "usage") || errb.Len() != 0 {
			t.Errorf("hcp-edge %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, firstLine(out.String()), errb.String())
		}
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"state"}, {"state", "bogus"}, {"state", "usage", "x"}, {"state", "compact", "--nope"},
		{"state", "prune", "--older-than", "P0D", "--state-dir", dir}, {"state", "prune", "--older-than", "30d", "--state-dir", dir}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != exitUsage || errb.Len() == 0 {
			t.Errorf("hcp-edge %s: exit %d, stderr %q; want 2", strings.Join(args, " "), code, errb.String())
		}
	}
	for _, args := range [][]string{{"state", "compact", "--state-dir", dir}, {"state", "usage", "--state-dir", dir}, {"state", "prune", "--state-dir", dir}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != exitFailure || !strings.Contains(errb.String(), "state.db") {
			t.Errorf("hcp-edge %s on an empty directory: exit %d, stderr %q; want 1 naming state.db", strings.Join(args, " "), code, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state.db")); err == nil {
		t.Error("a state file was created in the empty directory")
	}
}

// mos2Task is the seed's MoS2 task_submit with a message_id of its own.
func mos2Task(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(seedTask)
	if err != nil {
		t.Fatal(err)
	}
	var sub wire.Envelope
	if err := json.Unmarshal(data, &sub); err != nil {
		t.Fatal(err)
	}
	ts, err := sub.TaskSubmit()
	if err != nil {
		t.Fatal(err)
	}
	env, err := wire.NewEnvelope(nil, ts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mos2.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRetentionRefusedAtStart: a retention shorter than the longest
// max_duration of the capabilities (cvd-material-synthesis, PT72H) stops
// the daemon at start, naming the key; config check says the same.
func TestRetentionRefusedAtStart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the daemon against the simulator")
	}
	e := newEnv(t, nil)
	e.replaceInConfig("retention:\n  default: P90D\n", "retention:\n  default: PT1H\n")
	if r := e.cli("config", "check", e.cfg); r.code != exitUsage || !strings.Contains(r.stdout+r.stderr, "retention.default") {
		t.Fatalf("config check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", e.cfg)
	cmd.Env = e.environ()
	out, err := cmd.CombinedOutput()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != exitFailure || !strings.Contains(string(out), "retention.default") || !strings.Contains(string(out), "cvd-material-synthesis") {
		t.Fatalf("daemon with a 1 h retention: %v\n%s", err, out)
	}
}
