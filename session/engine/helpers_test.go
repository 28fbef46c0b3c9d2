package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hcp-edge/cmd/hiltest/hilbench"
	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/internal/wallclock"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/recipe"
	"hcp-edge/session/store"
	"hcp-edge/session/token"
	"hcp-edge/transport/wire"
)

// outRec records every published message.
type outRec struct {
	mu   sync.Mutex
	msgs []*wire.Envelope
}

func (o *outRec) Publish(_ context.Context, _ string, env *wire.Envelope) error {
	o.mu.Lock()
	o.msgs = append(o.msgs, env)
	o.mu.Unlock()
	return nil
}

// of returns the messages of session sid (replies first), in order.
func (o *outRec) of(sid string, replies []*wire.Envelope) []*wire.Envelope {
	o.mu.Lock()
	defer o.mu.Unlock()
	// The engine hands a submit's replies to Out too, once they commit:
	// each message counts once, by message_id, replies first.
	var out []*wire.Envelope
	seen := map[string]bool{}
	for _, m := range append(append([]*wire.Envelope{}, replies...), o.msgs...) {
		if m.SessionID != nil && m.SessionID.String() == sid && !seen[m.MessageID.String()] {
			seen[m.MessageID.String()] = true
			out = append(out, m)
		}
	}
	return out
}

// events returns the events among msgs.
func events(t testing.TB, msgs []*wire.Envelope) []*wire.Event {
	t.Helper()
	var out []*wire.Event
	for _, m := range msgs {
		if m.Type == wire.TypeEvent {
			ev, err := m.Event()
			if err != nil {
				t.Fatalf("event: %v", err)
			}
			out = append(out, ev)
		}
	}
	return out
}

func contiguous(t testing.TB, evs []*wire.Event) {
	t.Helper()
	for i, ev := range evs {
		if ev.Sequence != uint64(i+1) {
			t.Fatalf("event %d (%s) has sequence %d, want %d", i, ev.EventType, ev.Sequence, i+1)
		}
	}
}

func ofType(msgs []*wire.Envelope, ty wire.Type) []*wire.Envelope {
	var out []*wire.Envelope
	for _, m := range msgs {
		if m.Type == ty {
			out = append(out, m)
		}
	}
	return out
}

// fakeRig accepts every action.
type fakeRig struct {
	env *envelope.Envelope
	mu  sync.Mutex
	n   int
}

func (r *fakeRig) Apply(context.Context, string, envelope.Action) (envelope.Result, error) {
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
	return envelope.Result{}, nil
}
func (r *fakeRig) Readings(context.Context) envelope.Readings { return freshReadings(nil) }

// Invoke calls no tool: the fake rig acquires no spectrum to analyse.
func (r *fakeRig) Invoke(_ context.Context, _ string, ref envelope.ToolRef, _ json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("fake rig: no tool %s", ref)
}

// freshReadings is a snapshot of a healthy rig read just now: the furnace
// and the gauge, and inputs (none if nil). Recovery resumes a physical
// session only on fresh readings of every instrument.
func freshReadings(inputs map[string]envelope.Level) envelope.Readings {
	now := time.Now()
	return envelope.Readings{At: now, Furnace: device.FurnaceStatus{At: now}, Pressure: device.PressureReading{At: now}, Inputs: inputs}
}
func (r *fakeRig) Envelope() *envelope.Envelope { return r.env }
func (r *fakeRig) Latched() (bool, string)      { return false, "" }

// slowExec is a fake executor of capability name: steps of d wall each.
type slowExec struct {
	name    string
	steps   int
	d       time.Duration
	mu      sync.Mutex
	cleanup int
}

func (x *slowExec) Capability() string { return x.name }
func (x *slowExec) Plan(executor.Task) (executor.Recipe, error) {
	return &slowRecipe{x: x}, nil
}
func (x *slowExec) Resume(_ executor.Task, st []byte) (executor.Recipe, int, error) {
	var n int
	if err := json.Unmarshal(st, &n); err != nil {
		return nil, 0, err
	}
	return &slowRecipe{x: x, done: n}, n, nil
}
func (x *slowExec) cleanups() int { x.mu.Lock(); defer x.mu.Unlock(); return x.cleanup }

type slowRecipe struct {
	x    *slowExec
	done int
}

