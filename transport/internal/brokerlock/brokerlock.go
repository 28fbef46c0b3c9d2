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
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	f, err := os.OpenFile(ClusterPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("brokerlock: %v", err)
	}
	deadline := time.Now().Add(ClusterWait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if err != unix.EWOULDBLOCK {
			f.Close()
			t.Fatalf("brokerlock: flock %s: %v", ClusterPath, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("brokerlock: the cluster lock %s was still held after %v by: %s "+
				"(a cluster test of another checkout, or a process that inherited the lock from scripts/cluster.sh)",
				ClusterPath, ClusterWait, strings.Join(Holders(ClusterPath), "; "))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Cleanup(func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	})
}

// ClusterWait bounds how long Cluster waits for another process's hold: far
// longer than every cluster test of a checkout together, so that a lock no
// test will ever release fails with its holders named rather than hanging
// until the suite's timeout.
var ClusterWait = 12 * time.Minute

// Holders names the processes with path open ("pid command line"), read
// from /proc; it is for the message of a lock that is never released.
func Holders(path string) []string {
	var out []string
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range pids {
		fds, _ := os.ReadDir(filepath.Join(p, "fd"))
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(p, "fd", fd.Name()))
			if err != nil || target != path {
				continue
			}
			cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
			if len(line) > 120 {
				line = line[:120] + "…"
			}
			out = append(out, filepath.Base(p)+" "+line)
			break
		}
	}
	if len(out) == 0 {
		out = append(out, "no process found in /proc")
	}
	return out
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
