package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
)

// TestLoginUIDAudited: a control action from root whose login uid (the
// kernel's, kept across sudo) is another account — olga running sudo — is
// recorded as uid 0 with that login uid beside it; an action from a
// process without a login uid records none. SUDO_USER is ignored: it
// names nobody in the record.
func TestLoginUIDAudited(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("SKIP (loud): setting a login uid needs root")
	}
	probe := exec.Command("sh", "-c", "echo 65534 > /proc/self/loginuid")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("SKIP (loud): this host does not let root set a login uid (CAP_AUDIT_CONTROL, loginuid_immutable): %v %s", err, out)
	}
	e := newEnv(t, nil)
	e.start()
	// As sudo leaves it: root, its login uid olga's (here 65534), and a
	// SUDO_USER claiming someone else.
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `echo 65534 > /proc/self/loginuid && exec "$0" "$@"`, bin, "arm", "--operator", "tess")
	cmd.Env = append(e.environ(), "SUDO_USER=mallory")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // arm may be refused (latched): audited either way
	t.Logf("arm under a login uid: %s", strings.TrimSpace(out.String()))
	e.cli("reset", "--operator", "tess") // this test's own process: no login uid
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
	file := filepath.Join(e.dir, rigconfig.StateFile)
	db, err := bolt.Open(file, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var with, arms, resets []string
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("audit")).ForEach(func(_, v []byte) error {
			switch s := string(v); {
			case strings.Contains(s, "mallory"):
				t.Errorf("SUDO_USER is in the audit: %q", v)
			case strings.Contains(s, `"login_uid"`):
				with = append(with, s)
			case strings.Contains(s, `"op":"arm"`):
				arms = append(arms, s)
			case strings.Contains(s, `"op":"reset"`):
				resets = append(resets, s)
			}
			return nil
		})
	})
	if len(with) != 1 || !strings.Contains(with[0], `"op":"arm"`) || !strings.Contains(with[0], `"login_uid":65534`) ||
		!strings.Contains(with[0], `"uid":0`) || len(resets) != 1 {
		t.Fatalf("entries with a login uid %q (want the arm's only); arms without %d, resets %d", with, len(arms), len(resets))
	}
	t.Logf("recorded: %.300q", with[0][strings.Index(with[0], "{"):])
}