func (r *slowRecipe) Steps() []executor.Step {
	out := make([]executor.Step, r.x.steps)
	for i := range out {
		out[i] = executor.Step{Name: "s" + string(rune('a'+i)), Stage: "work", Estimate: time.Second}
	}
	return out
}
func (r *slowRecipe) Run(ctx context.Context, i int, env *executor.Env) error {
	if _, err := env.Rig.Apply(ctx, env.Token, envelope.HeaterAction(false)); err != nil {
		return err
	}
	t := time.NewTimer(r.x.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	r.done = i + 1
	return nil
}
func (r *slowRecipe) Finish(context.Context, *executor.Env) (*executor.Result, error) {
	return &executor.Result{Outputs: map[string]any{"ok": true, "steps": r.done}}, nil
}
func (r *slowRecipe) State() ([]byte, error) { return json.Marshal(r.done) }
func (r *slowRecipe) Partial(*executor.Env) (map[string]any, []executor.Artifact) {
	return map[string]any{"steps_done": r.done}, nil
}
func (r *slowRecipe) Cleanup(context.Context, *executor.Env) error {
	r.x.mu.Lock()
	r.x.cleanup++
	r.x.mu.Unlock()
	return nil
}

func registry(t testing.TB) *capability.Registry {
	t.Helper()
	reg, err := capability.LoadDir(filepath.Join("..", "..", "configs", "capabilities"))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func gateConfig() gate.Config {
	cfg := gate.DefaultConfig()
	cfg.BrokerUsers = map[string]string{"alpha": "harness-alpha-001", "low": "lowrisk", "pipe": "pipeline-7"}
	cfg.Callers = map[string]gate.CallerACL{
		"harness-alpha-001": {Capabilities: []string{"*"}, MaxRiskLevel: capability.R4, MaxDataClassification: gate.T4},
		"pipeline-7":        {Capabilities: []string{"*"}, MaxRiskLevel: capability.R3, MaxDataClassification: gate.T4},
		"lowrisk":           {Capabilities: []string{"*"}, MaxRiskLevel: capability.R2, MaxDataClassification: gate.T4},
	}
	return cfg
}

// attended is a Wednesday 10:00 UTC: inside the default attended hours.
func attended() time.Time { return time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC) }

type harness struct {
	e     *Engine
	st    *store.Store
	out   *outRec
	cfg   Config
	path  string
	close func()
}

// newHarness builds an engine over a fresh (or the given) state file.
func newHarness(t *testing.T, path string, rig executor.Rig, scale float64, execs []executor.Executor, mod func(*Config)) *harness {
	t.Helper()
	return newHarnessClock(t, path, rig, scale, execs, nil, mod)
}

// newHarnessClock is newHarness with pc, when not nil, stamping the store
// (mod sets the engine's Clock).
func newHarnessClock(t *testing.T, path string, rig executor.Rig, scale float64, execs []executor.Executor, pc *wallclock.Clock, mod func(*Config)) *harness {
	t.Helper()
	dir := t.TempDir()
	if path == "" {
		path = filepath.Join(dir, "state.db")
	}
	sopts := store.DefaultOpts()
	if pc != nil {
		sopts.Clock = pc.Now
	}
	st, err := store.Open(path, sopts)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t)
	g, err := gate.New(gateConfig(), reg, st.Audit(), gate.Opts{Clock: attended})
	if err != nil {
		t.Fatal(err)
	}
	priv, err := token.LoadOrCreateKey(filepath.Join(filepath.Dir(path), "token.key"))
	if err != nil {
		t.Fatal(err)
	}
	auth, err := token.New(priv, token.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	out := &outRec{}
	cfg := Config{Store: st, Gate: g, Registry: reg, Tokens: auth, Revocations: token.NewRevocations(nil),
		Executors: execs, Rig: rig, Out: out, StateDir: dir, TimeScale: scale}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{e: e, st: st, out: out, cfg: cfg, path: path}
	var once sync.Once
	h.close = func() {
		once.Do(func() {
			if err := e.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("store close: %v", err)
			}
		})
	}
	t.Cleanup(h.close)
	return h
}

func submitEnv(t testing.TB, capab, inputs, constraints string) *wire.Envelope {
	t.Helper()
	s := &wire.TaskSubmit{Capability: capab, CapabilityVersion: "1.x", CallerID: "harness-alpha-001",
		Intent: "test " + capab, Inputs: json.RawMessage(inputs)}
	if constraints != "" {
		s.Constraints = &wire.Constraints{}
		if err := json.Unmarshal([]byte(constraints), s.Constraints); err != nil {
			t.Fatal(err)
		}
	}
	env, err := wire.NewEnvelope(nil, s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func (h *harness) submit(t testing.TB, user string, env *wire.Envelope) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := h.e.Submit(ctx, SubmitRequest{MessageID: env.MessageID.String(), BrokerUser: user, Envelope: env})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return res
}

// waitState polls until session id is in state want (hang guard 30 s).
func (h *harness) waitState(t testing.TB, id string, want lifecycle.State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := h.e.State(context.Background(), id)
		if err == nil && st == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s in %s (%v), want %s", id, st, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storedSeqs checks the stored events of id are 1..N.
func (h *harness) storedSeqs(t testing.TB, id string) []store.Event {
	t.Helper()
	evs, err := h.st.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range evs {
		seqs = append(seqs, e.Seq)
	}
	if err := lifecycle.CheckSequence(1, seqs); err != nil {
		t.Fatal(err)
	}
	return evs
}

func testEnvelope(t testing.TB) *envelope.Envelope { return hilbench.Envelope(t) }

var _ = os.Getenv

// shippedRecipe is the executor of the shipped recipe of that capability
// name (configs/recipes), loaded as the agent loads it.
func shippedRecipe(t testing.TB, name string) *executor.RecipeExecutor {
	t.Helper()
	srcs, err := recipe.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		r, err := recipe.Load(s.Name, s.Data)
		if err != nil {
			t.Fatal(err)
		}
		if r.Name == name {
			x, err := executor.NewRecipeExecutor(r)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
	}
	t.Fatalf("no shipped recipe %s", name)
	return nil
}
