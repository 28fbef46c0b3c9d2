package uplink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/atrest"
	"hcp-edge/session/engine"
	"hcp-edge/session/store"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// sealedStore opens the state file at path with key (nil: none), its
// outbox and the uplink's Queue over it, as the daemon wires them.
func sealedStore(t *testing.T, path string, key *atrest.Key) (*store.Store, *outbox.Outbox) {
	t.Helper()
	st, err := store.Open(path, store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	st.SetAtRest(key)
	oo := outbox.DefaultOpts()
	oo.Bucket, oo.Sealer = outboxBucket, sealer{st}
	ob, err := outbox.New(st.DB(), oo)
	if err != nil {
		t.Fatal(err)
	}
	st.SetQueue(&Uplink{ob: ob, st: st})
	t.Cleanup(func() { ob.Close(); st.Close() })
	return st, ob
}

// completeWith creates a session of class and sends its task_completed
// with outputs, as the engine's last step does.
func completeWith(t *testing.T, st *store.Store, class, outputs string, keyless bool) (string, error) {
	t.Helper()
	uid := uuid.New()
	env, err := wire.NewEnvelope(&uid, &wire.TaskCompleted{Outputs: json.RawMessage(outputs)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return uid.String(), st.Update(context.Background(), func(w *store.Tx) error {
		if _, _, err := w.Create(store.Session{ID: uid.String(), CallerID: "alpha", DataClass: class}); err != nil {
			return err
		}
		if keyless {
			w.WithoutKey(uid.String())
		}
		return w.Send(store.Message{CallerID: "alpha", Envelope: env})
	})
}

// TestOutboxSealsT3Messages: a T3 session's task_completed waits in the
// state file's outbox sealed under the at-rest key (a raw grep finds its
// outputs for the T1 session only), and after a restart the publisher
// peeks it with its body opened, as it was sent; without the key it is
// refused unless the engine said it holds none of the session's data.
func TestOutboxSealsT3Messages(t *testing.T) {
	key, err := atrest.ParseKey([]byte("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	st, ob := sealedStore(t, path, key)
	t3, err := completeWith(t, st, "T3", `{"layer_thickness_nm":0.71234}`, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := completeWith(t, st, "T1", `{"layer_thickness_nm":0.65987}`, false); err != nil {
		t.Fatal(err)
	}
	ob.Close()
	st.Close()
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(disk, []byte("0.71234")) {
		t.Fatal("the state file holds the T3 session's output in the clear")
	}
	if !bytes.Contains(disk, []byte("0.65987")) {
		t.Fatal("the T1 session's output is not in the file: the grep proves nothing")
	}

	_, ob = sealedStore(t, path, key)
	es, err := ob.Peek(10)
	if err != nil || len(es) != 2 {
		t.Fatalf("peek after restart: %d %v", len(es), err)
	}
	env, err := wire.Decode(es[0].Body)
	if err != nil || es[0].CorrelationID != t3 {
		t.Fatalf("first message %+v: %v", es[0], err)
	}
	if tc, err := env.TaskCompleted(); err != nil || string(tc.Outputs) != `{"layer_thickness_nm":0.71234}` {
		t.Fatalf("task_completed %+v %v", tc, err)
	}

	// No key: refused, unless the engine vouches for the message.
	st2, _ := sealedStore(t, filepath.Join(t.TempDir(), "state.db"), nil)
	if _, err := completeWith(t, st2, "T3", `{"layer_thickness_nm":0.1}`, false); !errors.Is(err, atrest.ErrNoKey) {
		t.Fatalf("T3 without a key: %v", err)
	}
	if _, err := completeWith(t, st2, "T3", `{}`, true); err != nil {
		t.Fatalf("the engine's own words without a key: %v", err)
	}
}

// TestSealedClassesAgree: the store seals the classes the engine seals.
func TestSealedClassesAgree(t *testing.T) {
	for _, c := range []string{"T1", "T2", "T3", "T4", "", "t3"} {
		if store.SealedClass(c) != engine.Sealed(c) {
			t.Errorf("class %q: store %v, engine %v", c, store.SealedClass(c), engine.Sealed(c))
		}
	}
}
