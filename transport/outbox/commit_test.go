package outbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func sessionMsg(class Class, i int, sid string) Message {
	m := msg(class, i)
	m.CorrelationID = sid
	return m
}

// TestDroppedBySession: drops of the bounded Telemetry class are counted per
// session (CorrelationID, "" included), durably, and reset when taken;
// TakeDropped gives the total of the same ledger.
func TestDroppedBySession(t *testing.T) {
	ob, path := openTest(t, Opts{TelemetryBound: 2})
	// Oldest first: a, a, b, "", b, a — with a bound of 2 the first four are
	// dropped in order as the last four arrive.
	for i, sid := range []string{"a", "a", "b", "", "b", "a"} {
		if _, err := ob.Append(sessionMsg(Telemetry, i, sid)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ob.Append(sessionMsg(Protocol, 99, "c")); err != nil {
		t.Fatal(err)
	}
	if s, _ := ob.Stats(); s.Dropped != 4 || s.Depth != 3 || s.Telemetry != 2 {
		t.Fatalf("stats %+v", s)
	}
	ob.Close()
	ob, err := Open(path, Opts{TelemetryBound: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	got, err := ob.TakeDroppedBySession()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]uint64{"a": 2, "b": 1, "": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("dropped by session %v, want %v", got, want)
	}
	if got, _ := ob.TakeDroppedBySession(); len(got) != 0 {
		t.Fatalf("second take %v", got)
	}
	if n, _ := ob.TakeDropped(); n != 0 {
		t.Fatalf("TakeDropped after take: %d", n)
	}
	if s, _ := ob.Stats(); s.Dropped != 0 {
		t.Fatalf("stats after take %+v", s)
	}
	// Both takes read and reset one ledger.
	for i := 10; i < 13; i++ {
		ob.Append(sessionMsg(Telemetry, i, "d"))
	}
	if n, err := ob.TakeDropped(); n != 3 || err != nil {
		t.Fatalf("TakeDropped %d %v", n, err)
	}
	if got, _ := ob.TakeDroppedBySession(); len(got) != 0 {
		t.Fatalf("by session after TakeDropped: %v", got)
	}
	ob.Close()
	if _, err := ob.TakeDroppedBySession(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// TestDeleteLater: keys given to DeleteLater vanish from Peek at once, stay
// counted until their deletion commits (riding along with an Append's commit
// once 64 wait or DeleteDelay has passed, on their own later, or at Close),
// and the deletion is durable.
func TestDeleteLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	ob, err := Open(path, Opts{DeleteDelay: time.Hour}) // only 64 keys, or Close, commit them
	if err != nil {
		t.Fatal(err)
	}
	var keys []uint64
	for i := 0; i < 70; i++ {
		k, err := ob.Append(msg(Protocol, i))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := ob.DeleteLater(keys[0], keys[1]); err != nil {
		t.Fatal(err)
	}
	es, _ := ob.Peek(100)
	if len(es) != 68 || es[0].Key != keys[2] {
		t.Fatalf("peek after DeleteLater: %d entries, head %d", len(es), es[0].Key)
	}
	if es, _ := ob.PeekAfter(keys[0], 2); len(es) != 2 || es[0].Key != keys[2] || es[1].Key != keys[3] {
		t.Fatalf("PeekAfter skips deleted keys without counting them: %+v", es)
	}
	// Two keys wait: an Append does not take them yet.
	if _, err := ob.Append(msg(Protocol, 70)); err != nil {
		t.Fatal(err)
	}
	if d, _ := ob.Depth(); d != 71 {
		t.Fatalf("depth %d with two deletions waiting", d)
	}
	// 64 wait: the next Append's commit carries them.
	if err := ob.DeleteLater(keys[2:64]...); err != nil {
		t.Fatal(err)
	}
	if _, err := ob.Append(msg(Protocol, 71)); err != nil {
		t.Fatal(err)
	}
	if d, _ := ob.Depth(); d != 72-64 {
		t.Fatalf("depth %d after an Append's commit carried 64 deletions", d)
	}
	// Close commits what waits.
	if err := ob.DeleteLater(keys[64], keys[64], 424242); err != nil {
		t.Fatal(err)
	}
	ob.Close()
	if err := ob.DeleteLater(keys[65]); !errors.Is(err, ErrClosed) {
		t.Fatalf("DeleteLater after Close: %v", err)
	}
	if err := ob.Delete(keys[65]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Delete after Close: %v", err)
	}
	ob, err = Open(path, Opts{DeleteDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	es, _ = ob.Peek(100)
	if len(es) != 7 || es[0].Key != keys[65] {
		t.Fatalf("after reopen: %d entries, head %d", len(es), es[0].Key)
	}
	// Without an Append, the deletion gets a commit of its own.
	if err := ob.DeleteLater(keys[65]); err != nil {
		t.Fatal(err)
	}
	for guard := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if d, _ := ob.Depth(); d == 6 {
			break
		}
		if time.Now().After(guard) { // a hang guard, not a timing assertion
			t.Fatal("the deletion never committed on its own")
		}
	}
}

// TestGroupCommit: concurrent Appends, Deletes and DeleteLaters share
// commits; every Append gets its own increasing key, nothing is lost, and the
// counters match the file.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	ob, err := Open(path, Opts{TelemetryBound: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 60
	var wg sync.WaitGroup
	keys := make([][]uint64, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				c := Protocol
				if i%2 == 1 {
					c = Telemetry
				}
				k, err := ob.Append(msg(c, w*1000+i))
				if err != nil {
					t.Error(err)
					return
				}
				if n := len(keys[w]); n > 0 && k <= keys[w][n-1] {
					t.Errorf("writer %d: key %d after %d", w, k, keys[w][n-1])
				}
				keys[w] = append(keys[w], k)
				switch i % 3 {
				case 1:
					err = ob.Delete(k)
				case 2:
					err = ob.DeleteLater(k)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, ks := range keys {
		for _, k := range ks {
			if seen[k] {
				t.Fatalf("key %d issued twice", k)
			}
			seen[k] = true
		}
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	ob, err = Open(path, Opts{TelemetryBound: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	es, _ := ob.Peek(1 << 20)
	if len(es) != writers*each/3 {
		t.Fatalf("%d messages left, want %d", len(es), writers*each/3)
	}
	for _, e := range es {
		if n := len(e.Body); n == 0 || !seen[e.Key] {
			t.Fatalf("unexpected entry %d", e.Key)
		}
	}
}

// TestCloseWhileAppending: Appends racing Close either fail with ErrClosed or
// return a key that is durably stored.
func TestCloseWhileAppending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	ob, err := Open(path, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var acked []uint64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				k, err := ob.Append(msg(Protocol, w*1000+i))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
			}
		}(w)
	}
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 20 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	ob, err = Open(path, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	es, _ := ob.Peek(1 << 20)
	present := map[uint64]bool{}
	for _, e := range es {
		present[e.Key] = true
	}
	for _, k := range acked {
		if !present[k] {
			t.Fatalf("acknowledged key %d lost at Close", k)
		}
	}
}

// TestAppendAsyncPipelines: one producer with many AppendAsyncs in flight
// shares commits, gets keys in the order it queued, and every message whose
// Wait returned is there after a reopen; refusals are the same as Append's.
func TestAppendAsyncPipelines(t *testing.T) {
	ob, path := openTest(t, Opts{})
	tx0 := txID(t, ob)
	const n = 200
	ps := make([]*Pending, n)
	for i := range ps {
		p, err := ob.AppendAsync(msg(Protocol, i))
		if err != nil {
			t.Fatal(err)
		}
		ps[i] = p
	}
	var last uint64
	for i, p := range ps {
		<-p.Done()
		k, err := p.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if k <= last {
			t.Fatalf("message %d: key %d after %d: not in queued order", i, k, last)
		}
		last = k
	}
	if commits := txID(t, ob) - tx0; commits >= n {
		t.Errorf("%d commits for %d pipelined appends: nothing shared", commits, n)
	}
	if _, err := ob.AppendAsync(Message{Class: Protocol}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid message: %v", err)
	}
	ob.Close()
	if _, err := ob.AppendAsync(msg(Protocol, 0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	ob, err := Open(path, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	es, err := ob.Peek(n + 1)
	if err != nil || len(es) != n {
		t.Fatalf("after reopen: %d messages, %v; want %d", len(es), err, n)
	}
	for i, e := range es {
		if e.Message.MessageID != msg(Protocol, i).MessageID {
			t.Fatalf("message %d is %s, want %s", i, e.Message.MessageID, msg(Protocol, i).MessageID)
		}
	}
}

// txID is the id of the last committed transaction of ob's file.
func txID(t *testing.T, ob *Outbox) int {
	t.Helper()
	var id int
	if err := ob.DB().View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}
