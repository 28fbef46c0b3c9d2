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

// ClusterPath is the lock file of the local three-node cluster
// (scripts/cluster.sh).
var ClusterPath = filepath.Join(os.TempDir(), "hcp-edge-cluster-tests.lock")

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

// Cluster holds the local cluster alone until t ends. Its tests stop,
// start and partition nodes, or need every node up; two of them in two
// processes (two checkouts' suites on one machine) would pull nodes from
// under each other. Tests of one package run one at a time, so one
// process never waits for itself.
func Cluster(t testing.TB) {
	t.Helper()
	if !clusterHeld.CompareAndSwap(false, true) {
		return // this process holds it (a subtest of a test that does)
	}
	t.Cleanup(func() { clusterHeld.Store(false) })
	holdFile(t, ClusterPath, unix.LOCK_EX)
}

// clusterHeld: this process holds the cluster lock (flock locks of two
// descriptors of one process conflict).
var clusterHeld atomic.Bool

func hold(t testing.TB, how int) {
	t.Helper()
	holdFile(t, Path, how)
}

func holdFile(t testing.TB, path string, how int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("brokerlock: %v", err)
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("brokerlock: flock %s: %v", path, err)
	}
	t.Cleanup(func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	})
}
