package audit

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func seqsOf(es []Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func TestQuery(t *testing.T) {
	_, l := newLog(t)
	all := fill(t, l, 50) // a millisecond apart from 08:00:00.124456789
	at := func(i int) time.Time { return all[i].At }
	tests := []struct {
		name string
		q    Query
		want []uint64
	}{
		{"everything", Query{}, seqsOf(all)},
		{"since", Query{Since: at(45)}, []uint64{46, 47, 48, 49, 50}},
		{"since and until", Query{Since: at(10), Until: at(13)}, []uint64{11, 12, 13}},
		{"until only", Query{Until: at(2)}, []uint64{1, 2}},
		{"kind", Query{Since: at(40), Kinds: []Kind{KindGate}}, []uint64{41, 45, 49}},
		{"session", Query{SessionID: "a", Since: at(40)}, []uint64{41, 43, 47, 49}},
		{"rig-wide kinds after a position", Query{After: 40, Kinds: []Kind{KindInterlock}}, []uint64{44, 48}},
		{"limit keeps the newest", Query{Limit: 2}, []uint64{49, 50}},
		{"empty window", Query{Since: at(49).Add(time.Hour)}, nil},
		{"unknown session", Query{SessionID: "zz"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.Query(context.Background(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(seqsOf(got)) != fmt.Sprint(tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("got %v, want %v", seqsOf(got), tt.want)
			}
		})
	}
}

// A clock stepped back (a Pi before and after NTP): entries are found by
// their own times, in chain order, and the index agrees with a scan.
func TestQueryClockStepBack(t *testing.T) {
	db := openDB(t)
	base := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	times := []time.Time{base, base.Add(time.Hour), base.Add(2 * time.Hour), base.Add(30 * time.Minute), base.Add(3 * time.Hour)}
	i := 0
	l, err := Open(db, Opts{Clock: func() time.Time { t := times[i]; i++; return t }})
	if err != nil {
		t.Fatal(err)
	}
	for range times {
		if _, err := l.Append(context.Background(), Entry{Kind: KindControl, Detail: "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Query(context.Background(), Query{Since: base.Add(20 * time.Minute), Until: base.Add(90 * time.Minute)})
	if err != nil || fmt.Sprint(seqsOf(got)) != "[2 4]" {
		t.Fatalf("got %v %v, want [2 4]", seqsOf(got), err)
	}
}

// A file written before the index (or by a version without it) is indexed
// by Init; until then a window is read from the chain, with the same
// answer.
func TestQueryBackfill(t *testing.T) {
	db, l := newLog(t)
	all := fill(t, l, 30)
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketTime); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(keyTimeHead)
	}); err != nil {
		t.Fatal(err)
	}
	fill(t, l, 5) // appended without an index: not indexed
	q := Query{Since: all[25].At}
	scan, err := l.Query(context.Background(), q)
	if err != nil || len(scan) != 10 {
		t.Fatalf("scan: %v %v", seqsOf(scan), err)
	}
	if err := db.Update(Init); err != nil {
		t.Fatal(err)
	}
	var indexed uint64
	_ = db.View(func(tx *bolt.Tx) error { indexed = readTimeHead(tx.Bucket(bucketMeta)); return nil })
	if indexed != 35 {
		t.Fatalf("time index head %d after Init, want 35", indexed)
	}
	idx, err := l.Query(context.Background(), q)
	if err != nil || fmt.Sprint(seqsOf(idx)) != fmt.Sprint(seqsOf(scan)) {
		t.Fatalf("indexed %v, scan %v (%v)", seqsOf(idx), seqsOf(scan), err)
	}
}

func TestQueryEdited(t *testing.T) {
	db, l := newLog(t)
	fill(t, l, 10)
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEntries)
		v := b.Get(seqKey(7))
		var r record
		if _, err := r.UnmarshalMsg(v); err != nil {
			return err
		}
		r.Detail = `{"i":"edited"}`
		nv, _ := r.MarshalMsg(nil)
		return b.Put(seqKey(7), nv)
	}); err != nil {
		t.Fatal(err)
	}
	_, err := l.Query(context.Background(), Query{})
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Seq != 7 {
		t.Fatalf("got %v, want a ChainError at 7", err)
	}
}

// BenchmarkQuerySince: the newest minute of a 100,000-entry log (one entry
// a second), read through the time index. The bound is 100 ms.
//
//	go test -run XXX -bench QuerySince -benchtime 20x ./session/audit/
func BenchmarkQuerySince(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "audit.db"), 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(Init); err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += 5000 {
		if err := db.Update(func(tx *bolt.Tx) error {
			for j := i; j < i+5000; j++ {
				sid := fmt.Sprintf("s%04d", j/100)
				if j%7 == 0 {
					sid = ""
				}
				if _, err := AppendTx(tx, Entry{At: base.Add(time.Duration(j) * time.Second), SessionID: sid, Kind: KindToolCall,
					Detail: `{"decision":"executed","action":{"kind":"setpoint","value":700}}`}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	l, _ := Open(db, Opts{})
	since := base.Add((n - 60) * time.Second)
	b.ResetTimer()
	for b.Loop() {
		es, err := l.Query(context.Background(), Query{Since: since})
		if err != nil || len(es) != 60 {
			b.Fatalf("%d entries, %v", len(es), err)
		}
	}
}
