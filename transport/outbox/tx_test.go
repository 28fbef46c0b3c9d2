package outbox

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// AppendTx keeps the Telemetry bound with the count stored in the
// transaction, whichever path (Append's committer, a caller's transaction)
// wrote the earlier messages; a rolled-back transaction leaves no trace.
func TestAppendTxTelemetryBoundAndRollback(t *testing.T) {
	ob, _ := openTest(t, Opts{TelemetryBound: 3})
	for i := range 2 {
		if _, err := ob.Append(msg(Telemetry, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ob.DB().Update(func(tx *bolt.Tx) error {
		_, err := ob.AppendTx(tx, msg(Telemetry, 2), msg(Protocol, 3), msg(Telemetry, 4))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if total, tel := ob.Depth(); total != 4 || tel != 3 {
		t.Fatalf("depth %d/%d, want 4 with 3 telemetry (one dropped)", total, tel)
	}
	if d, err := ob.TakeDropped(); err != nil || d != 1 {
		t.Fatalf("dropped %d %v, want 1", d, err)
	}
	boom := errors.New("boom")
	err := ob.DB().Update(func(tx *bolt.Tx) error {
		if _, err := ob.AppendTx(tx, msg(Telemetry, 5), msg(Protocol, 6)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	es, err := ob.Peek(10)
	if err != nil || len(es) != 4 {
		t.Fatalf("after rollback: %d entries %v", len(es), err)
	}
	if _, err := ob.Append(msg(Telemetry, 7)); err != nil {
		t.Fatal(err)
	}
	if total, tel := ob.Depth(); total != 4 || tel != 3 {
		t.Fatalf("depth %d/%d after a rolled-back AppendTx and one Append, want 4/3", total, tel)
	}
}

// TestAppendTxCarriesDeleteLater: deletions waiting from DeleteLater ride
// along with a caller's AppendTx transaction (no commit of their own) once
// they may ride (rideCount wait, or DeleteDelay has passed), as with an
// Append's commit; a rolled-back transaction leaves them queued, and the
// committer (here Close) commits them.
func TestAppendTxCarriesDeleteLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	ob, err := Open(path, Opts{DeleteDelay: time.Hour}) // no commit of their own before Close
	if err != nil {
		t.Fatal(err)
	}
	var keys []uint64
	for i := range 70 {
		k, err := ob.Append(msg(Protocol, i))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	appendTx := func(i int, fail error) error {
		return ob.DB().Update(func(tx *bolt.Tx) error {
			if _, err := ob.AppendTx(tx, msg(Protocol, i)); err != nil {
				return err
			}
			return fail
		})
	}
	stored := func() int {
		n := 0
		ob.DB().View(func(tx *bolt.Tx) error { n = tx.Bucket([]byte("outbox")).Bucket(bucketMsgs).Stats().KeyN; return nil })
		return n
	}
	// Two wait: they may not ride yet.
	if err := ob.DeleteLater(keys[0], keys[1]); err != nil {
		t.Fatal(err)
	}
	if err := appendTx(100, nil); err != nil {
		t.Fatal(err)
	}
	if n := stored(); n != 71 {
		t.Fatalf("%d stored, want 71: two deletions rode before they may", n)
	}
	// 64 wait (one twice): a rolled-back transaction deletes nothing.
	if err := ob.DeleteLater(keys[1:64]...); err != nil {
		t.Fatal(err)
	}
	tx0 := txID(t, ob)
	boom := errors.New("boom")
	if err := appendTx(101, boom); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if n := stored(); n != 71 {
		t.Fatalf("%d stored after a rollback, want 71", n)
	}
	if d, _ := ob.Depth(); d != 71 {
		t.Fatalf("depth %d after a rollback, want 71", d)
	}
	// The next transaction carries them: one commit, theirs included.
	if err := appendTx(102, nil); err != nil {
		t.Fatal(err)
	}
	if tx := txID(t, ob); tx != tx0+1 {
		t.Fatalf("%d commits for one AppendTx carrying deletions, want 1", tx-tx0)
	}
	if n := stored(); n != 72-64 {
		t.Fatalf("%d stored, want %d: the deletions did not ride along", n, 72-64)
	}
	if d, _ := ob.Depth(); d != 72-64 {
		t.Fatalf("depth %d, want %d", d, 72-64)
	}
	if es, _ := ob.Peek(100); len(es) != 8 || es[0].Key != keys[64] {
		t.Fatalf("peek: %d entries", len(es))
	}
	// What rides is taken off the queue: Close has only the last one to commit.
	if err := ob.DeleteLater(keys[64]); err != nil {
		t.Fatal(err)
	}
	if err := appendTx(103, boom); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	ob, err = Open(path, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if es, _ := ob.Peek(100); len(es) != 7 || es[0].Key != keys[65] {
		t.Fatalf("after reopen: %d entries, head %d", len(es), es[0].Key)
	}
}

// TestDeleteLaterRidesOncePerTx: the inbox's group commit calls AppendTx
// once per command in one transaction; the waiting DeleteLater keys ride
// with the first call only (each call looked every key up again), and are
// deleted once the transaction commits. After a rollback the next
// transaction carries them.
func TestDeleteLaterRidesOncePerTx(t *testing.T) {
	ob, err := Open(filepath.Join(t.TempDir(), "o.db"), Opts{DeleteDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	var keys []uint64
	for i := range rideCount {
		k, err := ob.Append(msg(Protocol, i))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := ob.DeleteLater(keys...); err != nil {
		t.Fatal(err)
	}
	group := func(fail error) error {
		return ob.DB().Update(func(tx *bolt.Tx) error {
			for i := range 3 {
				if _, err := ob.AppendTx(tx, msg(Protocol, 1000+i)); err != nil {
					return err
				}
			}
			if del := ob.rideTx(tx); del != nil {
				t.Errorf("%d keys would ride again in the same transaction", len(del))
			}
			return fail
		})
	}
	boom := errors.New("boom")
	if err := group(boom); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if d, _ := ob.Depth(); d != rideCount {
		t.Fatalf("depth %d after a rollback, want %d", d, rideCount)
	}
	if err := group(nil); err != nil {
		t.Fatal(err)
	}
	if d, _ := ob.Depth(); d != 3 {
		t.Fatalf("depth %d, want the 3 appended: the deletions did not ride after the rollback", d)
	}
	ob.mu.Lock()
	left, riding := len(ob.later), ob.riding
	ob.mu.Unlock()
	if left != 0 || riding != nil {
		t.Fatalf("%d keys still waiting, riding %v", left, riding)
	}
}
