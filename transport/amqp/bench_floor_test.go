package amqp_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// floorN is how many commits and syncs one floor measurement makes.
const floorN = 300

// diskFloor measures, on the disk the outbox's file is on, what bounds an
// outbox whose producers wait for each message to be durable: the rate of
// bbolt commits of one small Put each, opened with outbox.Open's options
// (each commit is two fdatasyncs: the pages, then the meta page), and the
// rate of single fdatasyncs after a 4 KiB overwrite of a preallocated file
// (the least any durable write costs). Measured in the same run as the
// outbox and the bare publisher, as the machine's load moves all three.
func diskFloor(b *testing.B) (commitsPerSec, syncsPerSec float64) {
	dir := b.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "floor.db"), 0o600, &bolt.Options{
		Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	name := []byte("msgs")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(name); return err }); err != nil {
		b.Fatal(err)
	}
	v := make([]byte, 400) // about an event's record
	start := time.Now()
	for range floorN {
		if err := db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket(name)
			seq, err := bk.NextSequence()
			if err != nil {
				return err
			}
			k := make([]byte, 8)
			binary.BigEndian.PutUint64(k, seq)
			return bk.Put(k, v)
		}); err != nil {
			b.Fatal(err)
		}
	}
	commitsPerSec = floorN / time.Since(start).Seconds()

	f, err := os.OpenFile(filepath.Join(dir, "floor.raw"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	if _, err := f.Write(make([]byte, floorN*len(page))); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	for i := range floorN {
		if _, err := f.WriteAt(page, int64(i*len(page))); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
	}
	syncsPerSec = floorN / time.Since(start).Seconds()
	return commitsPerSec, syncsPerSec
}

// floorMetrics accumulates diskFloor over a benchmark's iterations.
type floorMetrics struct {
	commits, syncs float64
	n              int
}

func (f *floorMetrics) measure(b *testing.B) {
	c, s := diskFloor(b)
	f.commits += c
	f.syncs += s
	f.n++
}

// report adds the floor's metrics: bbolt-commits/s and fdatasyncs/s, and
// ceiling/bare, the most outbox/bare can be when each of producers waits for
// its message to be durable before producing the next: at most producers
// messages share a commit, so the outbox makes at most producers ×
// bbolt-commits/s.
func (f *floorMetrics) report(b *testing.B, producers int, bareRate float64) {
	if f.n == 0 {
		return
	}
	commits, syncs := f.commits/float64(f.n), f.syncs/float64(f.n)
	b.ReportMetric(commits, "bbolt-commits/s")
	b.ReportMetric(syncs, "fdatasyncs/s")
	b.ReportMetric(float64(producers)*commits/bareRate, "ceiling/bare")
}
