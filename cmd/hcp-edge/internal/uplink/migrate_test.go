package uplink

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/store"
	"hcp-edge/transport/outbox"
)

// An outbox.db left by an earlier version (the outbox beside state.db) is
// merged into the state file at start with its waiting messages and keys,
// then renamed; a second start finds nothing to do.
func TestMigrateOutboxFile(t *testing.T) {
	dir := t.TempDir()
	oo := outbox.DefaultOpts()
	oo.Bucket = outboxBucket
	old, err := outbox.Open(filepath.Join(dir, outboxFile), oo)
	if err != nil {
		t.Fatal(err)
	}
	var keys []uint64
	for _, id := range []string{"m1", "m2", "m3"} {
		k, err := old.Append(outbox.Message{Class: outbox.Protocol, Exchange: "hcp.events", RoutingKey: "c.s.event", MessageID: id, Body: []byte("{}")})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := old.Delete(keys[0]); err != nil { // confirmed before the upgrade
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, rigconfig.StateFile), store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for range 2 {
		if err := MigrateOutboxFile(dir, st, log); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, outboxFile+".migrated")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, outboxFile)); !os.IsNotExist(err) {
		t.Fatalf("old file still there: %v", err)
	}
	ob, err := outbox.New(st.DB(), oo)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	es, err := ob.Peek(10)
	if err != nil || len(es) != 2 || es[0].Key != keys[1] || es[0].MessageID != "m2" || es[1].MessageID != "m3" {
		t.Fatalf("migrated outbox %+v %v", es, err)
	}
	k, err := ob.Append(outbox.Message{Class: outbox.Protocol, Exchange: "hcp.events", RoutingKey: "c.s.event", MessageID: "m4", Body: []byte("{}")})
	if err != nil || k <= keys[2] {
		t.Fatalf("next key %d after %d (%v): keys must never be reused", k, keys[2], err)
	}
	if err := st.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
}
