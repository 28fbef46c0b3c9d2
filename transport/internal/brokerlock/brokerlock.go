// Package brokerlock keeps tests that restart the shared test broker from
// running while another test uses it.
//
// go test runs packages in parallel processes, and every broker test of every
// package talks to the same local RabbitMQ. A test that stops the broker
// (rabbitmqctl stop_app) would pull it from under a test of another package.
// So every broker test holds a shared flock(2) on one lock file for its whole
// duration (Shared), and a test that restarts the broker holds it exclusively
// (Exclusive): it waits for the others to finish and keeps new ones waiting.
//
// # Caveats
//
// Within one process, while a test holds the lock exclusively, Shared is a
// no-op (flock locks of two descriptors of one process conflict); tests of one
// package run one at a time unless they call t.Parallel, which broker tests
// must not.
package brokerlock

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Path is the lock file.
var Path = filepath.Join(os.TempDir(), "hcp-edge-broker-tests.lock")

var exclusive atomic.Bool

// Shared holds the broker shared until t ends.
func Shared(t testing.TB) {
	t.Helper()
	if exclusive.Load() {
		return
	}
	hold(t, unix.LOCK_SH)
}

// Exclusive holds the broker alone until t ends: for a test that restarts it.
func Exclusive(t testing.TB) {
	t.Helper()
	hold(t, unix.LOCK_EX)
	exclusive.Store(true)
	t.Cleanup(func() { exclusive.Store(false) })
}

func hold(t testing.TB, how int) {
	t.Helper()
	f, err := os.OpenFile(Path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("brokerlock: %v", err)
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("brokerlock: flock %s: %v", Path, err)
	}
	t.Cleanup(func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	})
}
