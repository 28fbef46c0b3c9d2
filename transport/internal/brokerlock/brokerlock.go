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
	holdFile(t, Path, unix.LOCK_SH, 0)
}

// Exclusive holds the broker alone until t ends: for a test that restarts it.
func Exclusive(t testing.TB) {
	t.Helper()
	holdFile(t, Path, unix.LOCK_EX, 0)
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
	holdFile(t, ClusterPath, unix.LOCK_EX, ClusterWait)
}

// ClusterWait bounds how long Cluster waits for another process's hold: far
// longer than every cluster test of a checkout together, so that a lock
// nothing will release (a process that inherited it from scripts/cluster.sh)
// fails with its holders named rather than hanging until the suite's
// timeout. (Shared and Exclusive block without a bound: they wait for the
// broker tests of every package, and a blocked flock(2) takes the lock the
// moment it is free, where polling could lose it to each new shared holder.)
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

// holdFile takes the flock(2) how on path until t ends, waiting for it
// without a bound (wait 0) or at most wait, polling, and then failing t with
// the processes that hold it.
func holdFile(t testing.TB, path string, how int, wait time.Duration) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("brokerlock: %v", err)
	}
	if wait == 0 {
		err = unix.Flock(int(f.Fd()), how)
	} else {
		deadline := time.Now().Add(wait)
		for err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err == unix.EWOULDBLOCK && time.Now().Before(deadline); {
			time.Sleep(250 * time.Millisecond)
			err = unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		}
	}
	if err != nil {
		f.Close()
		t.Fatalf("brokerlock: flock %s: %v; held by: %s (another checkout's test, or a process that inherited the lock)",
			path, err, strings.Join(Holders(path), "; "))
	}
	t.Cleanup(func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	})
}
