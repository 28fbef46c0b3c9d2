package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"hcp-edge/session/lifecycle"
)

// BenchmarkCheckpoint measures one fsync'ed checkpoint commit (record,
// checkpoint_created event, session record) with a 256-byte payload, and
// reports its latency percentiles and the bytes it stores.
func BenchmarkCheckpoint(b *testing.B) {
	ctx := context.Background()
	opts := DefaultOpts()
	s, err := Open(filepath.Join(b.TempDir(), "state.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Create(ctx, Session{ID: "bench"}); err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.Transition(ctx, "bench", Change{To: lifecycle.Running}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 256)
	nc := NewCheckpoint{Description: "hold at growth temperature", Resumable: true, Step: "grow", Payload: payload}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, _, err := s.Checkpoint(ctx, "bench", nc); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	var stored, n int
	_ = s.db.View(func(tx *bolt.Tx) error {
		id := []byte("bench")
		cb, eb := tx.Bucket(bucketCheckpoints).Bucket(id), tx.Bucket(bucketEvents).Bucket(id)
		return cb.ForEach(func(k, v []byte) error {
			n++
			stored += len(k) + len(v) + len(k) + len(eb.Get(k)) // checkpoint and its event
			return nil
		})
	})
	if n > 0 {
		b.ReportMetric(float64(stored)/float64(n), "B/ckpt")
		b.ReportMetric(float64(len(payload)), "payload-B")
	}
}
