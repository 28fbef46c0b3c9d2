package outbox

import (
	"errors"
	"testing"

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
