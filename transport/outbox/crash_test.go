package outbox

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const crashEnv = "HCP_OUTBOX_CRASH_DB"

// killChild runs child, a test of this binary, with env added to its
// environment and SIGKILLs it: delay after its start, or, when after is not
// empty, delay after the first line it prints that begins with after (on a
// loaded machine a child may take longer than any fixed delay to start). It
// returns the lines the child printed; the last may be cut by the kill.
func killChild(t *testing.T, run int, child, env, after string, delay time.Duration) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []string, 1)
	first := make(chan struct{}) // closed at the first line beginning with after
	go func() {                  // the reader: ends when the killed child's stdout closes
		var ls []string
		seen := after == ""
		if seen {
			close(first)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if !seen && strings.HasPrefix(sc.Text(), after) {
				seen = true
				close(first)
			}
			ls = append(ls, sc.Text())
		}
		lines <- ls
	}()
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		t.Fatalf("run %d: the child printed no %q line in 30 s", run, after)
	}
	time.Sleep(delay)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	var ls []string
	select {
	case ls = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("child output did not end")
	}
	_ = cmd.Wait()
	return ls
}

// TestCrashChild is the subprocess of TestCrashSafety: it appends in a loop
// (mixed classes, telemetry bound 20), deletes the oldest few every so often
// (with Delete, and with DeleteLater, whose deletions ride along with later
// commits), and reports each committed append ("A key class n"), each key it
// is about to delete ("d key") and each committed Delete ("D key") on stdout
// until it is killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("subprocess of TestCrashSafety")
	}
	ob, err := Open(path, Opts{TelemetryBound: 20, OpenTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	w := os.Stdout // unbuffered: a line is out before the next step begins
	for i := 0; ; i++ {
		c := Protocol
		if i%3 != 0 {
			c = Telemetry
		}
		k, err := ob.Append(msg(c, i))
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(3)
		}
		fmt.Fprintf(w, "A %d %d %d\n", k, c, i)
		if i%5 == 4 {
			// A confirm handed to DeleteLater: it rides along with a later
			// Append's commit, so it may be present or gone after a kill.
			es, err := ob.Peek(2)
			if err != nil {
				os.Exit(3)
			}
			var ks []uint64
			for _, e := range es {
				ks = append(ks, e.Key)
				fmt.Fprintf(w, "d %d\n", e.Key)
			}
			if err := ob.DeleteLater(ks...); err != nil {
				os.Exit(3)
			}
		}
		if i%7 == 6 {
			es, err := ob.Peek(3)
			if err != nil {
				os.Exit(3)
			}
			var ks []uint64
			for _, e := range es {
				ks = append(ks, e.Key)
				fmt.Fprintf(w, "d %d\n", e.Key) // intent: may vanish from now on
			}
			if err := ob.Delete(ks...); err != nil {
				os.Exit(3)
			}
			for _, k := range ks {
				fmt.Fprintf(w, "D %d\n", k)
			}
		}
	}
}

// TestCrashSafety SIGKILLs an appending subprocess at random moments, many
// times over the same file, and checks after each kill: the file opens, keys
// are strictly increasing with no duplicates, every acknowledged Protocol
// append not confirmed-deleted is present, nothing confirmed-deleted
// reappears, the telemetry bound holds, and new keys exceed every key seen.
func TestCrashSafety(t *testing.T) {
	runs := 12
	if testing.Short() {
		runs = 4
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	deleted := map[uint64]bool{}  // confirmed deleted: must never reappear
	deleting := map[uint64]bool{} // delete begun: may be present or gone
	acked := map[uint64]Class{}
	var maxSeen uint64
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	for run := 0; run < runs; run++ {
		ls := killChild(t, run, "TestCrashChild", crashEnv+"="+path, "", time.Duration(30+rng.IntN(250))*time.Millisecond)
		appended := 0
		for _, l := range ls {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			if f[0] == "ERR" {
				t.Fatalf("run %d: child: %s", run, l)
			}
			// A line cut by the kill has too few fields: ignore it.
			if f[0] == "A" && len(f) == 4 {
				k, _ := strconv.ParseUint(f[1], 10, 64)
				c, _ := strconv.Atoi(f[2])
				if _, dup := acked[k]; dup {
					t.Fatalf("run %d: key %d issued twice", run, k)
				}
				if k <= maxSeen {
					t.Fatalf("run %d: key %d not above %d", run, k, maxSeen)
				}
				acked[k] = Class(c)
				maxSeen = k
				appended++
			}
			if f[0] == "d" && len(f) == 2 {
				k, _ := strconv.ParseUint(f[1], 10, 64)
				deleting[k] = true
			}
			if f[0] == "D" && len(f) == 2 {
				k, _ := strconv.ParseUint(f[1], 10, 64)
				deleted[k] = true
			}
		}

		ob, err := Open(path, Opts{TelemetryBound: 20})
		if err != nil {
			t.Fatalf("run %d: reopen: %v", run, err)
		}
		es, err := ob.Peek(1 << 20)
		if err != nil {
			t.Fatalf("run %d: peek: %v", run, err)
		}
		present := map[uint64]bool{}
		tel := 0
		for i, e := range es {
			if i > 0 && e.Key <= es[i-1].Key {
				t.Fatalf("run %d: keys not strictly increasing: %d after %d", run, e.Key, es[i-1].Key)
			}
			if deleted[e.Key] {
				t.Fatalf("run %d: confirmed-deleted key %d reappeared", run, e.Key)
			}
			if e.Class == Telemetry {
				tel++
			}
			present[e.Key] = true
			if e.Key > maxSeen {
				maxSeen = e.Key // committed, killed before it was reported
			}
		}
		if tel > 20 {
			t.Fatalf("run %d: %d telemetry > bound", run, tel)
		}
		for k, c := range acked {
			if c == Protocol && !deleting[k] && !present[k] {
				t.Fatalf("run %d: acknowledged protocol message %d lost", run, k)
			}
		}
		if total, nt := ob.Depth(); total != len(es) || nt != tel {
			t.Fatalf("run %d: Depth %d/%d, stored %d/%d", run, total, nt, len(es), tel)
		}
		k, err := ob.Append(msg(Protocol, -1))
		if err != nil || k <= maxSeen {
			t.Fatalf("run %d: new key %d not above %d (%v)", run, k, maxSeen, err)
		}
		maxSeen = k
		if err := ob.Delete(k); err != nil {
			t.Fatal(err)
		}
		deleted[k] = true
		ob.Close()
		t.Logf("run %d: %d appends acknowledged, %d waiting", run, appended, len(es))
	}
}
