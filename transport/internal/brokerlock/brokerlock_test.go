package brokerlock

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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

// fatalTB records the first Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestHoldFileBoundedWait: a lock another descriptor holds is waited for at
// most the bound, then the test fails naming this process as a holder; once
// released it is taken.
func TestHoldFileBoundedWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	run := func(wait time.Duration) string {
		tb := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() { defer close(done); holdFile(tb, path, unix.LOCK_EX, wait) }()
		<-done
		return tb.msg
	}
	msg := run(300 * time.Millisecond)
	if self := strconv.Itoa(os.Getpid()) + " "; !strings.Contains(msg, "held by: ") || !strings.Contains(msg, self) {
		t.Fatalf("message %q does not name this process (%s) as the holder", msg, self)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if msg := run(300 * time.Millisecond); msg != "" {
		t.Fatalf("a free lock was not taken: %s", msg)
	}
}
