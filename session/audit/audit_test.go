package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"hcp-edge/envelope"
)

func openDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "audit.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fakeClock ticks a millisecond per call.
func fakeClock() func() time.Time {
	t := time.Date(2026, 11, 22, 8, 0, 0, 123456789, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

// fill appends n entries alternating between sessions a and b, with a
// rig-wide entry every fifth.
func fill(t *testing.T, l *Log, n int) []Entry {
	t.Helper()
	var out []Entry
	kinds := []Kind{KindGate, KindTransition, KindToolCall, KindInterlock}
	for i := range n {
		sid := []string{"a", "b"}[i%2]
		if i%5 == 4 {
			sid = ""
		}
		e, err := l.Append(context.Background(), Entry{SessionID: sid, Kind: kinds[i%len(kinds)], Detail: fmt.Sprintf(`{"i":%d}`, i)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func newLog(t *testing.T) (*bolt.DB, *Log) {
	db := openDB(t)
	l, err := Open(db, Opts{Clock: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	return db, l
}

func TestAppendVerifyReplay(t *testing.T) {
	ctx := context.Background()
	_, l := newLog(t)
	if n, err := l.Verify(ctx); n != 0 || err != nil {
		t.Fatalf("empty Verify = %d, %v", n, err)
	}
	all := fill(t, l, 20)
	for i, e := range all {
		if e.Seq != uint64(i+1) || e.Hash != Sum(e) || (i > 0 && e.Prev != all[i-1].Hash) || (i == 0 && e.Prev != [32]byte{}) {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
	if n, err := l.Verify(ctx); n != 20 || err != nil {
		t.Fatalf("Verify = %d, %v", n, err)
	}
	seq, h, err := l.Head()
	if err != nil || seq != 20 || h != all[19].Hash {
		t.Fatalf("Head = %d %x %v", seq, h, err)
	}
	for _, sid := range []string{"a", "b"} {
		got, err := l.Replay(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		var want []Entry
		for _, e := range all {
			if e.SessionID == sid {
				want = append(want, e)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("Replay(%s): %d entries, want %d", sid, len(got), len(want))
		}
		for i := range got {
			if !got[i].At.Equal(want[i].At) {
				t.Fatalf("Replay(%s)[%d].At = %v, want %v", sid, i, got[i].At, want[i].At)
			}
			got[i].At = want[i].At
			if got[i] != want[i] {
				t.Fatalf("Replay(%s)[%d] = %+v, want %+v", sid, i, got[i], want[i])
			}
		}
	}
	if got, err := l.Replay(ctx, "nobody"); len(got) != 0 || err != nil {
		t.Fatalf("Replay(nobody) = %v, %v", got, err)
	}
}

func TestAppendRefusals(t *testing.T) {
	db, l := newLog(t)
	if _, err := l.Append(context.Background(), Entry{Kind: "gossip"}); !errors.Is(err, ErrKind) {
		t.Fatalf("unknown kind: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Append(ctx, Entry{Kind: KindGate}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	err := db.Update(func(tx *bolt.Tx) error { _, err := AppendTx(tx, Entry{Kind: KindGate}); return err })
	if err == nil {
		t.Fatal("zero time accepted")
	}
	db2 := openDB(t)
	err = db2.Update(func(tx *bolt.Tx) error {
		_, err := AppendTx(tx, Entry{Kind: KindGate, At: time.Now()})
		return err
	})
	if !errors.Is(err, ErrNotOpen) {
		t.Fatalf("no buckets: %v", err)
	}
	if n, _ := l.Verify(context.Background()); n != 0 {
		t.Fatalf("refused appends stored %d entries", n)
	}
}

// rewrite decodes entry seq, lets f change it, and stores it back without
// recomputing anything.
func rewrite(t *testing.T, db *bolt.DB, seq uint64, f func(r *record)) {
	t.Helper()
	err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEntries)
		var r record
		if _, err := r.UnmarshalMsg(b.Get(seqKey(seq))); err != nil {
			return err
		}
		f(&r)
		v, err := r.MarshalMsg(nil)
		if err != nil {
			return err
		}
		return b.Put(seqKey(seq), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func raw(t *testing.T, db *bolt.DB, f func(b *bolt.Bucket) error) {
	t.Helper()
	if err := db.Update(func(tx *bolt.Tx) error { return f(tx.Bucket(bucketEntries)) }); err != nil {
		t.Fatal(err)
	}
}

func TestTamperDetected(t *testing.T) {
	const n, victim = 10, 6
	tests := []struct {
		name   string
		tamper func(t *testing.T, db *bolt.DB, all []Entry)
		at     uint64 // Seq of the ChainError
	}{
		{"seq field", func(t *testing.T, db *bolt.DB, _ []Entry) { rewrite(t, db, victim, func(r *record) { r.Seq++ }) }, victim},
		{"time", func(t *testing.T, db *bolt.DB, _ []Entry) { rewrite(t, db, victim, func(r *record) { r.At++ }) }, victim},
		{"session", func(t *testing.T, db *bolt.DB, _ []Entry) {
			rewrite(t, db, victim, func(r *record) { r.Session = "x" })
		}, victim},
		{"kind", func(t *testing.T, db *bolt.DB, _ []Entry) {
			rewrite(t, db, victim, func(r *record) { r.Kind = string(KindApproval) })
		}, victim},
		{"detail", func(t *testing.T, db *bolt.DB, _ []Entry) {
			rewrite(t, db, victim, func(r *record) { r.Detail += " " })
		}, victim},
		{"prev", func(t *testing.T, db *bolt.DB, _ []Entry) { rewrite(t, db, victim, func(r *record) { r.Prev[0] ^= 1 }) }, victim},
		{"hash", func(t *testing.T, db *bolt.DB, _ []Entry) {
			rewrite(t, db, victim, func(r *record) { r.Hash[31] ^= 1 })
		}, victim},
		{"first entry", func(t *testing.T, db *bolt.DB, _ []Entry) { rewrite(t, db, 1, func(r *record) { r.Detail = "{}" }) }, 1},
		{"last entry", func(t *testing.T, db *bolt.DB, _ []Entry) { rewrite(t, db, n, func(r *record) { r.Detail = "{}" }) }, n},
		{"rehashed edit", func(t *testing.T, db *bolt.DB, _ []Entry) {
			rewrite(t, db, victim, func(r *record) {
				r.Detail = `{"forged":true}`
				r.Hash = Sum(fromRecord(*r))
			})
		}, victim + 1},
		{"garbage", func(t *testing.T, db *bolt.DB, _ []Entry) {
			raw(t, db, func(b *bolt.Bucket) error { return b.Put(seqKey(victim), []byte{0xc1, 0x00}) })
		}, victim},
		{"deleted entry", func(t *testing.T, db *bolt.DB, _ []Entry) {
			raw(t, db, func(b *bolt.Bucket) error { return b.Delete(seqKey(victim)) })
		}, victim},
		{"deleted tail", func(t *testing.T, db *bolt.DB, _ []Entry) {
			raw(t, db, func(b *bolt.Bucket) error { return b.Delete(seqKey(n)) })
		}, n},
		{"swapped values", func(t *testing.T, db *bolt.DB, _ []Entry) {
			raw(t, db, func(b *bolt.Bucket) error {
				x, y := append([]byte(nil), b.Get(seqKey(victim))...), append([]byte(nil), b.Get(seqKey(victim+1))...)
				if err := b.Put(seqKey(victim), y); err != nil {
					return err
				}
				return b.Put(seqKey(victim+1), x)
			})
		}, victim},
		{"swapped and renumbered", func(t *testing.T, db *bolt.DB, all []Entry) {
			x, y := toRecord(all[victim-1]), toRecord(all[victim])
			x.Seq, y.Seq = y.Seq, x.Seq
			raw(t, db, func(b *bolt.Bucket) error {
				vx, _ := x.MarshalMsg(nil)
				vy, _ := y.MarshalMsg(nil)
				if err := b.Put(seqKey(victim), vy); err != nil {
					return err
				}
				return b.Put(seqKey(victim+1), vx)
			})
		}, victim},
		{"inserted entry", func(t *testing.T, db *bolt.DB, all []Entry) {
			e := all[n-1]
			e.Seq, e.Prev, e.Detail = n+1, e.Hash, "{}"
			e.Hash = Sum(e)
			r := toRecord(e)
			raw(t, db, func(b *bolt.Bucket) error { v, _ := r.MarshalMsg(nil); return b.Put(seqKey(n+1), v) })
		}, n + 1},
		{"head", func(t *testing.T, db *bolt.DB, _ []Entry) {
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyHead, []byte{1}) }); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, l := newLog(t)
			all := fill(t, l, n)
			tt.tamper(t, db, all)
			_, err := l.Verify(context.Background())
			var ce *ChainError
			if !errors.As(err, &ce) || !errors.Is(err, ErrBrokenChain) {
				t.Fatalf("Verify = %v, want a *ChainError", err)
			}
			if ce.Seq != tt.at {
				t.Fatalf("Verify broke at %d (%v), want %d", ce.Seq, err, tt.at)
			}
		})
	}
}

func TestReplayDetectsTamper(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(db *bolt.DB) error
	}{
		{"content", func(db *bolt.DB) error {
			return db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketEntries)
				var r record
				if _, err := r.UnmarshalMsg(b.Get(seqKey(3))); err != nil {
					return err
				}
				r.Detail = "{}"
				v, _ := r.MarshalMsg(nil)
				return b.Put(seqKey(3), v)
			})
		}},
		{"deleted", func(db *bolt.DB) error {
			return db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketEntries).Delete(seqKey(3)) })
		}},
		{"predecessor deleted", func(db *bolt.DB) error {
			return db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketEntries).Delete(seqKey(2)) })
		}},
		{"misindexed", func(db *bolt.DB) error {
			return db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketSessions).Bucket([]byte("a")).Put(seqKey(2), nil)
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, l := newLog(t)
			fill(t, l, 6) // a: 1, 3; b: 2, 4; rig-wide: 5; a: 6
			if err := tt.tamper(db); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Replay(context.Background(), "a"); !errors.Is(err, ErrBrokenChain) {
				t.Fatalf("Replay = %v, want ErrBrokenChain", err)
			}
		})
	}
}

func TestSumCanonical(t *testing.T) {
	base := Entry{Seq: 3, At: time.Unix(0, 42), SessionID: "ab", Kind: KindGate, Detail: "c"}
	// moving a byte between length-prefixed fields changes the hash
	shifted := base
	shifted.SessionID, shifted.Kind = "a", Kind("b"+string(KindGate))
	if Sum(base) == Sum(shifted) {
		t.Fatal("field boundaries are not part of the encoding")
	}
	// the location of the time does not matter, only the instant
	loc := base
	loc.At = base.At.In(time.FixedZone("x", 3600))
	if Sum(base) != Sum(loc) {
		t.Fatal("time zone changes the hash")
	}
}

func TestInterlockAdapter(t *testing.T) {
	ctx := context.Background()
	_, l := newLog(t)
	var a envelope.Auditor = Interlock{Log: l}
	act := envelope.SetpointAction(1000)
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		e    envelope.Entry
		kind Kind
	}{
		{"accepted write", envelope.Entry{At: at, SessionID: "s1", Action: &act, Decision: envelope.DecisionAccepted}, KindToolCall},
		{"executed write", envelope.Entry{SessionID: "s1", Action: &act, Decision: envelope.DecisionExecuted}, KindToolCall},
		{"failed write", envelope.Entry{SessionID: "s1", Action: &act, Decision: envelope.DecisionFailed, Reason: "timeout"}, KindToolCall},
		{"refused write", envelope.Entry{SessionID: "s1", Action: &act, Decision: envelope.DecisionRefused, Rule: "max"}, KindInterlock},
		{"e-stop", envelope.Entry{Decision: envelope.DecisionHalted, Reason: "e-stop"}, KindInterlock},
		{"reset", envelope.Entry{Decision: envelope.DecisionReset, Operator: "ana"}, KindInterlock},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := a.Record(ctx, tt.e); err != nil {
				t.Fatal(err)
			}
			_, h, _ := l.Head()
			var got Entry
			_ = l.db.View(func(tx *bolt.Tx) error {
				got, _ = decode(seqKey(uint64(i+1)), tx.Bucket(bucketEntries).Get(seqKey(uint64(i+1))))
				return nil
			})
			if got.Hash != h || got.Kind != tt.kind || got.SessionID != tt.e.SessionID {
				t.Fatalf("stored %+v, want kind %s", got, tt.kind)
			}
			var back struct {
				Decision envelope.Decision `json:"decision"`
				At       time.Time         `json:"at"`
			}
			if err := json.Unmarshal([]byte(got.Detail), &back); err != nil || back.Decision != tt.e.Decision || !back.At.Equal(got.At) {
				t.Fatalf("detail %s: %v", got.Detail, err)
			}
			if !tt.e.At.IsZero() && !got.At.Equal(tt.e.At) {
				t.Fatalf("At = %v, want %v", got.At, tt.e.At)
			}
		})
	}
	if got, err := l.Replay(ctx, "s1"); err != nil || len(got) != 4 {
		t.Fatalf("Replay(s1) = %d entries, %v", len(got), err)
	}
	if n, err := l.Verify(ctx); err != nil || n != uint64(len(tests)) {
		t.Fatalf("Verify = %d, %v", n, err)
	}
}

// TestTail: the newest n entries, oldest first; all of a shorter log.
func TestTail(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "a.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	l, err := Open(db, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := l.Tail(ctx, 5); err != nil || len(got) != 0 {
		t.Fatalf("empty log: %v %v", got, err)
	}
	for i := range 7 {
		if _, err := l.Append(ctx, Entry{Kind: KindTransition, SessionID: fmt.Sprint("s", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		n     int
		first uint64
		len   int
	}{{"newest three", 3, 5, 3}, {"more than the log", 50, 1, 7}, {"none", 0, 0, 0}} {
		got, err := l.Tail(ctx, tt.n)
		if err != nil || len(got) != tt.len || (tt.len > 0 && (got[0].Seq != tt.first || got[len(got)-1].Seq != 7)) {
			t.Fatalf("%s: %+v %v", tt.name, got, err)
		}
	}
}
