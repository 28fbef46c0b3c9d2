package outbox

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Regression: AppendTx inside a caller's write transaction (the inbox records
// its replies that way) while Delete runs concurrently (the publisher deleting
// confirmed messages). Delete holds the outbox's mutex and waits for bbolt's
// writer lock; AppendTx held that writer lock and took the mutex to check
// whether the outbox was closed: a deadlock, seen as a hung Supervisor.Close.
func TestAppendTxAndDeleteDoNotDeadlock(t *testing.T) {
	ob, _ := openTest(t, Opts{})
	k, err := ob.Append(msg(Protocol, 1))
	if err != nil {
		t.Fatal(err)
	}
	inTx := make(chan struct{})
	deleting := make(chan struct{})
	done := make(chan error, 2)
	go func() {
		done <- ob.DB().Update(func(tx *bolt.Tx) error {
			close(inTx)
			<-deleting                        // Delete now holds the mutex and waits for the writer lock
			time.Sleep(20 * time.Millisecond) // let it get there
			_, err := ob.AppendTx(tx, msg(Protocol, 2))
			return err
		})
	}()
	<-inTx
	go func() {
		close(deleting)
		done <- ob.Delete(k)
	}()
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("AppendTx and Delete deadlocked")
		}
	}
	if total, _ := ob.Depth(); total != 1 {
		t.Fatalf("depth %d, want 1 (one appended in the transaction, one deleted)", total)
	}
}
