package outbox

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func msg(class Class, i int) Message {
	return Message{
		Class:         class,
		Exchange:      "hcp.events",
		RoutingKey:    "alpha.7c9e6679-7425-40de-944b-e07fc1f90ae7.event",
		MessageID:     fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
		Type:          "event",
		CorrelationID: "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		Body:          []byte(fmt.Sprintf(`{"n":%d}`, i)),
	}
}

func openTest(t testing.TB, opts Opts) (*Outbox, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "outbox.db")
	ob, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ob.Close() })
	return ob, path
}

func TestAppendPeekDeleteOrder(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ob, _ := openTest(t, Opts{Now: func() time.Time { return now }})
	var keys []uint64
	for i := 0; i < 10; i++ {
		k, err := ob.Append(msg(Protocol, i))
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 && k <= keys[len(keys)-1] {
			t.Fatalf("key %d after %d", k, keys[len(keys)-1])
		}
		keys = append(keys, k)
	}
	es, err := ob.Peek(4)
	if err != nil || len(es) != 4 {
		t.Fatalf("%v %v", es, err)
	}
	for i, e := range es {
		if e.Key != keys[i] || !bytes.Equal(e.Body, msg(Protocol, i).Body) || e.MessageID != msg(Protocol, i).MessageID || e.CreatedUnixNano != now.UnixNano() {
			t.Fatalf("entry %d = %+v", i, e)
		}
	}
	more, _ := ob.PeekAfter(es[3].Key, 100)
	if len(more) != 6 || more[0].Key != keys[4] {
		t.Fatalf("PeekAfter: %d entries", len(more))
	}
	if err := ob.Delete(keys[0], keys[1], keys[1], 999999); err != nil {
		t.Fatal(err)
	}
	if d, _ := ob.Depth(); d != 8 {
		t.Fatalf("depth %d", d)
	}
	es, _ = ob.Peek(1)
	if es[0].Key != keys[2] {
		t.Fatalf("head %d", es[0].Key)
	}
	s, err := ob.Stats()
	if err != nil || s.OldestKey != keys[2] || !s.Oldest.Equal(now) || s.Depth != 8 {
		t.Fatalf("%+v %v", s, err)
	}
	if age, _ := ob.OldestAge(now.Add(time.Minute)); age != time.Minute {
		t.Fatal(age)
	}
	if es, _ := ob.Peek(0); es != nil {
		t.Fatal(es)
	}
}

func TestPeekOwnsMemory(t *testing.T) {
	ob, _ := openTest(t, Opts{})
	if _, err := ob.Append(msg(Protocol, 1)); err != nil {
		t.Fatal(err)
	}
	es, _ := ob.Peek(1)
	// Churn the file so freed pages are reused, then read the old entry.
	for i := 0; i < 200; i++ {
		k, _ := ob.Append(Message{Class: Protocol, Exchange: "x", MessageID: "m", Body: bytes.Repeat([]byte{'Z'}, 3000)})
		ob.Delete(k)
	}
	if string(es[0].Body) != `{"n":1}` || es[0].Exchange != "hcp.events" {
		t.Fatalf("entry changed: %q", es[0].Body)
	}
}

func TestKeysSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	ob, err := Open(path, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i := 0; i < 5; i++ {
		last, _ = ob.Append(msg(Protocol, i))
	}
	ob.Delete(last) // delete the newest: its key must not be reused
	ob.Close()
	if _, err := ob.Append(msg(Protocol, 9)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	ob, err = Open(path, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if d, _ := ob.Depth(); d != 4 {
		t.Fatalf("depth %d after restart", d)
	}
	k, _ := ob.Append(msg(Protocol, 6))
	if k <= last {
		t.Fatalf("key %d reused/decreased (last %d)", k, last)
	}
}

func TestTelemetryBound(t *testing.T) {
	ob, path := openTest(t, Opts{TelemetryBound: 3})
	var protoKeys []uint64
	for i := 0; i < 10; i++ {
		if i%4 == 0 {
			k, _ := ob.Append(msg(Protocol, i))
			protoKeys = append(protoKeys, k)
			continue
		}
		if _, err := ob.Append(msg(Telemetry, i)); err != nil {
			t.Fatal(err)
		}
	}
	// 3 protocol (0,4,8), 7 telemetry of which the 3 newest remain (6,7,9).
	total, tel := ob.Depth()
	if total != 6 || tel != 3 {
		t.Fatalf("depth %d telemetry %d", total, tel)
	}
	es, _ := ob.Peek(100)
	var got []string
	for _, e := range es {
		got = append(got, string(e.Body))
	}
	want := []string{`{"n":0}`, `{"n":4}`, `{"n":6}`, `{"n":7}`, `{"n":8}`, `{"n":9}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	// Every protocol message keeps the key it was given: none was dropped.
	kept := map[uint64]bool{}
	for _, e := range es {
		kept[e.Key] = true
	}
	for _, k := range protoKeys {
		if !kept[k] {
			t.Fatalf("protocol message with key %d was dropped", k)
		}
	}
	if s, _ := ob.Stats(); s.Dropped != 4 {
		t.Fatalf("dropped %d", s.Dropped)
	}
	// The count is durable until taken.
	ob.Close()
	ob2, err := Open(path, Opts{TelemetryBound: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer ob2.Close()
	if total, tel := ob2.Depth(); total != 6 || tel != 3 {
		t.Fatalf("after reopen depth %d telemetry %d", total, tel)
	}
	if n, err := ob2.TakeDropped(); n != 4 || err != nil {
		t.Fatalf("TakeDropped %d %v", n, err)
	}
	if n, _ := ob2.TakeDropped(); n != 0 {
		t.Fatalf("second TakeDropped %d", n)
	}
	// Deleting a telemetry message frees its place in the bound.
	es, _ = ob2.Peek(100)
	ob2.Delete(es[2].Key)
	if _, tel := ob2.Depth(); tel != 2 {
		t.Fatal(tel)
	}
	ob2.Append(msg(Telemetry, 10))
	if n, _ := ob2.TakeDropped(); n != 0 {
		t.Fatalf("dropped %d with room", n)
	}
	// Protocol messages are never dropped, whatever the bound.
	for i := 0; i < 20; i++ {
		ob2.Append(msg(Protocol, 100+i))
	}
	if total, _ := ob2.Depth(); total != 6+20 {
		t.Fatal(total)
	}
}

func TestAppendRefuses(t *testing.T) {
	ob, _ := openTest(t, Opts{})
	tests := []struct {
		name string
		m    Message
	}{
		{"no class", Message{Exchange: "x", MessageID: "m", Body: []byte("b")}},
		{"class 9", Message{Class: 9, Exchange: "x", MessageID: "m", Body: []byte("b")}},
		{"no body", Message{Class: Protocol, Exchange: "x", MessageID: "m"}},
		{"no exchange", Message{Class: Protocol, MessageID: "m", Body: []byte("b")}},
		{"no id", Message{Class: Protocol, Exchange: "x", Body: []byte("b")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ob.Append(tc.m); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "x.db"), Opts{TelemetryBound: -1}); err == nil {
		t.Fatal("negative bound accepted")
	}
}

func TestSharedDBAndLockTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := New(db, Opts{Bucket: "uplink"})
	if err != nil {
		t.Fatal(err)
	}
	ob.Append(msg(Protocol, 1))
	ob.Close() // must not close db
	if err := db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("uplink")) == nil {
			return errors.New("no bucket")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A second opener of a locked file fails after OpenTimeout instead of hanging.
	start := time.Now()
	if _, err := Open(path, Opts{OpenTimeout: 100 * time.Millisecond}); err == nil {
		t.Fatal("opened a locked file")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("lock wait not bounded")
	}
}

func TestConcurrentAppendDelete(t *testing.T) {
	ob, _ := openTest(t, Opts{TelemetryBound: 50})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				c := Protocol
				if i%2 == 1 {
					c = Telemetry
				}
				if _, err := ob.Append(msg(c, w*1000+i)); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 30; i++ {
			es, err := ob.Peek(5)
			if err != nil {
				t.Error(err)
				return
			}
			var ks []uint64
			for _, e := range es {
				ks = append(ks, e.Key)
			}
			if err := ob.Delete(ks...); err != nil {
				t.Error(err)
				return
			}
			ob.Stats()
		}
	}()
	wg.Wait()
	total, tel := ob.Depth()
	es, _ := ob.Peek(1 << 20)
	nt := 0
	for i, e := range es {
		if i > 0 && e.Key <= es[i-1].Key {
			t.Fatal("keys not increasing")
		}
		if e.Class == Telemetry {
			nt++
		}
	}
	if len(es) != total || nt != tel || tel > 50 {
		t.Fatalf("depth %d/%d vs stored %d/%d", total, tel, len(es), nt)
	}
}

func TestMessageMsgpRoundTrip(t *testing.T) {
	m := msg(Telemetry, 42)
	m.InReplyTo = "abc"
	m.CreatedUnixNano = 123
	b, err := m.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got Message
	if rest, err := got.UnmarshalMsg(b); err != nil || len(rest) != 0 {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(m) {
		t.Fatalf("%+v != %+v", got, m)
	}
	if _, err := got.UnmarshalMsg(b[:len(b)-3]); err == nil {
		t.Fatal("truncated record decoded")
	}
}
