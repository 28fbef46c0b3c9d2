package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hcp-edge/session/executor"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/session/token"
	"hcp-edge/transport/wire"
)

// The figures of issue 4, measured through the engine (fsync'ed bbolt
// commits as the engine makes them, the audit log included). Reproduce:
//
//	go test -run '^$' -bench 'BenchmarkSubmit|BenchmarkCheckpoint|BenchmarkRecover' -benchtime 200x ./session/engine/
//
// (add -count 5 for spread; the percentiles are of the iterations of one
// run). The crash test (issue 4's recovery figures per kill) is
//
//	go test -race -count=1 -run TestCrashRecovery -v ./session/engine/

// benchEngine is newHarness for benchmarks: an engine over the state file
// at path with fake executors of steps × d, on the fake rig.
func benchEngine(tb testing.TB, path string, steps int, d time.Duration, mod func(*Config)) (*Engine, *store.Store) {
	tb.Helper()
	opts := store.DefaultOpts()
	opts.Timeout = 5 * time.Second
	st, err := store.Open(path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	reg := registry(tb)
	g, err := gate.New(gateConfig(), reg, st.Audit(), gate.Opts{Clock: attended})
	if err != nil {
		tb.Fatal(err)
	}
	priv, err := token.LoadOrCreateKey(filepath.Join(filepath.Dir(path), "token.key"))
	if err != nil {
		tb.Fatal(err)
	}
	auth, err := token.New(priv, token.DefaultOpts())
	if err != nil {
		tb.Fatal(err)
	}
	var execs []executor.Executor
	for _, n := range []string{"leak-check", "rig-status", "cvd-material-synthesis"} {
		execs = append(execs, &slowExec{name: n, steps: steps, d: d})
	}
	cfg := Config{Store: st, Gate: g, Registry: reg, Tokens: auth, Executors: execs, Rig: &fakeRig{env: testEnvelope(tb)},
		Out: OutboundFunc(func(context.Context, string, *wire.Envelope) error { return nil }), StateDir: filepath.Dir(path), TimeScale: 1,
		Trips: func(context.Context) []string { return nil }}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e, st
}

// report adds the p50 and p99 of lat, in µs (or ms when unit says so).
func report(b *testing.B, lat []time.Duration, unit time.Duration, name string) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	f := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(unit) }
	b.ReportMetric(f(0.50), "p50-"+name)
	b.ReportMetric(f(0.99), "p99-"+name)
}

// BenchmarkSubmit is the gate decision time through Engine.Submit: the
// gate, its fsync'ed audit record, and on acceptance the session's Create
// and PENDING → RUNNING commits with the token signed (or the Create with
// approval_pending). Accepted sessions are discarded after each timing.
func BenchmarkSubmit(b *testing.B) {
	hot := func(tb testing.TB) *wire.Envelope {
		env := submitEnv(tb, "cvd-material-synthesis", strings.Replace(cvdInputs, "750", "850", 1), "")
		var s wire.TaskSubmit
		_ = json.Unmarshal(env.Payload, &s)
		s.CallerID = "pipeline-7"
		env, _ = wire.NewEnvelope(nil, &s, time.Now())
		return env
	}
	cases := []struct {
		name, user string
		env        func(testing.TB) *wire.Envelope
		want       wire.Type
	}{
		{"rejected-unauthorized", "ghost", func(tb testing.TB) *wire.Envelope { return submitEnv(tb, "leak-check", leakInputs, "") }, wire.TypeTaskRejected},
		{"rejected-invalid-input", "alpha", func(tb testing.TB) *wire.Envelope {
			return submitEnv(tb, "cvd-material-synthesis", `{"target_material":"MoS2"}`, "")
		}, wire.TypeTaskRejected},
		{"rejected-risk-too-high", "pipe", hot, wire.TypeTaskRejected},
		{"accepted-leak-check", "alpha", func(tb testing.TB) *wire.Envelope { return submitEnv(tb, "leak-check", leakInputs, "") }, wire.TypeTaskAccepted},
		{"pending-approval-cvd", "alpha", func(tb testing.TB) *wire.Envelope {
			return submitEnv(tb, "cvd-material-synthesis", cvdInputs, `{"data_classification":"T2"}`)
		}, wire.TypeEvent},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			e, st := benchEngine(b, filepath.Join(b.TempDir(), "state.db"), 2, time.Millisecond, nil)
			defer st.Close()
			defer e.Close()
			env := c.env(b)
			ctx := context.Background()
			lat := make([]time.Duration, 0, 1024)
			for b.Loop() {
				t0 := time.Now()
				res, err := e.Submit(ctx, SubmitRequest{MessageID: env.MessageID.String(), BrokerUser: c.user, Envelope: env})
				lat = append(lat, time.Since(t0))
				if err != nil || len(res.Replies) == 0 || res.Replies[0].Type != c.want {
					b.Fatalf("%v %+v", err, res.Replies)
				}
				b.StopTimer()
				release(b, e, res)
				b.StartTimer()
			}
			report(b, lat, time.Microsecond, "µs")
		})
	}
}

