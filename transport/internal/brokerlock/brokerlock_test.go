package brokerlock

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHoldersNamesAnInheritedLock: a child that inherited a locked
// descriptor (what RabbitMQ nodes once did from scripts/cluster.sh) is named.
func TestHoldersNamesAnInheritedLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{f} // fd 3 in the child, as `exec 9>lock` gave the nodes
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	f.Close() // only the child holds it now

	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = Holders(path)
		if strings.Contains(strings.Join(got, ";"), "sleep 30") {
			return
		}
	}
	t.Fatalf("Holders(%s) = %q, want the child sleep 30", path, got)
}

// TestHoldersNone: a lock nobody has open says so.
func TestHoldersNone(t *testing.T) {
	got := Holders(filepath.Join(t.TempDir(), "nobody"))
	if len(got) != 1 || !strings.Contains(got[0], "no process") {
		t.Fatalf("Holders = %q", got)
	}
}
