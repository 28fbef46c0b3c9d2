package outbox

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const crashGroupEnv = "HCP_OUTBOX_CRASH_GROUP_DB"

// groupProducers is how many goroutines of TestCrashGroupChild wait for
// each Append; one more pipelines AppendAsync with groupWindow in flight.
const (
	groupProducers = 4
	groupWindow    = 32
)

// groupMsg is producer p's i-th message: its MessageID names both.
func groupMsg(p, i int) Message { return msg(Protocol, p*1_000_000+i) }

// TestCrashGroupChild is the subprocess of TestCrashGroupCommit: four
// goroutines Append (each waiting for its own message) and a fifth keeps
// groupWindow AppendAsyncs in flight, so their messages share commits; each
// prints "A key producer i" the moment its Append (or Wait) returns, until
// the process is killed.
func TestCrashGroupChild(t *testing.T) {
	path := os.Getenv(crashGroupEnv)
	if path == "" {
		t.Skip("subprocess of TestCrashGroupCommit")
	}
	ob, err := Open(path, Opts{OpenTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	var mu sync.Mutex // one line per write(2): os.Stdout is unbuffered
	ack := func(k uint64, p, i int) {
		mu.Lock()
		fmt.Fprintf(os.Stdout, "A %d %d %d\n", k, p, i)
		mu.Unlock()
	}
	fail := func(err error) {
		mu.Lock()
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	for p := range groupProducers {
		go func() {
			for i := 0; ; i++ {
				k, err := ob.Append(groupMsg(p, i))
				if err != nil {
					fail(err)
				}
				ack(k, p, i)
			}
		}()
	}
	p := groupProducers
	type inflight struct {
		i  int
		pe *Pending
	}
	var q []inflight
	for i := 0; ; i++ {
		if len(q) == groupWindow {
			k, err := q[0].pe.Wait()
			if err != nil {
				fail(err)
			}
			ack(k, p, q[0].i)
			q = q[1:]
		}
		pe, err := ob.AppendAsync(groupMsg(p, i))
		if err != nil {
			fail(err)
		}
		q = append(q, inflight{i, pe})
	}
}

// TestCrashGroupCommit: group commit never acknowledges a message before the
// transaction holding it has committed. A child (TestCrashGroupChild) whose
// producers share commits is SIGKILLed at random moments, many times over
// the same file; after each kill every message it acknowledged is in the
// file with the key it was given, keys are unique, each producer's messages
// have keys increasing in the order it produced them, new keys exceed every
// key seen, and the commits were in fact shared (fewer transactions than
// messages). A SIGKILL leaves the page cache to the kernel, so this proves
// the order of acknowledgement and commit; that a commit is on the disk is
// bbolt's fdatasync, which the outbox never turns off (checked here: NoSync
// is false on the file Open makes).
func TestCrashGroupCommit(t *testing.T) {
	runs := 8
	if testing.Short() {
		runs = 3
	}
	path := filepath.Join(t.TempDir(), "group.db")
	acked := map[uint64][2]int{} // key → producer, i
	var maxSeen uint64
	lastTx := 0
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	for run := range runs {
		// The kill falls at a random moment once the producers run, after
		// the child's first acknowledgement.
		ls := killChild(t, run, "TestCrashGroupChild", crashGroupEnv+"="+path, "A ", time.Duration(rng.IntN(300))*time.Millisecond)
		n := 0
		for _, l := range ls {
			f := strings.Fields(l)
			if len(f) > 0 && f[0] == "ERR" {
				t.Fatalf("run %d: child: %s", run, l)
			}
			if len(f) != 4 || f[0] != "A" { // a line cut by the kill
				continue
			}
			k, _ := strconv.ParseUint(f[1], 10, 64)
			p, _ := strconv.Atoi(f[2])
			i, _ := strconv.Atoi(f[3])
			if _, dup := acked[k]; dup {
				t.Fatalf("run %d: key %d acknowledged twice", run, k)
			}
			if k <= maxSeen {
				t.Fatalf("run %d: key %d not above the keys of earlier runs (%d)", run, k, maxSeen)
			}
			acked[k] = [2]int{p, i}
			n++
		}

		ob, err := Open(path, Opts{})
		if err != nil {
			t.Fatalf("run %d: reopen: %v", run, err)
		}
		if ob.DB().NoSync {
			t.Fatal("the outbox's file is opened with NoSync")
		}
		es, err := ob.Peek(1 << 24)
		if err != nil {
			t.Fatalf("run %d: peek: %v", run, err)
		}
		present := map[uint64]string{}
		lastOf := map[int][2]uint64{} // producer → last i+1, its key
		for j, e := range es {
			if j > 0 && e.Key <= es[j-1].Key {
				t.Fatalf("run %d: keys not strictly increasing: %d after %d", run, e.Key, es[j-1].Key)
			}
			present[e.Key] = e.MessageID
			var v int
			if _, err := fmt.Sscanf(string(e.Body), `{"n":%d}`, &v); err != nil {
				t.Fatalf("run %d: key %d: body %q", run, e.Key, e.Body)
			}
			p, i := v/1_000_000, v%1_000_000
			// Each child run starts its producers at i = 0 again: order is
			// checked within a run's keys (i restarts below the last).
			if l, ok := lastOf[p]; ok && uint64(i)+1 > l[0] && e.Key <= l[1] {
				t.Fatalf("run %d: producer %d's message %d has key %d, not above %d", run, p, i, e.Key, l[1])
			}
			lastOf[p] = [2]uint64{uint64(i) + 1, e.Key}
			maxSeen = max(maxSeen, e.Key)
		}
		for k, pi := range acked {
			id, ok := present[k]
			if !ok {
				t.Fatalf("run %d: acknowledged message %d (producer %d, #%d) lost", run, k, pi[0], pi[1])
			}
			if want := groupMsg(pi[0], pi[1]).MessageID; id != want {
				t.Fatalf("run %d: key %d holds %s, acknowledged as %s", run, k, id, want)
			}
		}
		var tx int
		if err := ob.DB().View(func(t *bolt.Tx) error { tx = t.ID(); return nil }); err != nil {
			t.Fatal(err)
		}
		stored := len(es)
		ob.Close()
		if n == 0 {
			t.Fatalf("run %d: nothing acknowledged before the kill", run)
		}
		t.Logf("run %d: %d acknowledged, %d stored, %d commits so far", run, n, stored, tx)
		lastTx = tx
	}
	if lastTx >= len(acked) {
		t.Fatalf("%d commits for %d acknowledged messages: the commits were not shared", lastTx, len(acked))
	}
}
