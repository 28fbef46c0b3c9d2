package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/internal/syncbuf"
)

// logEntries decodes audit log --json (JSON Lines).
func logEntries(t *testing.T, out string) []auditaccess.LogEntry {
	t.Helper()
	var es []auditaccess.LogEntry
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var e auditaccess.LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		es = append(es, e)
	}
	return es
}

// checkAuditLogOfOperators is the end of TestOperatorsFromTheKernel, the
// safety officer's question after it: cleo (no role) tried approve and
// reset and was refused, root reset the latch. cleo herself reads it (the
// log needs no role), by her uid and outcome, with her OS user.
func checkAuditLogOfOperators(t *testing.T, e *env, exe string, cleo osUser) {
	t.Helper()
	e.mustCLI("reset", "--operator", "root")
	r := e.cliAs(cleo, exe, "audit", "log", "--uid", strconv.FormatUint(uint64(cleo.uid), 10), "--outcome", "refused", "--json")
	if r.code != 0 {
		t.Fatalf("audit log as cleo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ops := map[string]bool{}
	var last uint64
	for _, en := range logEntries(t, r.stdout) {
		if en.UID == nil || *en.UID != cleo.uid || en.User != cleo.name || en.Outcome != "refused" || en.Seq <= last {
			t.Fatalf("entry %+v in cleo's refusals (after #%d)", en, last)
		}
		last = en.Seq
		ops[en.Decision] = true
	}
	if !ops["approve refused"] || !ops["reset refused"] {
		t.Fatalf("cleo's refusals: %v\n%s", ops, r.stdout)
	}
	r = e.mustCLI("audit", "log", "--kind", "control", "--outcome", "done", "--since", "10m", "--json")
	var rootReset bool
	for _, en := range logEntries(t, r.stdout) {
		rootReset = rootReset || (en.Decision == "reset done" && en.UID != nil && *en.UID == 0 && en.SessionID == "")
	}
	if !rootReset {
		t.Fatalf("no reset by uid 0 in\n%s", r.stdout)
	}
	// A table, newest last; a time that does not parse is a usage error.
	if r := e.mustCLI("audit", "log", "--since", time.Now().Add(-time.Hour).Format(time.RFC3339), "--kind", "control"); !strings.Contains(r.stdout, "reset") || !strings.HasPrefix(r.stdout, "TIME") {
		t.Fatalf("audit log table:\n%s", r.stdout)
	}
	for _, bad := range [][]string{{"--since", "yesterday-ish"}, {"--until", "2026-13-01"}, {"--outcome", "maybe"}, {"--kind", "nope"}, {"--uid", "-1"}} {
		if r := e.cli(append([]string{"audit", "log"}, bad...)...); r.code != 2 || !strings.Contains(r.stderr, "hcp-edge audit log:") {
			t.Fatalf("audit log %v: exit %d\n%s%s", bad, r.code, r.stdout, r.stderr)
		}
	}
}

// checkAuditArchives follows TestStateUsageCompactThroughCLI's prune (every
// closed session, older than a millisecond): the pass archived the audit
// entries before it into state_dir/audit-archive; the chain verifies from
// the anchor and the archives join it; `audit archive` by hand moves the
// rest out; a truncated or edited archive is named by file and line, exit 1.
func checkAuditArchives(t *testing.T, e *env) {
	t.Helper()
	adir := filepath.Join(e.dir, "audit-archive")
	r := e.mustCLI("audit", "verify", "--state-dir", e.dir, "--archive", adir, "--json")
	var v auditaccess.VerifyResult
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || !v.Intact || v.Anchor == nil || len(v.Archives) != 1 || v.Archives[0].From != 1 || v.Archives[0].To != v.Anchor.Seq {
		t.Fatalf("audit verify --archive after prune: %v\n%s", err, r.stdout)
	}
	t.Logf("the prune archived entries 1..%d into %s; the chain verifies from the anchor to #%d", v.Anchor.Seq, v.Archives[0].File, v.HeadSeq)
	out := filepath.Join(t.TempDir(), "by-hand.jsonl")
	r = e.mustCLI("audit", "archive", "--before", time.Now().Add(time.Hour).Format(time.RFC3339), "--out", out, "--state-dir", e.dir)
	if !strings.Contains(r.stdout, "archived entries") {
		t.Fatalf("audit archive: %s", r.stdout)
	}
	if r := e.cli("audit", "archive", "--before", "1h", "--out", out, "--state-dir", e.dir); r.code != exitFailure || !strings.Contains(r.stderr, "exists") {
		t.Fatalf("audit archive over an existing file: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.cli("audit", "archive", "--before", "soonish", "--out", out+"2", "--state-dir", e.dir); r.code != exitUsage {
		t.Fatalf("audit archive --before soonish: exit %d\n%s", r.code, r.stderr)
	}
	r = e.mustCLI("audit", "verify", "--state-dir", e.dir, "--archive", adir, out)
	if !strings.Contains(r.stdout, "chain: intact") || !strings.Contains(r.stdout, "joined from entry 1") {
		t.Fatalf("audit verify --archive, two archives:\n%s", r.stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	bad := filepath.Join(t.TempDir(), "truncated.jsonl")
	_ = os.WriteFile(bad, []byte(strings.Join(lines[:len(lines)-1], "")), 0o600)
	if r := e.cli("audit", "verify", "--state-dir", e.dir, "--archive", adir, bad); r.code != exitFailure || !strings.Contains(r.stdout, "BROKEN at "+bad) {
		t.Fatalf("a truncated archive: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	edited := strings.Replace(string(b), `\"op\"`, `\"oq\"`, 1)
	if edited == string(b) {
		edited = strings.Replace(string(b), `"kind":"`, `"kind":"x`, 1)
	}
	_ = os.WriteFile(bad, []byte(edited), 0o600)
	if r := e.cli("audit", "verify", "--state-dir", e.dir, "--archive", adir, bad); r.code != exitFailure || !strings.Contains(r.stdout, " line ") {
		t.Fatalf("an edited archive: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestAuditLogFollow: `audit log --follow` prints the entries appended
// after it started, as they come, until interrupted.
func TestAuditLogFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("a daemon (~3 s)")
	}
	t.Parallel()
	e := newEnv(t, nil)
	e.start()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "audit", "log", "--follow", "--kind", "control", "--json", "--since", "1m")
	cmd.Env = e.environ()
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // its first answer
	e.arm()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"decision":"arm done"`) {
		if time.Now().After(deadline) {
			t.Fatalf("audit log --follow did not print the arming:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("audit log --follow after SIGINT: %v\n%s", err, out.String())
	}
	es := logEntries(t, out.String())
	for i := 1; i < len(es); i++ {
		if es[i].Seq <= es[i-1].Seq {
			t.Fatalf("entry %d after %d: printed twice or out of order", es[i].Seq, es[i-1].Seq)
		}
	}
}
