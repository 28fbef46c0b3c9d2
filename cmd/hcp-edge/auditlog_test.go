package main

import (
	"bufio"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/auditaccess"
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
