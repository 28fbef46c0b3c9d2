package outbox

import (
	"bytes"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// eventMessage is a realistic progress event: routing key, ids and a ~330-byte body.
func eventMessage() Message {
	m := msg(Telemetry, 1)
	m.Body = []byte(`{"hcp_version":"1.0","message_id":"3f1c9b1e-8d0a-4c52-9a55-0d2e8f6a7b41","timestamp":"2026-01-15T08:30:00.000Z","session_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","type":"event","payload":{"event_type":"progress","sequence":42,"data":{"stage":"ramp","percent":37.5,"message":"furnace 512.3 C, setpoint 700 C"}}}`)
	return m
}

// BenchmarkAppend: one fsynced bbolt commit per Append, as in production.
func BenchmarkAppend(b *testing.B) {
	ob, _ := openTest(b, Opts{TelemetryBound: 1 << 30})
	m := eventMessage()
	b.SetBytes(int64(len(m.Body)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := ob.Append(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendDelete: the steady state of a connected uplink (append, then
// delete on confirm).
func BenchmarkAppendDelete(b *testing.B) {
	ob, _ := openTest(b, Opts{TelemetryBound: 1 << 30})
	m := eventMessage()
	for b.Loop() {
		k, err := ob.Append(m)
		if err != nil {
			b.Fatal(err)
		}
		if err := ob.Delete(k); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBytesPerEvent reports the msgp record size, the bytes of bbolt
// pages the "msgs" bucket holds (leaf and branch pages allocated), the bytes
// the database uses (its high-water mark) and the file bytes (which bbolt
// grows in steps) per buffered event for a backlog of 5,000 events.
func BenchmarkBytesPerEvent(b *testing.B) {
	const n = 5000
	m := eventMessage()
	m.CreatedUnixNano = 1
	rec, _ := m.MarshalMsg(nil)
	for b.Loop() {
		ob, path := openTest(b, Opts{TelemetryBound: 1 << 30})
		for i := 0; i < n; i++ {
			if _, err := ob.Append(m); err != nil {
				b.Fatal(err)
			}
		}
		if err := ob.DB().View(func(tx *bolt.Tx) error {
			bs := tx.Bucket([]byte(DefaultOpts().Bucket)).Bucket(bucketMsgs).Stats()
			b.ReportMetric(float64(bs.LeafAlloc+bs.BranchAlloc)/n, "page-bytes/event")
			b.ReportMetric(float64(tx.Size())/n, "used-bytes/event")
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		ob.Close()
		st, _ := os.Stat(path)
		b.ReportMetric(float64(st.Size())/n, "file-bytes/event")
	}
	b.ReportMetric(float64(len(rec)), "record-bytes/event")
	b.ReportMetric(float64(len(bytes.TrimSpace(m.Body))), "body-bytes/event")
}
