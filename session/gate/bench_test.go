package gate

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
)

// benchDecide times every Decide and reports p50 and p99 in µs.
func benchDecide(b *testing.B, g *Gate, req Request, want Outcome) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		d, err := g.Decide(ctx, req)
		lat = append(lat, time.Since(start))
		if err != nil || d.Outcome != want {
			b.Fatalf("%s %v %v", d.Outcome, d.Rejection, err)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkGate is the gate decision time, the audit record excluded
// (in-memory recorder) except in "audited-bbolt", which appends to a real
// hash-chained log with fsync.
func BenchmarkGate(b *testing.B) {
	hot := seed(b)
	hot.CallerID = "pipeline-7"
	hot.Inputs = json.RawMessage(`{"target_material": "MoS2", "substrate": "SiO2/Si", "temperature_range": {"min": 700, "max": 850, "unit": "celsius"}}`)
	bad := seed(b)
	bad.Inputs = json.RawMessage(`{"target_material": "MoS2", "temperature_range": {"min": 700, "max": 2000}}`)
	cases := []struct {
		name string
		req  Request
		want Outcome
	}{
		{"seed-pending-approval", Request{MessageID: "m", SessionID: "s", BrokerUser: "alpha", Submit: seed(b)}, PendingApproval},
		{"risk-too-high", Request{MessageID: "m", BrokerUser: "pipe", Submit: hot}, Rejected},
		{"invalid-input", Request{MessageID: "m", BrokerUser: "alpha", Submit: bad}, Rejected},
		{"unauthorized", Request{MessageID: "m", BrokerUser: "mallory", Submit: seed(b)}, Rejected},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			g, err := New(testConfig(), testRegistry(b), &discard{}, Opts{Clock: func() time.Time { return weekday }})
			if err != nil {
				b.Fatal(err)
			}
			benchDecide(b, g, c.req, c.want)
		})
	}
	b.Run("audited-bbolt", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		log, err := audit.Open(db, audit.Opts{})
		if err != nil {
			b.Fatal(err)
		}
		g, err := New(testConfig(), testRegistry(b), log, Opts{Clock: func() time.Time { return weekday }})
		if err != nil {
			b.Fatal(err)
		}
		benchDecide(b, g, cases[0].req, PendingApproval)
	})
}
