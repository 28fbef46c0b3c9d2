package outbox

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// hexSealer "seals" the messages of one session: the body hex-encoded
// behind a header naming the message_id (a sealed body opens for its own
// message only). The agent's Sealer is AES-256-GCM (session/atrest); the
// outbox only needs to see that what it stores is what the Sealer gave.
type hexSealer struct {
	session string
	fail    error        // SealTx refuses every message with it
	withTx  atomic.Int64 // SealTx calls given a transaction
}

func (s *hexSealer) SealTx(tx *bolt.Tx, m *Message) ([]byte, error) {
	if tx != nil {
		s.withTx.Add(1)
	}
	if m.CorrelationID != s.session {
		return nil, nil
	}
	if s.fail != nil {
		return nil, s.fail
	}
	return []byte("SEALED " + m.MessageID + " " + hex.EncodeToString(m.Body)), nil
}

func (s *hexSealer) OpenBody(m *Message) ([]byte, error) {
	head := "SEALED " + m.MessageID + " "
	if !bytes.HasPrefix(m.Body, []byte(head)) {
		return nil, errors.New("sealed for another message")
	}
	return hex.DecodeString(string(m.Body[len(head):]))
}

const sealedSession = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

func secretMsg(i int, secret string) Message {
	m := msg(Protocol, i)
	m.Body = []byte(fmt.Sprintf(`{"n":%d,"outputs":{"layer_thickness_nm":%s}}`, i, secret))
	return m
}

// TestSealedRedeliveredAfterRestart: the messages the Sealer chooses are
// stored sealed (a raw grep of the file finds none of their bodies, and
// finds the one left in the clear), whichever path appended them; after
// a restart they are peeked again — the publisher's redelivery — in key
// order with their bodies opened, and records stored in the clear before
// sealing existed read as they were. Without a Sealer a sealed record
// fails Peek rather than being published or skipped.
func TestSealedRedeliveredAfterRestart(t *testing.T) {
	seal := &hexSealer{session: sealedSession}
	ob, path := openTest(t, Opts{})
	// Before sealing: a record in the clear, as an earlier version left it.
	if _, err := ob.Append(secretMsg(0, "0.6512")); err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	ob, err := Open(path, Opts{Sealer: seal})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ob.Append(secretMsg(1, "0.7011")); err != nil {
		t.Fatal(err)
	}
	other := msg(Protocol, 2)
	other.CorrelationID = "another-session"
	other.Body = []byte(`{"outputs":{"layer_thickness_nm":0.9944}}`)
	if err := ob.DB().Update(func(tx *bolt.Tx) error {
		_, err := ob.AppendTx(tx, secretMsg(3, "0.7233"), other)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The inbox's path: sealed first (its de-duplication record), then
	// appended — and appended again for a duplicate: sealed once.
	rec := []Message{secretMsg(4, "0.7399")}
	if err := ob.DB().Update(func(tx *bolt.Tx) error {
		if err := ob.SealTx(tx, rec); err != nil {
			return err
		}
		if !rec[0].Sealed || bytes.Contains(rec[0].Body, []byte("0.7399")) {
			t.Errorf("SealTx left %+v", rec[0])
		}
		_, err := ob.AppendTx(tx, rec...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if seal.withTx.Load() < 2 {
		t.Fatalf("SealTx was given the transaction %d times", seal.withTx.Load())
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}

	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"0.7011", "0.7233", "0.7399"} {
		if bytes.Contains(disk, []byte(v)) {
			t.Errorf("the outbox file holds %s in the clear", v)
		}
	}
	for _, v := range []string{"0.6512", "0.9944"} {
		if !bytes.Contains(disk, []byte(v)) {
			t.Errorf("%s (stored in the clear) is not found: the grep proves nothing", v)
		}
	}

	// The restart: every message again, in order, bodies opened.
	ob, err = Open(path, Opts{Sealer: seal})
	if err != nil {
		t.Fatal(err)
	}
	es, err := ob.Peek(10)
	if err != nil || len(es) != 5 {
		t.Fatalf("peek after restart: %d %v", len(es), err)
	}
	want := []string{"0.6512", "0.7011", "0.7233", "0.9944", "0.7399"}
	for i, e := range es {
		if e.Sealed || !strings.Contains(string(e.Body), `"layer_thickness_nm":`+want[i]) || (i > 0 && e.Key <= es[i-1].Key) {
			t.Fatalf("entry %d: key %d sealed %v body %s, want %s", i, e.Key, e.Sealed, e.Body, want[i])
		}
	}
	if err := ob.Delete(es[0].Key, es[1].Key); err != nil {
		t.Fatal(err)
	}
	if es, err := ob.PeekAfter(0, 10); err != nil || len(es) != 3 || !strings.Contains(string(es[0].Body), "0.7233") {
		t.Fatalf("after the confirms: %+v %v", es, err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}

	// Without a Sealer: the sealed record stops Peek.
	ob, err = Open(path, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if es, err := ob.Peek(10); !errors.Is(err, ErrSealed) || es != nil {
		t.Fatalf("peek without a Sealer: %d entries, %v", len(es), err)
	}
}

// TestSealRefusesAppend: a message the Sealer must seal and cannot is not
// stored, whichever path appends it, and the transaction rolls back whole.
func TestSealRefusesAppend(t *testing.T) {
	boom := errors.New("no at-rest key")
	ob, _ := openTest(t, Opts{Sealer: &hexSealer{session: sealedSession, fail: boom}})
	if _, err := ob.Append(secretMsg(1, "0.7011")); !errors.Is(err, boom) {
		t.Fatalf("Append: %v", err)
	}
	other := msg(Protocol, 2)
	other.CorrelationID = "another-session"
	err := ob.DB().Update(func(tx *bolt.Tx) error {
		_, err := ob.AppendTx(tx, other, secretMsg(3, "0.7233"))
		return err
	})
	if !errors.Is(err, boom) {
		t.Fatalf("AppendTx: %v", err)
	}
	// Clear: the appender's word that the message holds nothing sealed.
	clear := secretMsg(4, "0.1")
	clear.Clear = true
	if _, err := ob.Append(clear); err != nil {
		t.Fatal(err)
	}
	if es, err := ob.Peek(10); err != nil || len(es) != 1 || es[0].MessageID != clear.MessageID {
		t.Fatalf("stored %+v %v, want the Clear message only", es, err)
	}
}
