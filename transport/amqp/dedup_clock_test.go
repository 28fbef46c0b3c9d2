package amqp

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/internal/wallclock"
	"hcp-edge/transport/outbox"
)

type fakeTime struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeTime) Now() time.Time          { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fakeTime) Advance(d time.Duration) { f.mu.Lock(); f.now = f.now.Add(d); f.mu.Unlock() }

// TestDedupWindowClockStep: the de-duplication window keeps its entries
// when the wall clock steps by +6 h or −6 h (NTP setting a Raspberry Pi's
// clock after boot), and still forgets an entry once it is older than the
// window by the monotonic clock and by the wall clock.
func TestDedupWindowClockStep(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ob, err := outbox.New(db, outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ob.Close() })
	ft := &fakeTime{now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	clk := wallclock.NewFrom(ft.Now)
	in, err := NewInbox(db, ob, EngineFunc(func(context.Context, Command) (Outcome, error) { return Outcome{}, nil }),
		InboxOpts{CalleeID: "cvd-rig-01", DedupWindow: 5 * time.Hour, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	record := func(id string) {
		t.Helper()
		if err := db.Update(func(tx *bolt.Tx) error { return in.recordTx(tx, id, clk.Now(), nil) }); err != nil {
			t.Fatal(err)
		}
	}
	kept := func() map[string]bool {
		t.Helper()
		if err := in.Prune(); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(in.name).Bucket(bucketIDs).ForEach(func(k, _ []byte) error { out[string(k)] = true; return nil })
		})
		return out
	}
	record("m-1")
	ft.Advance(time.Hour)
	clk.Step(6 * time.Hour) // the wall clock says m-1 is 7 h old: it is 1 h old
	record("m-2")
	if k := kept(); !k["m-1"] || !k["m-2"] {
		t.Fatalf("after +6h: kept %v, want m-1 and m-2", k)
	}
	ft.Advance(time.Hour)
	clk.Step(-12 * time.Hour) // now 6 h behind: m-2's stamp is 12 h in the future
	record("m-3")
	if k := kept(); !k["m-1"] || !k["m-2"] || !k["m-3"] {
		t.Fatalf("after −12h: kept %v, want all", k)
	}
	ft.Advance(2*time.Hour + 59*time.Minute) // m-1 is 4 h 59 min old
	if k := kept(); len(k) != 3 {
		t.Fatalf("within the window: kept %v, want all", k)
	}
	// Once the wall clock has stepped back, every stamp may have been
	// written 6 h behind: entries are kept up to 6 h longer (the safe
	// side), never dropped early. m-2, stamped 6 h ahead, waits for the
	// wall clock to pass its stamp by the window.
	ft.Advance(6*time.Hour + 2*time.Minute) // m-1 11 h 1 min old, m-3 9 h 1 min
	if k := kept(); k["m-1"] || !k["m-2"] || k["m-3"] {
		t.Fatalf("m-1 and m-3 past the window and the step back: kept %v, want m-2", k)
	}
	ft.Advance(7 * time.Hour)
	if k := kept(); len(k) != 0 {
		t.Fatalf("all past the window by both clocks: kept %v", k)
	}
}
