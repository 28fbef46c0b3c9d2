package amqp_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/transport/outbox"
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

// busyFloor is diskFloor measured while bare publishers persist ms on the
// broker, over and over until it is done: the outbox's commits share the disk
// with the broker's own writes while its publisher publishes (here the
// broker runs on the same machine; an agent's broker is usually elsewhere).
func busyFloor(b *testing.B, conn *amqp091.Connection, ms []outbox.Message) (commitsPerSec, syncsPerSec float64) {
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				errc <- nil
				return
			default:
			}
			if _, err := bareRun(conn, ms); err != nil {
				errc <- err
				return
			}
		}
	}()
	commitsPerSec, syncsPerSec = diskFloor(b)
	close(stop)
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return commitsPerSec, syncsPerSec
}

// floorMetrics accumulates diskFloor and busyFloor over a benchmark's
// iterations.
type floorMetrics struct {
	commits, syncs, busyCommits, busySyncs float64
	n                                      int
}

func (f *floorMetrics) measure(b *testing.B, conn *amqp091.Connection, ms []outbox.Message) {
	c, s := diskFloor(b)
	bc, bs := busyFloor(b, conn, ms)
	f.commits += c
	f.syncs += s
	f.busyCommits += bc
	f.busySyncs += bs
	f.n++
}

// report adds the floor's metrics: bbolt-commits/s and fdatasyncs/s with the
// broker idle, the same with -busy while it persists flat out, and
// ceiling/bare: the most outbox/bare can be when each of producers waits for
// its message to be durable before producing the next. At most producers
// messages share a commit, so the outbox makes at most producers ×
// bbolt-commits/s (the idle figure: the outbox's own publisher keeps the
// broker less busy than bare publishers do, so the -busy figure is no bound).
// ceiling-1sync/bare is the same for a store that makes a group durable with
// one fdatasync of an appended record (a journal) instead of a bbolt commit:
// producers × fdatasyncs/s.
func (f *floorMetrics) report(b *testing.B, producers int, bareRate float64) {
	if f.n == 0 {
		return
	}
	n := float64(f.n)
	b.ReportMetric(f.commits/n, "bbolt-commits/s")
	b.ReportMetric(f.syncs/n, "fdatasyncs/s")
	b.ReportMetric(f.busyCommits/n, "bbolt-commits/s-busy")
	b.ReportMetric(f.busySyncs/n, "fdatasyncs/s-busy")
	b.ReportMetric(float64(producers)*f.commits/n/bareRate, "ceiling/bare")
	b.ReportMetric(float64(producers)*f.syncs/n/bareRate, "ceiling-1sync/bare")
}
