package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/atrest"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

func newTestHub(t *testing.T, seal Sealer) (*Hub, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "results")
	h, err := New(dir, seal, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return h, dir
}

func progressEvent(t *testing.T, sid uuid.UUID, seq uint64, stage string) *wire.Envelope {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"stage": stage, "percent": 50.0})
	env, err := wire.NewEnvelope(&sid, &wire.Event{EventType: string(lifecycle.EventProgress), Sequence: seq, Data: data}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func completed(t *testing.T, sid uuid.UUID) *wire.Envelope {
	t.Helper()
	env, err := wire.NewEnvelope(&sid, &wire.TaskCompleted{Outputs: json.RawMessage(`{"layer_count":2}`)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestFanOut: every subscriber gets every message, with its caller, in
// order; ending a subscription closes its channel and later messages
// reach only the others.
func TestFanOut(t *testing.T) {
	h, _ := newTestHub(t, nil)
	a, endA := h.Subscribe()
	b, endB := h.Subscribe()
	defer endB()
	sid := uuid.New()
	first, second := progressEvent(t, sid, 1, "heat"), progressEvent(t, sid, 2, "grow")
	for _, env := range []*wire.Envelope{first, second} {
		if err := h.Publish(context.Background(), "harness-alpha-001", env); err != nil {
			t.Fatal(err)
		}
	}
	for name, ch := range map[string]<-chan Msg{"a": a, "b": b} {
		for _, want := range []*wire.Envelope{first, second} {
			m := <-ch
			if m.Caller != "harness-alpha-001" || m.Env.MessageID != want.MessageID {
				t.Fatalf("%s: got %+v, want message %s", name, m, want.MessageID)
			}
		}
	}
	endA()
	if _, open := <-a; open {
		t.Fatal("a's channel open after its subscription ended")
	}
	endA() // a second end is harmless
	if err := h.Publish(context.Background(), "harness-alpha-001", progressEvent(t, sid, 3, "cool")); err != nil {
		t.Fatal(err)
	}
	if m := <-b; m.Env.SessionID == nil || *m.Env.SessionID != sid {
		t.Fatalf("b: %+v", m)
	}
}

// TestLaggingWatcherDropped: Publish never blocks the engine; a watcher
// that lags by WatchBuffer messages has its channel closed, after the
// messages it had room for.
func TestLaggingWatcherDropped(t *testing.T) {
	h, _ := newTestHub(t, nil)
	ch, end := h.Subscribe()
	defer end()
	sid := uuid.New()
	env := progressEvent(t, sid, 1, "heat")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range WatchBuffer + 1 {
			_ = h.Publish(context.Background(), "c", env)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Publish blocked on a lagging watcher")
	}
	n := 0
	for range ch {
		n++
	}
	if n != WatchBuffer {
		t.Fatalf("received %d messages before the close, want %d", n, WatchBuffer)
	}
}

// TestProgressAndFinal: the latest progress event of a session is kept
// until its final message; the final message is written to
// results/{session}.json in plain text (an unsealed session) and Final
// reads it back.
func TestProgressAndFinal(t *testing.T) {
	h, dir := newTestHub(t, nil)
	ctx := context.Background()
	sid := uuid.New()
	if _, ok := h.Progress(sid.String()); ok {
		t.Fatal("progress before any event")
	}
	for i, stage := range []string{"heat", "grow"} {
		if err := h.Publish(ctx, "c", progressEvent(t, sid, uint64(i+1), stage)); err != nil {
			t.Fatal(err)
		}
	}
	if p, ok := h.Progress(sid.String()); !ok || p.Stage != "grow" || p.Percent == nil || *p.Percent != 50 {
		t.Fatalf("progress %+v %v", p, ok)
	}
	fin := completed(t, sid)
	if err := h.Publish(ctx, "c", fin); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Progress(sid.String()); ok {
		t.Fatal("progress kept after the final message")
	}
	b, err := os.ReadFile(filepath.Join(dir, sid.String()+".json"))
	if err != nil || atrest.IsSealed(b) || !bytes.Contains(b, []byte(`"layer_count":2`)) {
		t.Fatalf("results file: %v %q", err, b)
	}
	got, err := h.Final(sid.String())
	if err != nil || got.MessageID != fin.MessageID || got.Type != wire.TypeTaskCompleted {
		t.Fatalf("Final: %v %+v", err, got)
	}
	if _, err := h.Final(uuid.NewString()); !os.IsNotExist(err) {
		t.Fatalf("Final of an unknown session: %v", err)
	}
}

// TestFinalSealed: a T3/T4 session's final message is sealed under the
// at-rest key and opened by Final; without a key it is not written at all,
// and Final says it is missing.
func TestFinalSealed(t *testing.T) {
	key, err := atrest.NewKey(bytes.Repeat([]byte{7}, atrest.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Run("with a key", func(t *testing.T) {
		h, dir := newTestHub(t, func(string) (*atrest.Key, bool) { return key, true })
		sid := uuid.New()
		fin := completed(t, sid)
		if err := h.Publish(ctx, "c", fin); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, sid.String()+".json"))
		if err != nil || !atrest.IsSealed(b) || bytes.Contains(b, []byte("layer_count")) {
			t.Fatalf("results file not sealed: %v %q", err, b)
		}
		got, err := h.Final(sid.String())
		if err != nil || got.MessageID != fin.MessageID {
			t.Fatalf("Final: %v %+v", err, got)
		}
	})
	t.Run("without a key", func(t *testing.T) {
		h, dir := newTestHub(t, func(string) (*atrest.Key, bool) { return nil, true })
		sid := uuid.New()
		if err := h.Publish(ctx, "c", completed(t, sid)); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, sid.String()+".json")); !os.IsNotExist(err) {
			t.Fatalf("a sealed session's final message written without a key: %v", err)
		}
		if _, err := h.Final(sid.String()); err == nil {
			t.Fatal("Final of an unwritten message")
		}
	})
}
