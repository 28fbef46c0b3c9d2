package audit_test

import (
	"context"
	"io"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
	"hcp-edge/session/audit/audittest"
)

var weekStart = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// weekLog stores es in a fresh log, in a few large transactions.
func weekLog(b *testing.B, es []audit.Entry) *audit.Log {
	db, err := bolt.Open(b.TempDir()+"/audit.db", 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	l, err := audit.Open(db, audit.Opts{})
	if err != nil {
		b.Fatal(err)
	}
	for len(es) > 0 {
		n := min(len(es), 5000)
		if err := db.Update(func(tx *bolt.Tx) error {
			for _, e := range es[:n] {
				if _, err := audit.AppendTx(tx, e); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		es = es[n:]
	}
	return l
}

// BenchmarkReportWeek is `audit report --since 7d` over a week of the kill
// test's traffic (40 sessions a day, 300 actions each: some 170,000
// entries): the window read from the log through the time index, each
// entry checked against its hash, summarised by day and printed.
func BenchmarkReportWeek(b *testing.B) {
	es := audittest.Week(weekStart, 40, 300)
	l := weekLog(b, es)
	ctx := context.Background()
	until := weekStart.AddDate(0, 0, 7)
	b.ResetTimer()
	for b.Loop() {
		got, err := l.Query(ctx, audit.Query{Since: weekStart, Until: until})
		if err != nil || len(got) != len(es) {
			b.Fatalf("%d of %d entries, %v", len(got), len(es), err)
		}
		r := audit.Build(got, audit.ReportOpts{Since: weekStart, Until: until})
		if err := r.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(es)), "entries")
}

// BenchmarkReportBuild is Build alone over the same week.
func BenchmarkReportBuild(b *testing.B) {
	es := audittest.Week(weekStart, 40, 300)
	for i := range es {
		es[i].Seq = uint64(i + 1)
	}
	until := weekStart.AddDate(0, 0, 7)
	b.ResetTimer()
	for b.Loop() {
		audit.Build(es, audit.ReportOpts{Since: weekStart, Until: until})
	}
	b.ReportMetric(float64(len(es)), "entries")
}
