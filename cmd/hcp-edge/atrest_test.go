package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"hcp-edge/configs"
	"hcp-edge/session/atrest"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

const (
	atRestHexA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	atRestHexB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// writeAtRestKey writes a key file of content with mode.
func writeAtRestKey(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigCheckAtRestKey: agent.at_rest_key_file is checked as the
// daemon loads it — absolute, present, 0600 or stricter, 64 hex digits —
// each problem at its line.
func TestConfigCheckAtRestKey(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	good := writeAtRestKey(t, dir, "good.key", atRestHexA+"\n", 0o600)
	tests := []struct {
		name, path, want string // want "": valid
	}{
		{"valid", good, ""},
		{"group readable", writeAtRestKey(t, dir, "open.key", atRestHexA, 0o640), "has mode 0640: a key file must be readable by its owner only"},
		{"not hex", writeAtRestKey(t, dir, "text.key", "correct horse battery staple", 0o600), "28 characters, want 64 hex digits"},
		{"all zero", writeAtRestKey(t, dir, "zero.key", strings.Repeat("0", 64), 0o600), "all zero"},
		{"missing", filepath.Join(dir, "none.key"), "no such file"},
		{"a directory", dir, "is not a regular file"},
		{"relative", "keys/at-rest.key", "is not an absolute path"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(string(configs.SimYAML), "  log_level: info\n", "  log_level: info\n  at_rest_key_file: "+tt.path+"\n", 1)
			path := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			r := checkConfig(path, "../../configs/capabilities")
			if tt.want == "" {
				if !r.Valid {
					t.Fatalf("problems %+v", r.Problems)
				}
				return
			}
			if r.Valid || len(r.Problems) != 1 {
				t.Fatalf("problems %+v, want one", r.Problems)
			}
			p := r.Problems[0]
			if p.Key != "agent.at_rest_key_file" || p.Line != lineOf(t, text, "at_rest_key_file:") || !strings.Contains(p.Message, tt.want) {
				t.Fatalf("problem %+v, want %q", p, tt.want)
			}
		})
	}
}

// sealedSession writes into stateDir, as the daemon would have, a
// completed T3 session with one artifact sealed under key, and its final
// message. It returns the artifact as task_completed describes it, and its
// plaintext.
func sealedSession(t *testing.T, stateDir string, key *atrest.Key) (wire.Artifact, []byte) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(stateDir, stateFile), store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.SetAtRest(key) // its events are sealed as the daemon's are
	uid := uuid.New()
	sid := uid.String()
	if _, _, err := st.Create(ctx, store.Session{ID: sid, Capability: "cvd-material-synthesis", CapabilityVersion: "1.0.0",
		CallerID: "harness-alpha-001", RiskLevel: "R3", DataClass: "T3", Metadata: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, to := range []lifecycle.State{lifecycle.Running, lifecycle.Completed} {
		if _, _, err := st.Transition(ctx, sid, store.Change{To: to, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	plain := []byte("elapsed_seconds,stage,temperature_c,pressure_pa\n0,preflight,24.9,3.1\n60,grow,725.0,2.9\n")
	dir := filepath.Join(stateDir, artifactsDir, sid)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := key.WriteFile(filepath.Join(dir, "growth_log.csv"), plain, atrest.ArtifactBinding(sid, "growth_log.csv"), 0o640); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(plain)
	a := wire.Artifact{Name: "growth_log", Type: "text/csv", URI: "hcp://" + sid + "/artifacts/growth_log.csv",
		SizeBytes: int64(len(plain)), Checksum: "sha256:" + hex.EncodeToString(sum[:])}
	fin, err := wire.NewEnvelope(&uid, &wire.TaskCompleted{Outputs: json.RawMessage(`{}`), Artifacts: []wire.Artifact{a}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.Encode(fin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(stateDir, resultsDir), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, resultsDir, sid+".json"), b, 0o640); err != nil {
		t.Fatal(err)
	}
	return a, plain
}

// TestArtifactGetSealed: the daemon started with an at-rest key serves a
// T3 session's sealed artifact; artifact get decrypts it with the key the
// daemon names (or --key), verifies the plaintext against the recorded
// size and sha256, and fails naming the key problem when the key is
// unreadable, wrong or gone, or the file was swapped.
func TestArtifactGetSealed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	keys := t.TempDir()
	keyFile := writeAtRestKey(t, keys, "at-rest.key", atRestHexA+"\n", 0o600)
	key, err := atrest.LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("  log_level: info\n"), []byte("  log_level: info\n  at_rest_key_file: "+keyFile+"\n"), 1)
	if err := os.WriteFile(e.cfg, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	a, plain := sealedSession(t, e.dir, key)
	sid, name, err := parseArtifactURI(a.URI)
	if err != nil {
		t.Fatal(err)
	}
	onDisk := filepath.Join(e.dir, artifactsDir, sid, name)
	e.start()
	out := t.TempDir()

	// With the daemon's key: the plaintext, verified.
	dst := filepath.Join(out, "growth.csv")
	r := e.mustCLI("artifact", "get", a.URI, "-o", dst, "--json")
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("copy %q %v\n%s", got, err, r.stdout)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy mode %v %v", fi.Mode(), err)
	}
	if r := e.mustCLI("artifact", "get", a.URI, "-o", "-"); r.stdout != string(plain) {
		t.Fatalf("stdout %q", r.stdout)
	}
	if disk, _ := os.ReadFile(onDisk); bytes.Contains(disk, []byte("preflight")) || !atrest.IsSealed(disk) {
		t.Fatal("the artifact is in the clear on disk")
	}

	fails := func(what string, want []string, args ...string) {
		t.Helper()
		dst := filepath.Join(out, "refused")
		r := e.cli(append([]string{"artifact", "get", a.URI, "-o", dst}, args...)...)
		if r.code != exitFailure {
			t.Fatalf("%s: exit %d\n%s%s", what, r.code, r.stdout, r.stderr)
		}
		t.Logf("%s: %s", what, strings.TrimSpace(r.stderr))
		for _, w := range want {
			if !strings.Contains(r.stderr, w) {
				t.Fatalf("%s: stderr lacks %q:\n%s", what, w, r.stderr)
			}
		}
		if _, err := os.Stat(dst); !os.IsNotExist(err) {
			t.Fatalf("%s: a copy was left: %v", what, err)
		}
	}
	other := writeAtRestKey(t, keys, "other.key", atRestHexB, 0o600)
	otherKey, _ := atrest.LoadKey(other)
	fails("wrong key", []string{"classified T3", "encrypted at rest", "under at-rest key " + key.ID(), other, "is key " + otherKey.ID(), "sealed under another key"},
		"--key", other)
	open := writeAtRestKey(t, keys, "open.key", atRestHexA, 0o644)
	fails("key readable by others", []string{"at-rest key (--key) cannot be loaded", "chmod 600"}, "--key", open)
	fails("no such key", []string{"cannot be loaded", "no such file"}, "--key", filepath.Join(keys, "none.key"))
	// --key with the right key works as the daemon's does.
	copyKey := writeAtRestKey(t, keys, "copy.key", strings.ToUpper(atRestHexA), 0o400)
	e.mustCLI("artifact", "get", a.URI, "-o", filepath.Join(out, "with-key.csv"), "--key", copyKey)

	// The daemon's key file gone: the default fails naming it.
	if err := os.Rename(keyFile, keyFile+".moved"); err != nil {
		t.Fatal(err)
	}
	fails("daemon's key gone", []string{"the daemon's agent.at_rest_key_file", keyFile, "no such file"})
	if err := os.Rename(keyFile+".moved", keyFile); err != nil {
		t.Fatal(err)
	}

	// Another session's sealed file put in its place does not open.
	sealed, err := key.Seal(plain, atrest.ArtifactBinding(uuid.NewString(), name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(onDisk, sealed, 0o640); err != nil {
		t.Fatal(err)
	}
	fails("swapped file", []string{"does not open with the at-rest key " + key.ID(), "fails authentication"})
	// A plain file in its place is refused too.
	if err := os.WriteFile(onDisk, plain, 0o640); err != nil {
		t.Fatal(err)
	}
	fails("plain file", []string{"not a sealed blob"})
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
	if !strings.Contains(e.logs.String(), key.ID()) {
		t.Fatalf("the daemon does not log the key id %s:\n%s", key.ID(), e.logs)
	}
}

// TestConfigAtRestKeyRefusedAtStart: a configured at-rest key the daemon
// cannot use stops the start, naming the key file's problem.
func TestConfigAtRestKeyRefusedAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	keyFile := writeAtRestKey(t, t.TempDir(), "at-rest.key", atRestHexA, 0o644)
	cfg, err := os.ReadFile(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("  log_level: info\n"), []byte("  log_level: info\n  at_rest_key_file: "+keyFile+"\n"), 1)
	if err := os.WriteFile(e.cfg, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.cli("run", "--config", e.cfg)
	out := r.stdout + r.stderr
	if r.code == exitOK || !strings.Contains(out, "agent.at_rest_key_file") || !strings.Contains(out, "chmod 600 "+keyFile) {
		t.Fatalf("run: exit %d\n%s", r.code, out)
	}
}

// TestMoS2SealedThroughCLI: the daemon with an amqps uplink (TLS in
// transit; the broker address answers nothing, so the uplink only retries,
// and the local operator's session stays local) and an at-rest key runs
// the seed's MoS2 task classified T3: it completes, its artifacts are
// sealed on disk, and artifact get returns the plaintext task_completed
// describes.
func TestMoS2SealedThroughCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator (~25 s)")
	}
	t.Parallel() // its own rig and state: runs beside the other whole-recipe tests
	e, keyFile := sealedT3Env(t)
	key, err := atrest.LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	task, err := os.ReadFile(seedTask)
	if err != nil {
		t.Fatal(err)
	}
	taskFile := filepath.Join(t.TempDir(), "mos2-t3.json")
	if err := os.WriteFile(taskFile, bytes.Replace(task, []byte(`"data_classification": "T2"`), []byte(`"data_classification": "T3"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.arm()
	watch := e.cliAsync("submit", taskFile, "--watch")
	pending := e.waitSession("pending approval", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
	if pending.DataClass != "T3" {
		t.Fatalf("pending session %+v, want T3", pending)
	}
	e.mustCLI("approve", pending.ApprovalID, "--operator", "olga")
	var r result
	select {
	case r = <-watch:
	case <-time.After(2 * time.Minute):
		t.Fatal("submit --watch did not end")
	}
	if r.code != exitOK {
		t.Fatalf("submit --watch: exit %d\n%s\n%s", r.code, r.stderr, r.stdout)
	}
	tc, err := decodeFinal(t, r).TaskCompleted()
	if err != nil || len(tc.Artifacts) != 5 {
		t.Fatalf("final: %+v %v", tc, err)
	}
	out := t.TempDir()
	for _, a := range tc.Artifacts {
		sid, name, err := parseArtifactURI(a.URI)
		if err != nil {
			t.Fatal(err)
		}
		disk, err := os.ReadFile(filepath.Join(e.dir, artifactsDir, sid, name))
		if err != nil {
			t.Fatal(err)
		}
		h, err := atrest.Inspect(disk)
		if err != nil || h.KeyID != key.ID() || int64(h.Size) != a.SizeBytes {
			t.Fatalf("%s on disk: %+v %v", name, h, err)
		}
		dst := filepath.Join(out, name)
		e.mustCLI("artifact", "get", a.URI, "-o", dst)
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(got)
		if "sha256:"+hex.EncodeToString(sum[:]) != a.Checksum || int64(len(got)) != a.SizeBytes {
			t.Fatalf("artifact %s: copy does not match %+v", a.URI, a)
		}
		if len(got) < 32 || bytes.Contains(disk, got[:32]) {
			t.Fatalf("%s: the plaintext is on disk", name)
		}
	}
	// The agent's copy of the final message (it lists the artifacts and
	// holds the outputs) is sealed too.
	final, err := os.ReadFile(filepath.Join(e.dir, resultsDir, pending.ID+".json"))
	if err != nil || !atrest.IsSealed(final) || bytes.Contains(final, []byte("layer_count")) {
		t.Fatalf("results/%s.json not sealed (%v): %.80q", pending.ID, err, final)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
}

// sealedT3Env is an env whose daemon seals at rest with a key of the test's
// own (returned: its file) and lets the local operator run the shipped
// capabilities up to T3, with an amqps uplink (TLS in transit) whose
// address answers nothing: the uplink only retries, and the local
// operator's sessions stay local.
func sealedT3Env(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t, nil)
	keyFile := writeAtRestKey(t, t.TempDir(), "at-rest.key", atRestHexA+"\n", 0o600)
	cfg, err := os.ReadFile(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "  log_level: info\n", "  log_level: info\n  at_rest_key_file: "+keyFile+"\n", 1)
	text = strings.Replace(text, "  callers:\n", `  callers:
    local:
      capabilities: [cvd-material-synthesis, rig-status, leak-check]
      max_risk_level: R3
      max_data_classification: T3
`, 1)
	if err := os.WriteFile(e.cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	e.extra = append(e.extra, "HCP_AMQP_URL=amqps://hcp-edge:unused@127.0.0.1:9/hcp")
	return e, keyFile
}
