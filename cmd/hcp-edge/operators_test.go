package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/device/devicetest"
)

// osUser is a unix user a test created.
type osUser struct {
	name     string
	uid, gid uint32
}

// testUsers creates a group and one unix user per name in it (useradd;
// userdel and groupdel in t.Cleanup). Only root can: anyone else skips
// loudly (fails under HCP_REQUIRE_PEERS=1).
func testUsers(t *testing.T, names ...string) (group uint32, users map[string]osUser) {
	t.Helper()
	if os.Geteuid() != 0 {
		devicetest.MissingPeer(t, "creating unix users needs root", "run the test as root, as make ci does in its container")
	}
	for _, p := range []string{"useradd", "userdel", "groupadd", "groupdel"} {
		if _, err := exec.LookPath(p); err != nil {
			devicetest.MissingPeer(t, p+" not found on PATH", "apt-get install passwd")
		}
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	suffix := strconv.Itoa(os.Getpid() % 100000)
	gname := "hcpop" + suffix
	run("groupadd", gname)
	t.Cleanup(func() { _ = exec.Command("groupdel", gname).Run() })
	g, err := user.LookupGroup(gname)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.ParseUint(g.Gid, 10, 32)
	users = map[string]osUser{}
	for _, n := range names {
		name := "hcp" + n + suffix
		run("useradd", "--no-create-home", "--gid", gname, "--shell", "/usr/sbin/nologin", name)
		t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		users[n] = osUser{name: name, uid: uint32(uid), gid: uint32(gid)}
	}
	return uint32(gid), users
}

// cliAs runs hcp-edge (binary exe) as u, with the socket's group.
func (e *env) cliAs(u osUser, exe string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(e.environ(), "USER="+u.name, "HOME=/")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: []uint32{u.gid}}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		r.code = xe.ExitCode()
	case err != nil:
		e.t.Fatalf("hcp-edge %v as %s: %v", args, u.name, err)
	}
	return r
}

