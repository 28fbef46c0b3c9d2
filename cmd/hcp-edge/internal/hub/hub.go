package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/session/atrest"
	"hcp-edge/session/engine"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// Msg is one outbound message.
type Msg struct {
	Caller string // the harness it is addressed to
	Env    *wire.Envelope
}

// Hub is the engine's Outbound: after each step commits it fans every
// message out to the control socket's watchers, keeps each session's
// latest progress, and writes each session's final message to
// results/{session}.json. (The broker's messages go through the store's
// Queue, the uplink's outbox, in the step's own transaction.)
type Hub struct {
	dir  string // results directory
	seal Sealer // T3/T4 final messages are sealed at rest
	log  *slog.Logger
	mu   sync.Mutex
	next int
	subs map[int]chan Msg
	prog map[string]reply.Progress
}

// WatchBuffer is how many messages a watcher may lag before it is dropped.
const WatchBuffer = 4096

// Sealer says how the hub keeps a session's final message at rest: sealed
// reports that the session's data classification is sealed (T3/T4), and
// key is the key to seal it under (nil when there is none: then the
// message is not written at all).
type Sealer func(sid string) (key *atrest.Key, sealed bool)

// SealerFor is the sealer of st's sessions under key.
func SealerFor(st *store.Store, key *atrest.Key) Sealer {
	return func(sid string) (*atrest.Key, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := st.Session(ctx, sid)
		if err != nil {
			return nil, false // the final message of a session never stored (a rejection)
		}
		if !engine.Sealed(s.DataClass) {
			return nil, false
		}
		return key, true
	}
}

// New makes the hub over the results directory dir (created when
// missing); seal nil keeps every final message in plain text.
func New(dir string, seal Sealer, log *slog.Logger) (*Hub, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	if seal == nil {
		seal = func(string) (*atrest.Key, bool) { return nil, false }
	}
	return &Hub{dir: dir, seal: seal, log: log, subs: map[int]chan Msg{}, prog: map[string]reply.Progress{}}, nil
}

// Publish hands env to every watcher (never blocking: a watcher that lags
// by WatchBuffer messages is dropped) and records progress and finals.
func (h *Hub) Publish(_ context.Context, caller string, env *wire.Envelope) error {
	if env.SessionID != nil {
		sid := env.SessionID.String()
		switch env.Type {
		case wire.TypeEvent:
			if ev, err := env.Event(); err == nil && ev.EventType == string(lifecycle.EventProgress) {
				var p reply.Progress
				if json.Unmarshal(ev.Data, &p) == nil {
					h.mu.Lock()
					h.prog[sid] = p
					h.mu.Unlock()
				}
			}
		case wire.TypeTaskCompleted, wire.TypeTaskFailed, wire.TypeTaskRejected:
			if b, err := wire.Encode(env); err == nil {
				path := filepath.Join(h.dir, sid+".json")
				switch key, sealed := h.seal(sid); {
				case !sealed:
					err = WriteFileAtomic(path, b)
				case key != nil:
					err = key.WriteFile(path, b, atrest.ResultBinding(sid), 0o640)
				default:
					err = errors.New("T3/T4 session and no at-rest key: not written")
				}
				if err != nil {
					h.log.Warn("record final message", "session", sid, "err", err)
				}
			}
			h.mu.Lock()
			delete(h.prog, sid)
			h.mu.Unlock()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, ch := range h.subs {
		select {
		case ch <- Msg{Caller: caller, Env: env}:
		default:
			close(ch)
			delete(h.subs, id)
		}
	}
	return nil
}

// Subscribe returns a channel of every message published from now on and
// the function that ends the subscription. The channel is closed when the
// watcher lagged too far.
func (h *Hub) Subscribe() (<-chan Msg, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	ch := make(chan Msg, WatchBuffer)
	h.subs[id] = ch
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[id]; ok {
			close(ch)
			delete(h.subs, id)
		}
	}
}

// Progress is session sid's latest progress event, until its final
// message.
func (h *Hub) Progress(sid string) (reply.Progress, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.prog[sid]
	return p, ok
}

// Final reads session sid's recorded final message.
func (h *Hub) Final(sid string) (*wire.Envelope, error) {
	path := filepath.Join(h.dir, sid+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if atrest.IsSealed(b) {
		key, _ := h.seal(sid)
		if key == nil {
			return nil, fmt.Errorf("%s is sealed at rest and the daemon has no at-rest key", path)
		}
		if b, err = key.Open(b, atrest.ResultBinding(sid)); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return wire.Decode(b)
}

// WriteFileAtomic writes data to path through a synced temporary file and
// a rename, so a reader never sees half a file (the results directory's
// files, and the session's record the agent keeps beside them).
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
