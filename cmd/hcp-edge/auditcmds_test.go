package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
	"hcp-edge/transport/wire"
)

// TestAuditUsage: usage errors exit 2; a state directory without a state
// file exits 1, naming it.
func TestAuditUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"audit"}, {"audit", "bogus"}, {"audit", "verify", "extra"}, {"audit", "replay"},
		{"audit", "replay", "a", "b"}, {"audit", "verify", "--nope"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, errb.String())
		}
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"audit", "verify", "--state-dir", dir}, &out, &errb)
	if code != exitFailure || !strings.Contains(errb.String(), "no state file") {
		t.Fatalf("empty state dir: exit %d\n%s", code, errb.String())
	}
}

// auditSeqOf returns the sequence number of the first audit entry of file
// whose stored value contains s.
func auditSeqOf(t *testing.T, file, s string) uint64 {
	t.Helper()
	db, err := bolt.Open(file, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seq uint64
	_ = db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte("audit")).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if bytes.Contains(v, []byte(s)) {
				seq = binary.BigEndian.Uint64(k)
				return nil
			}
		}
		return nil
	})
	if seq == 0 {
		t.Fatalf("no audit entry contains %q", s)
	}
	return seq
}

// TestAuditThroughCLI: after the seed's MoS2 session (approved by olga),
// audit verify through the running daemon is intact; artifact get of the
// T2 session leaves a data_access entry naming the reader; audit replay
// shows the transitions with olga's approval and the access; with the
// daemon stopped, verify reads the state file read-only; an audit entry
// edited in a copy of the state file makes verify exit 1 naming its
// sequence number.
func TestAuditThroughCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator (~25 s)")
	}
	t.Parallel() // its own rig and state: runs beside the other whole-recipe tests
	e := newEnv(t, nil)
	e.start()
	e.arm()
	r := e.mustCLI("submit", seedTask)
	var sr submitResult
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || sr.ApprovalID == "" {
		t.Fatalf("submit: %v %+v\n%s", err, sr, r.stdout)
	}
	e.mustCLI("approve", sr.ApprovalID, "--operator", "olga")
	done := e.waitSessionFor(2*time.Minute, "completed", func(s sessionView) bool { return s.ID == sr.SessionID && s.State == "COMPLETED" })
	if done.DataClass != "T2" {
		t.Fatalf("session %+v, want data classification T2", done)
	}

	// Verify through the daemon, which holds the state file.
	r = e.mustCLI("audit", "verify")
	if !strings.Contains(r.stdout, "chain: intact") || !strings.Contains(r.stdout, "running daemon") {
		t.Fatalf("audit verify:\n%s", r.stdout)
	}
	var v auditVerifyResult
	if err := json.Unmarshal([]byte(e.mustCLI("audit", "verify", "--json").stdout), &v); err != nil || !v.Intact || v.Via != viaDaemon || v.Checked == 0 || v.Checked != v.HeadSeq {
		t.Fatalf("audit verify --json: %+v %v", v, err)
	}
	// The safety report, through the daemon: olga's approval, the operator's
	// arming, and the envelope version the interlock's entries name.
	r = e.mustCLI("audit", "report", "--since", "1h", "--json")
	var rep audit.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Totals.Approvals < 1 || rep.Totals.Overrides < 1 ||
		len(rep.Envelopes) != 1 || !strings.HasPrefix(rep.Envelopes[0], "sha256:") {
		t.Fatalf("audit report --json: %v\n%s", err, r.stdout)
	}
	r = e.mustCLI("audit", "report", "--since", "1h")
	t.Logf("audit report:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "olga") {
		t.Fatalf("audit report lacks the approver:\n%s", r.stdout)
	}
	// --state-dir naming the daemon's own (locked) file is served by it.
	r = e.mustCLI("audit", "verify", "--state-dir", e.dir)
	if !strings.Contains(r.stdout, "running daemon") {
		t.Fatalf("audit verify --state-dir (locked):\n%s", r.stdout)
	}

	// artifact get of the T2 session is recorded with its reader.
	b, err := os.ReadFile(filepath.Join(e.dir, resultsDir, sr.SessionID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	fin, err := wire.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := fin.TaskCompleted()
	if err != nil || len(tc.Artifacts) == 0 {
		t.Fatalf("final %s: %v", fin.Type, err)
	}
	uri := tc.Artifacts[0].URI
	e.mustCLI("artifact", "get", uri, "-o", filepath.Join(t.TempDir(), "a"), "--operator", "ada")

	// Replay: gate decision, transitions with olga's approval, the access.
	var rp auditReplayResult
	r = e.mustCLI("audit", "replay", sr.SessionID, "--json", "--operator", "bob")
	if err := json.Unmarshal([]byte(r.stdout), &rp); err != nil {
		t.Fatalf("replay --json: %v\n%s", err, r.stdout)
	}
	var approved, gateSeen, artifactAccess, replayAccess bool
	var transitions []string
	for _, en := range rp.Entries {
		switch en.Kind {
		case string(audit.KindGate):
			gateSeen = true
		case string(audit.KindTransition):
			transitions = append(transitions, en.Decision)
			approved = approved || (en.Decision == "PENDING → RUNNING" && en.Operator == "olga")
		case string(audit.KindDataAccess):
			var d dataAccess
			_ = json.Unmarshal(en.Detail, &d)
			artifactAccess = artifactAccess || (d.Access == "artifact_get" && d.Operator == "ada" && d.Object == uri)
			replayAccess = replayAccess || (d.Access == "audit_replay" && d.Operator == "bob")
		}
	}
	t.Logf("replay: %d entries, transitions %v", len(rp.Entries), transitions)
	if !approved || !gateSeen || !artifactAccess || !replayAccess || rp.Via != viaDaemon || rp.State != "COMPLETED" ||
		len(transitions) < 3 || transitions[len(transitions)-1] != "RUNNING → COMPLETED" {
		t.Fatalf("replay: approved %v gate %v artifact access %v replay access %v transitions %v\n%s",
			approved, gateSeen, artifactAccess, replayAccess, transitions, r.stdout)
	}
	r = e.mustCLI("audit", "replay", sr.SessionID, "--operator", "bob")
	t.Logf("audit replay (table, first lines):\n%s", firstLines(r.stdout, 8))
	for _, want := range []string{"DECISION/TRANSITION", "PENDING → RUNNING", "olga", "data_access", "artifact_get"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("replay table lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := e.cli("audit", "replay", "no-such-session"); r.code != exitFailure || !strings.Contains(r.stderr, "no audit entries") {
		t.Fatalf("replay of an unknown session: exit %d\n%s", r.code, r.stderr)
	}

	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
	// Daemon down: the state file, read-only.
	var off auditVerifyResult
	if err := json.Unmarshal([]byte(e.mustCLI("audit", "verify", "--json").stdout), &off); err != nil || !off.Intact || off.Via != viaStateFile || off.Checked < v.Checked+3 {
		t.Fatalf("offline verify: %+v %v (online checked %d)", off, err, v.Checked)
	}
	r = e.mustCLI("audit", "verify")
	if !strings.Contains(r.stdout, "read-only") || !strings.Contains(r.stdout, "no daemon") {
		t.Fatalf("offline verify:\n%s", r.stdout)
	}
	// Offline replay of a T2 session is recorded too.
	r = e.mustCLI("audit", "replay", sr.SessionID, "--json", "--operator", "carl")
	if !strings.Contains(r.stdout, `"via": "state file"`) || !strings.Contains(r.stdout, `"operator": "carl"`) {
		t.Fatalf("offline replay:\n%s", r.stdout)
	}

	// Tamper with olga's approval in a copy of the state file.
	cp := t.TempDir()
	src, err := os.Open(filepath.Join(e.dir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(filepath.Join(cp, stateFile), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	src.Close()
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cp, stateFile)
	seq := auditSeqOf(t, file, "approved by operator olga")
	db, err := bolt.Open(file, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("audit"))
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], seq)
		v := bytes.Replace(b.Get(k[:]), []byte("operator olga"), []byte("operator mall"), 1)
		return b.Put(k[:], v)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	r = e.cli("audit", "verify", "--state-dir", cp)
	want := "chain: BROKEN at entry " + itoa(seq) + ": content does not match its hash"
	t.Logf("audit verify of the tampered copy:\n%s", r.stdout)
	if r.code != exitFailure || !strings.Contains(r.stdout, want) {
		t.Fatalf("tampered copy: exit %d, want 1 and %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	var tv auditVerifyResult
	r = e.cli("audit", "verify", "--state-dir", cp, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &tv); err != nil || r.code != exitFailure || tv.Intact || tv.Broken == nil || tv.Broken.Seq != seq || tv.Checked != seq-1 {
		t.Fatalf("tampered copy --json: exit %d %+v %v", r.code, tv, err)
	}
	// Replay of the session crosses the edited entry: exit 1.
	if r := e.cli("audit", "replay", sr.SessionID, "--state-dir", cp, "--operator", "dan"); r.code != exitFailure || !strings.Contains(r.stderr, "broken at entry "+itoa(seq)) {
		t.Fatalf("replay of the tampered copy: exit %d\n%s", r.code, r.stderr)
	}
	// The original is intact.
	e.mustCLI("audit", "verify", "--state-dir", e.dir)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	return strings.Join(ls[:min(n, len(ls))], "\n")
}

// waitSessionFor is waitSession with its own hang guard (a whole recipe).
func (e *env) waitSessionFor(guard time.Duration, what string, ok func(sessionView) bool) sessionView {
	e.t.Helper()
	deadline := time.Now().Add(guard)
	for {
		for _, s := range e.sessionsJSON() {
			if ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no session %s: %+v", what, e.sessionsJSON())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