// release ends the session a Submit created (denied while pending, aborted
// once running) and waits until it is closed, so the next Submit finds the
// equipment free.
func release(b *testing.B, e *Engine, res Result) {
	if res.SessionID == "" {
		return
	}
	ctx := context.Background()
	st, err := e.State(ctx, res.SessionID)
	if err != nil {
		b.Fatal(err)
	}
	switch st {
	case lifecycle.Pending:
		err = e.Deny(ctx, res.SessionID, "bench", "done")
	case lifecycle.Running, lifecycle.Paused:
		err = e.Abort(ctx, res.SessionID, "done")
	}
	if err != nil && !errors.Is(err, ErrState) && !errors.Is(err, ErrNotFound) {
		b.Fatal(err)
	}
	if err := e.Wait(ctx, res.SessionID); err != nil {
		b.Fatal(err)
	}
	for {
		st, err := e.State(ctx, res.SessionID)
		if err != nil {
			b.Fatal(err)
		}
		if st.Terminal() {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// cvdState is a real CVD checkpoint state carrying rows growth-log rows
// (one per LogEvery, 30 s of process time by default).
func cvdState(tb testing.TB, rows int) []byte {
	tb.Helper()
	x := shippedRecipe(tb, executor.CVDName)
	task := executor.Task{SessionID: "bench", Intent: "grow MoS2", Inputs: json.RawMessage(cvdInputs)}
	rec, err := x.Plan(task)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := rec.State()
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(st, &m); err != nil {
		tb.Fatal(err)
	}
	rs := make([]executor.LogRow, rows)
	for i := range rs {
		temp, p := 750.123+float64(i%7), 1.234e2
		rs[i] = executor.LogRow{Elapsed: float64(30 * i), Stage: "grow", TemperatureC: &temp, PressurePa: &p,
			Flows: map[string]float64{"Ar": 100, "H2": 20, "H2S": 5}}
	}
	m["rows"] = rs
	st, _ = json.Marshal(m)
	rec, _, err = x.Resume(task, st) // the executor takes it back
	if err != nil {
		tb.Fatal(err)
	}
	st, err = rec.State()
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// journalCase is a CVD run's checkpoint as its recipe makes it (journaled):
// the plan without its growth-log rows, and the rows added since the
// previous checkpoint (one here); history is how many rows the session's
// earlier checkpoints already hold (stored once, before the timing).
type journalCase struct {
	history int
}

// cvdBase is the plan of a CVD run without its rows, as journaled
// checkpoints store it.
func cvdBase(tb testing.TB) []byte {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(cvdState(tb, 0), &m); err != nil {
		tb.Fatal(err)
	}
	m[executor.JournalKey] = json.RawMessage("null")
	b, _ := json.Marshal(m)
	return b
}

// BenchmarkCheckpoint is the checkpoint write latency as a run makes it:
// the engine's Checkpointer (payload encoding, one fsync'ed bbolt commit of
// the checkpoint record, its checkpoint_created event, the session record
// and the event's outbox entry when there is an outbox). B/ckpt is what one
// checkpoint stores (keys, msgp checkpoint record, msgp event). The CVD
// cases are journaled: each checkpoint stores the plan and the rows added
// since the previous one, so a session 12 hours (1440 rows) in writes what
// a fresh one writes. "full-" cases store a whole state per checkpoint (a
// recipe that is not journaled), for comparison with earlier figures.
func BenchmarkCheckpoint(b *testing.B) {
	row := []byte(`[{"elapsed_seconds":43200,"stage":"grow","temperature_c":750.123,"pressure_pa":123.4,"flows_sccm":{"Ar":100,"H2":20,"H2S":5}}]`)
	for _, c := range []struct {
		name    string
		state   func(testing.TB) []byte
		journal *journalCase
	}{
		{"fake-8B", func(testing.TB) []byte { return []byte("12") }, nil},
		{"full-cvd-12h-1440rows", func(tb testing.TB) []byte { return cvdState(tb, 1440) }, nil},
		{"cvd-plan", cvdBase, &journalCase{history: 0}},
		{"cvd-1h-120rows", cvdBase, &journalCase{history: 120}},
		{"cvd-12h-1440rows", cvdBase, &journalCase{history: 1440}},
	} {
		b.Run(c.name, func(b *testing.B) {
			state := c.state(b)
			e, st := benchEngine(b, filepath.Join(b.TempDir(), "state.db"), 2, time.Hour, nil) // the run waits in its first step
			defer st.Close()
			defer e.Close()
			ctx := context.Background()
			env := submitEnv(b, "leak-check", leakInputs, "")
			res, err := e.Submit(ctx, SubmitRequest{MessageID: env.MessageID.String(), BrokerUser: "alpha", Envelope: env})
			if err != nil || res.SessionID == "" {
				b.Fatalf("%v %+v", err, res.Replies)
			}
			s := sink{e, e.get(res.SessionID)}
			cp := executor.Checkpoint{Step: 3, StepName: "grow", Description: "hold at growth temperature", Resumable: true, State: state}
			next := 0
			if j := c.journal; j != nil {
				// The history, stored once by the earlier checkpoints.
				var m map[string]json.RawMessage
				_ = json.Unmarshal(cvdState(b, j.history), &m)
				hist := cp
				hist.Journaled, hist.Journal, hist.JournalFrom = true, m[executor.JournalKey], 0
				if _, err := s.Checkpoint(ctx, hist); err != nil {
					b.Fatal(err)
				}
				cp.Journaled, cp.Journal, next = true, row, j.history
			}
			lat := make([]time.Duration, 0, 1024)
			for b.Loop() {
				cp.JournalFrom = next
				t0 := time.Now()
				if _, err := s.Checkpoint(ctx, cp); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				next++
			}
			report(b, lat, time.Microsecond, "µs")
			last, ok, err := st.LastCheckpoint(ctx, res.SessionID)
			if err != nil || !ok {
				b.Fatal(ok, err)
			}
			evs, err := st.Events(ctx, res.SessionID, last.Seq-1)
			if err != nil || len(evs) == 0 {
				b.Fatal(err)
			}
			cb, _ := last.MarshalMsg(nil)
			eb, _ := evs[0].MarshalMsg(nil)
			b.ReportMetric(float64(8+len(cb)+8+len(eb)), "B/ckpt")
			b.ReportMetric(float64(len(last.Payload)), "payload-B")
		})
	}
}

// BenchmarkRecover is the recovery time at start: store.Open, the gate,
// the token key, engine.New and Recover until every session is decided
// (resumed and restarted, or failed with the recipe's cleanup and task_failed
// sent). Four RUNNING sessions with a checkpoint each (a leak-check and three
// rig-status) are left by a previous engine; "fail" injects a trip
// condition so that each fails. On the fake rig the cleanup is synchronous
// inside Recover, so "rig safe" is reached when Recover returns.
func BenchmarkRecover(b *testing.B) {
	dir := b.TempDir()
	tmpl := filepath.Join(dir, "template.db")
	func() {
		e, st := benchEngine(b, tmpl, 4, time.Hour, nil)
		defer st.Close()
		defer e.Close()
		ctx := context.Background()
		for _, capab := range []string{"leak-check", "rig-status", "rig-status", "rig-status"} {
			env := submitEnv(b, capab, leakInputs, "")
			res, err := e.Submit(ctx, SubmitRequest{MessageID: env.MessageID.String(), BrokerUser: "alpha", Envelope: env})
			if err != nil || res.SessionID == "" {
				b.Fatalf("%v %+v", err, res.Replies)
			}
			if _, err := (sink{e, e.get(res.SessionID)}).Checkpoint(ctx, executor.Checkpoint{Step: 1, StepName: "sa",
				Description: "completed step sa", Resumable: true, State: []byte("1")}); err != nil {
				b.Fatal(err)
			}
		}
	}()
	for _, c := range []struct {
		name  string
		trips []string
		want  Action
	}{{"resume", nil, ActResume}, {"fail", []string{"overtemp on furnace.temperature"}, ActFail}} {
		b.Run(c.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, 256)
			n := 0
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(dir, "state.db")
				copyFile(b, tmpl, path)
				b.StartTimer()
				t0 := time.Now()
				e, st := benchEngine(b, path, 4, time.Hour, func(cfg *Config) {
					cfg.Trips = func(context.Context) []string { return c.trips }
				})
				recs, err := e.Recover(context.Background())
				lat = append(lat, time.Since(t0))
				b.StopTimer()
				if err != nil || len(recs) != 4 {
					b.Fatalf("%v %+v", err, recs)
				}
				for _, r := range recs {
					if r.Decision.Action != c.want || r.Err != nil {
						b.Fatalf("%+v", r)
					}
				}
				n++
				_ = e.Close()
				if c.want == ActFail {
					if s, _ := st.Sessions(context.Background(), true); len(s) != 0 {
						b.Fatalf("%d sessions left", len(s))
					}
				}
				_ = st.Close()
				b.StartTimer()
			}
			report(b, lat, time.Millisecond, "ms")
			b.ReportMetric(4, "sessions")
		})
	}
}

func copyFile(tb testing.TB, from, to string) {
	tb.Helper()
	in, err := os.Open(from)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}