// TestOperatorsFromTheKernel: the control socket takes its actor from the
// kernel. Three unix users in the socket's group: anna (operate, approve),
// bert (approve) and cleo (no role). cleo's approval of an R4 task is
// refused and audited with her uid; anna cannot sign as bert; anna's
// approval leaves the task PENDING (R4 needs two different OS users), her
// second is refused, bert's starts it; cleo can e-stop; the audit chain
// verifies and its replay shows each uid and each signature's meaning.
func TestOperatorsFromTheKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("a daemon, unix users and an R4 task (~10 s)")
	}
	gid, us := testUsers(t, "anna", "bert", "cleo")
	anna, bert, cleo := us["anna"], us["bert"], us["cleo"]

	e := newEnv(t, nil)
	// The socket's group is the test's: the state directory is setgid to
	// it, so the socket the daemon (root) creates there is group-owned by
	// it, mode 0660, as the install script's hcp-edge group is.
	for _, d := range []string{filepath.Dir(e.dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(e.dir, 0, int(gid)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.dir, os.ModeSetgid|0o750); err != nil {
		t.Fatal(err)
	}
	// The binary where the users can run it.
	xdir, err := os.MkdirTemp("", "hcp-edge-op-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(xdir) })
	_ = os.Chmod(xdir, 0o755)
	exe := filepath.Join(xdir, "hcp-edge")
	copyFile(t, bin, exe, 0o755)

	cfg, err := os.ReadFile(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The local operator may submit up to R4 here (the shipped R3 keeps R4
	// to the broker's harnesses): the WS2 recipe, R4 by its derived floor.
	text := strings.Replace(string(cfg), "  callers:\n", "  callers:\n    local:\n      capabilities: [cvd-material-synthesis, ws2-sulfurization, rig-status, leak-check]\n      max_risk_level: R4\n      max_data_classification: T2\n", 1)
	// A rig's two-person rule for R4 (sim.yaml lets one approval do, having one operator).
	if text = strings.Replace(text, "approvals_required: {R4: 1}", "approvals_required: {R4: 2}", 1); !strings.Contains(text, "{R4: 2}") {
		t.Fatal("fixture: approvals_required not in sim.yaml")
	}
	text += fmt.Sprintf("\noperators:\n  Anna A: {user: %s, roles: [operate, approve]}\n  Bert B: {user: \"%d\", roles: [approve]}\n  Cleo C: {user: %s, roles: []}\n",
		anna.name, bert.uid, cleo.name)
	if err := os.WriteFile(e.cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := e.cli("config", "check", e.cfg); r.code != 0 {
		t.Fatalf("config check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	e.start()
	e.arm()

	// whoami: the kernel's user, the display name, the roles.
	if r := e.cliAs(cleo, exe, "whoami"); r.code != 0 || !strings.Contains(r.stdout, cleo.name) || !strings.Contains(r.stdout, "Cleo C") || strings.Contains(r.stdout, "approve") {
		t.Fatalf("whoami as cleo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.cliAs(anna, exe, "whoami"); r.code != 0 || !strings.Contains(r.stdout, "operate, approve") {
		t.Fatalf("whoami as anna: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.cliAs(anna, exe, "whoami", "--operator", "Bert B"); r.code != exitFailure || !strings.Contains(r.stderr, "belongs to OS user "+bert.name) {
		t.Fatalf("whoami as anna using bert's name: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	task := r4Task(t, xdir)
	_ = e.cliAsync("submit", task, "--watch")
	pending := e.waitSession("pending approval", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
	if pending.Risk != "R4" {
		t.Fatalf("pending session %+v, want R4", pending)
	}

	// A user without approve is refused (and audited with the uid).
	if r := e.cliAs(cleo, exe, "approve", pending.ApprovalID, "--operator", "Cleo C"); r.code != exitFailure ||
		!strings.Contains(r.stderr, "forbidden") || !strings.Contains(r.stderr, `"approve"`) {
		t.Fatalf("approve by cleo (no role): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A display name that belongs to another OS user is refused.
	if r := e.cliAs(anna, exe, "approve", pending.ApprovalID, "--operator", "Bert B"); r.code != exitFailure || !strings.Contains(r.stderr, "belongs to OS user "+bert.name) {
		t.Fatalf("approve by anna as Bert B: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The first approval leaves it pending.
	if r := e.cliAs(anna, exe, "approve", pending.ApprovalID, "--operator", "Anna A"); r.code != 0 || !strings.Contains(r.stdout, "1 of 2") {
		t.Fatalf("approve by anna: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The same user twice is refused; so is root signing again as anna.
	if r := e.cliAs(anna, exe, "approve", pending.ApprovalID, "--operator", "Anna A"); r.code != exitFailure || !strings.Contains(r.stderr, "may not approve twice") {
		t.Fatalf("second approve by anna: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	time.Sleep(300 * time.Millisecond)
	for _, s := range e.sessionsJSON() {
		if s.ID == pending.ID && s.State != "PENDING" {
			t.Fatalf("R4 session %s is %s after one approval", s.ID, s.State)
		}
	}
	// A second, different user's approval starts it.
	if r := e.cliAs(bert, exe, "approve", pending.ApprovalID, "--operator", "Bert B"); r.code != 0 || !strings.Contains(r.stdout, "2 of 2") {
		t.Fatalf("approve by bert: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	e.waitSession("started after the second approval", func(s sessionView) bool { return s.ID == pending.ID && s.State != "PENDING" })

	// Roles: cleo may not arm nor reset, but may e-stop.
	if r := e.cliAs(cleo, exe, "reset", "--operator", "Cleo C"); r.code != exitFailure || !strings.Contains(r.stderr, `"operate"`) {
		t.Fatalf("reset by cleo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := e.cliAs(cleo, exe, "estop", "--operator", "Cleo C", "--json")
	if r.code != 0 {
		t.Fatalf("estop by cleo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if rep := decodeReport(t, r.stdout); rep.Via != "daemon" || !rep.AllConfirmed {
		t.Fatalf("estop by cleo: %+v", rep)
	}

	// The audit: the chain holds, and the replay shows who did what.
	if r := e.mustCLI("audit", "verify", "--json"); !strings.Contains(r.stdout, `"intact": true`) {
		t.Fatalf("audit verify: %s", r.stdout)
	}
	var rep auditaccess.ReplayResult
	if err := json.Unmarshal([]byte(e.mustCLI("audit", "replay", pending.ID, "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var refused, signed []auditaccess.Entry
	for _, en := range rep.Entries {
		switch {
		case en.Kind == "control" && en.Decision == "approve refused":
			refused = append(refused, en)
		case en.Kind == "approval" && en.Decision == "approval_signed":
			signed = append(signed, en)
		}
	}
	if len(refused) != 3 || refused[0].UID == nil || *refused[0].UID != cleo.uid || *refused[1].UID != anna.uid || *refused[2].UID != anna.uid {
		t.Fatalf("refusals in the replay (cleo's, anna as bert, anna twice): %+v", refused)
	}
	if len(signed) != 2 || *signed[0].UID != anna.uid || *signed[1].UID != bert.uid ||
		signed[0].Meaning != "approved for execution" || signed[1].Meaning != "approved for execution" {
		t.Fatalf("signatures in the replay: %+v", signed)
	}
	for _, s := range append(refused, signed...) {
		t.Logf("audit #%d %s %s uid=%d operator=%q meaning=%q %s", s.Seq, s.Kind, s.Decision, *s.UID, s.Operator, s.Meaning, s.Summary)
	}
	checkAuditLogOfOperators(t, e, exe, cleo) // auditlog_test.go
}

// r4Task writes a task of the shipped WS2 recipe (R4: it reaches 800 °C,
// the recipe's derived floor) on the seed task's frame into dir and returns
// its path.
func r4Task(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(seedTask)
	if err != nil {
		t.Fatal(err)
	}
	var task map[string]any
	if err := json.Unmarshal(b, &task); err != nil {
		t.Fatal(err)
	}
	pl := task["payload"].(map[string]any)
	pl["capability"], pl["capability_version"], pl["intent"] = "ws2-sulfurization", "1.x", "WS2 on SiO2/Si, an R4 process"
	pl["inputs"] = map[string]any{"substrate": "SiO2/Si"}
	delete(pl, "expected_output")
	out, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	p := filepath.Join(dir, "r4-task.json")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
