package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/session/executor"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/session/token"
	"hcp-edge/transport/wire"
)

// The crash test of issue 4: the engine runs in a child process (this test
// binary re-executed with envCrashDir set, running only TestCrashChild) and
// is SIGKILLed at a random point; the parent then opens the state file,
// checks it, and starts the next child, which recovers.
//
// The child runs fake executors whose steps take a few milliseconds and
// checkpoint after each (executor.Execute), over a fake rig whose "physical"
// state (heater on or off, which session and step drove it) is a file: like
// real hardware, it survives the process. The simulated rig is not used:
// building it (firmware-sim, ptys, monitor, arming) takes seconds per child
// and lives in the child's process, so it would die with it and restart
// safe, which proves nothing about recovery.
//
//	go test -race -run 'TestCrashRecovery' -v ./session/engine/
const (
	envCrashDir   = "HCP_ENGINE_CRASH_DIR"
	envCrashSeed  = "HCP_ENGINE_CRASH_SEED"
	envCrashFinal = "HCP_ENGINE_CRASH_FINAL"
)

// procStart is when this process began (package initialisation): the
// restart time the rig check measures from.
var procStart = time.Now()

// rigState is the fake rig's physical state.
type rigState struct {
	Heater bool   `json:"heater"`
	Owner  string `json:"owner,omitempty"` // session whose step last drove it
	Step   int    `json:"step"`            // that step's index (-1: safe state)
}

// crashRig is an executor.Rig whose state is the file path.
type crashRig struct {
	path string
	env  *envelope.Envelope
	mu   sync.Mutex
}

func (r *crashRig) Apply(context.Context, string, envelope.Action) (envelope.Result, error) {
	return envelope.Result{}, nil
}
func (r *crashRig) Readings(context.Context) envelope.Readings { return freshReadings(nil) }
func (r *crashRig) Invoke(_ context.Context, _ string, ref envelope.ToolRef, _ json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("crash rig: no tool %s", ref)
}
func (r *crashRig) Envelope() *envelope.Envelope { return r.env }
func (r *crashRig) Latched() (bool, string)      { return false, "" }

func (r *crashRig) set(s rigState) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(s)
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.path)
}

func readRig(path string) (rigState, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return rigState{Step: -1}, nil
	}
	if err != nil {
		return rigState{}, err
	}
	var s rigState
	return s, json.Unmarshal(b, &s)
}

// crashExec is a fake executor: steps of d wall time; a physical one turns
// the heater on in every step but the last, and off in its cleanup.
type crashExec struct {
	name     string
	steps    int
	d        time.Duration
	physical bool
	rig      *crashRig
}

func (x *crashExec) Capability() string                          { return x.name }
func (x *crashExec) Plan(executor.Task) (executor.Recipe, error) { return &crashRecipe{x: x}, nil }
func (x *crashExec) Resume(_ executor.Task, st []byte) (executor.Recipe, int, error) {
	var n int
	if err := json.Unmarshal(st, &n); err != nil {
		return nil, 0, err
	}
	return &crashRecipe{x: x, done: n}, n, nil
}

type crashRecipe struct {
	x    *crashExec
	done int
}

func (r *crashRecipe) Steps() []executor.Step {
	out := make([]executor.Step, r.x.steps)
	for i := range out {
		out[i] = executor.Step{Name: fmt.Sprintf("s%02d", i), Stage: "work", Estimate: time.Second}
	}
	return out
}

func (r *crashRecipe) Run(ctx context.Context, i int, env *executor.Env) error {
	if r.x.physical {
		on := i < r.x.steps-1
		if _, err := env.Rig.Apply(ctx, env.Token, envelope.HeaterAction(on)); err != nil {
			return err
		}
		if err := r.x.rig.set(rigState{Heater: on, Owner: env.SessionID, Step: i}); err != nil {
			return err
		}
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

func (r *crashRecipe) Finish(context.Context, *executor.Env) (*executor.Result, error) {
	return &executor.Result{Outputs: map[string]any{"ok": true}}, nil
}
func (r *crashRecipe) State() ([]byte, error) { return json.Marshal(r.done) }
func (r *crashRecipe) Partial(*executor.Env) (map[string]any, []executor.Artifact) {
	return map[string]any{"steps_done": r.done}, nil
}

// Cleanup takes a while (the ABORTING window), then drives the rig safe.
func (r *crashRecipe) Cleanup(ctx context.Context, env *executor.Env) error {
	if !r.x.physical {
		return nil
	}
	t := time.NewTimer(15 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	if _, err := env.Rig.Apply(context.WithoutCancel(ctx), env.Token, envelope.HeaterAction(false)); err != nil {
		return err
	}
	return r.x.rig.set(rigState{Step: -1})
}

// childOut writes protocol lines to stdout, one write each (atomic on a
// pipe below PIPE_BUF).
type childOut struct{ mu sync.Mutex }

func (o *childOut) line(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if len(s) > 3000 {
		s = s[:3000]
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = os.Stdout.Write([]byte(s + "\n"))
}

// TestCrashChild is the child of TestCrashRecovery; it skips unless run by it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	if dir == "" {
		t.Skip("runs only as the child of TestCrashRecovery")
	}
	seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
	final := os.Getenv(envCrashFinal) != ""
	out := &childOut{}
	ctx := context.Background()
	opts := store.DefaultOpts()
	opts.Timeout = 5 * time.Second
	st, err := store.Open(filepath.Join(dir, "state.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t)
	g, err := gate.New(gateConfig(), reg, st.Audit(), gate.Opts{Clock: attended})
	if err != nil {
		t.Fatal(err)
	}
	priv, err := token.LoadOrCreateKey(filepath.Join(dir, "token.key"))
	if err != nil {
		t.Fatal(err)
	}
	auth, err := token.New(priv, token.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	rig := &crashRig{path: filepath.Join(dir, "rig.json"), env: testEnvelope(t)}
	r := rand.New(rand.NewPCG(seed, 0xc0ffee))
	trip := !final && r.IntN(8) == 0
	execs := []executor.Executor{
		&crashExec{name: "leak-check", steps: 16, d: 6 * time.Millisecond, physical: true, rig: rig},
		&crashExec{name: "cvd-material-synthesis", steps: 20, d: 5 * time.Millisecond, physical: true, rig: rig},
		&crashExec{name: "rig-status", steps: 4, d: 8 * time.Millisecond, rig: rig},
	}
	cfg := Config{Store: st, Gate: g, Registry: reg, Tokens: auth, Executors: execs, Rig: rig, StateDir: dir, TimeScale: 1,
		Out: OutboundFunc(func(_ context.Context, _ string, env *wire.Envelope) error {
			sid := "-"
			if env.SessionID != nil {
				sid = env.SessionID.String()
			}
			out.line("OUT %s %s %s", sid, env.Type, env.Payload)
			return nil
		}),
		SafeState: func(context.Context, string) error { return rig.set(rigState{Step: -1}) },
		Trips: func(context.Context) []string {
			if trip {
				return []string{"overtemp on furnace.temperature (injected)"}
			}
			return nil
		},
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out.line("UP trip=%v", trip)
	recs, err := e.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := readRig(rig.path)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(procStart)
	for _, rc := range recs {
		out.line("REC %s %s %s %s %v", rc.SessionID, rc.From, rc.Decision.Action, rc.Decision.Code, rc.Err)
	}
	sb, _ := json.Marshal(snap)
	out.line("RECOVERED %d %s", took.Microseconds(), sb)

	// An operator approves and resumes what recovery left waiting.
	after := func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	for _, rc := range recs {
		switch {
		case rc.Decision.Action == ActAwaitApproval && (final || r.IntN(3) > 0):
			sid := rc.SessionID
			after(time.Duration(r.IntN(30))*time.Millisecond, func() { _ = e.Approve(ctx, sid, "olga") })
		case rc.Decision.Action == ActHold && (final || r.IntN(3) > 0):
			sid := rc.SessionID
			after(time.Duration(r.IntN(30))*time.Millisecond, func() { _ = e.Resume(ctx, sid, "olga") })
		}
	}
	if final {
		deadline := time.Now().Add(20 * time.Second) // hang guard
		for {
			act, err := st.Sessions(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(act) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d sessions never ended, first %s in %s", len(act), act[0].ID, act[0].State)
			}
			time.Sleep(5 * time.Millisecond)
		}
		snap, _ := readRig(rig.path)
		sb, _ := json.Marshal(snap)
		out.line("DONE %s", sb)
		_ = e.Close()
		_ = st.Close()
		return
	}

	// New work: a physical session (refused if a recovered one holds the
	// equipment), then a read-only one beside it.
	submit := func(env *wire.Envelope) Result {
		res, err := e.Submit(ctx, SubmitRequest{MessageID: env.MessageID.String(), BrokerUser: "alpha", Envelope: env})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Replies {
			sid := "-"
			if m.SessionID != nil {
				sid = m.SessionID.String()
			}
			out.line("OUT %s %s %s", sid, m.Type, m.Payload)
		}
		return res
	}
	var phys Result
	if r.IntN(2) == 0 {
		phys = submit(submitEnv(t, "leak-check", leakInputs, ""))
	} else {
		phys = submit(submitEnv(t, "cvd-material-synthesis", cvdInputs, `{"data_classification":"T2"}`))
		if phys.SessionID != "" && r.IntN(4) > 0 {
			sid := phys.SessionID
			after(time.Duration(r.IntN(20))*time.Millisecond, func() { _ = e.Approve(ctx, sid, "olga") })
		}
	}
	submit(submitEnv(t, "rig-status", `{}`, ""))
	if sid := phys.SessionID; sid != "" {
		switch n := r.IntN(4); n {
		case 0:
			after(time.Duration(10+r.IntN(60))*time.Millisecond, func() { out.line("OP pause %s %v", sid, e.Pause(ctx, sid, "olga")) })
		case 1:
			after(time.Duration(10+r.IntN(60))*time.Millisecond, func() { out.line("OP abort %s %v", sid, e.Abort(ctx, sid, "caller_abort")) })
		}
	}
	out.line("READY")
	time.Sleep(30 * time.Second) // hang guard: the parent kills long before
	out.line("NOT KILLED")
	os.Exit(3)
}

// childRun is what the parent saw of one child.
type childRun struct {
	lines     []string
	up        time.Duration // from start to UP
	recovered time.Duration // from start to RECOVERED, 0 if never
	recLine   string
	ready     bool
	done      string
	recs      map[string][]string  // session → REC fields (from, action, code, err)
	failed    map[string]tfSummary // task_failed published per session
}

type tfSummary struct {
	Code           string
	LastCheckpoint string
	Partial        string
}

func parseChild(lines []string) childRun {
	c := childRun{lines: lines, recs: map[string][]string{}, failed: map[string]tfSummary{}}
	for _, ln := range lines {
		f := strings.SplitN(ln, " ", 4)
		switch f[0] {
		case "REC":
			g := strings.Fields(ln)
			if len(g) >= 4 {
				c.recs[g[1]] = g[2:]
			}
		case "RECOVERED":
			c.recLine = ln
		case "READY":
			c.ready = true
		case "DONE":
			c.done = ln
		case "OUT":
			if len(f) == 4 && f[2] == string(wire.TypeTaskFailed) {
				var tf wire.TaskFailed
				if json.Unmarshal([]byte(f[3]), &tf) == nil {
					var det failDetails
					_ = json.Unmarshal(tf.ErrorDetails, &det)
					c.failed[f[1]] = tfSummary{Code: tf.ErrorCode, LastCheckpoint: det.LastCheckpoint, Partial: string(tf.PartialOutputs)}
				}
			}
		}
	}
	return c
}

// sessSnap is a session as the parent found it after a kill.
type sessSnap struct {
	ID, Capability string
	State          lifecycle.State
	LastSeq        uint64
	LastCkpt       uint64
	CkptStep       int // the step the checkpoint resumes at
	NeedApproval   bool
}

// inspect opens the state file after a kill, checks it, and snapshots
// every session.
func inspect(t *testing.T, path string) map[string]sessSnap {
	t.Helper()
	ctx := context.Background()
	opts := store.DefaultOpts()
	opts.Timeout = 5 * time.Second
	st, err := store.Open(path, opts)
	if err != nil {
		t.Fatalf("state file does not open after SIGKILL: %v", err)
	}
	defer st.Close()
	if err := st.Check(ctx); err != nil {
		t.Fatalf("store check: %v", err)
	}
	all, err := st.Sessions(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sessSnap{}
	for _, s := range all {
		evs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		seqs := make([]uint64, len(evs))
		for i, ev := range evs {
			seqs[i] = ev.Seq
		}
		if err := lifecycle.CheckSequence(1, seqs); err != nil {
			t.Fatalf("session %s: %v", s.ID, err)
		}
		if uint64(len(evs)) != s.LastSeq {
			t.Fatalf("session %s: %d events, last_seq %d", s.ID, len(evs), s.LastSeq)
		}
		sn := sessSnap{ID: s.ID, Capability: s.Capability, State: s.State, LastSeq: s.LastSeq, LastCkpt: s.LastCheckpoint, CkptStep: -1}
		var m meta
		if json.Unmarshal(s.Metadata, &m) == nil {
			sn.NeedApproval = m.NeedApproval
		}
		if cp, ok, err := st.LastCheckpoint(ctx, s.ID); err != nil {
			t.Fatal(err)
		} else if ok {
			var p ckptPayload
			if err := json.Unmarshal(cp.Payload, &p); err != nil {
				t.Fatalf("session %s checkpoint payload: %v", s.ID, err)
			}
			sn.CkptStep = p.Step
		}
		out[s.ID] = sn
	}
	return out
}

// category names the situation of a non-terminal session at a kill.
func (s sessSnap) category() string {
	switch {
	case s.State == lifecycle.Pending && s.NeedApproval:
		return "PENDING awaiting approval"
	case s.State == lifecycle.Pending:
		return "PENDING accepted, not yet RUNNING"
	case s.LastCkpt == 0:
		return string(s.State) + " before the first checkpoint"
	}
	return string(s.State) + " with a checkpoint"
}

// outcome classifies what recovery did to a session from its events after
// the kill point: "resumed", "failed:<code>", "rejected", "aborted",
// "approved" (awaited, then approved), "none".
func outcome(t *testing.T, path string, s sessSnap) (string, []store.Event) {
	t.Helper()
	ctx := context.Background()
	opts := store.DefaultOpts()
	opts.Timeout = 5 * time.Second
	st, err := store.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(ctx, s.ID, s.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		return "none", nil
	}
	var sc lifecycle.StateChanged
	first := evs[0]
	// A PAUSED session fails through RUNNING (L2 has no PAUSED → FAILED).
	if first.Type == lifecycle.EventStateChanged && len(evs) > 1 && json.Unmarshal(first.Data, &sc) == nil &&
		sc.From == lifecycle.Paused && sc.To == lifecycle.Running && strings.HasSuffix(sc.Reason, "failing while paused") {
		evs = evs[1:]
		first = evs[0]
	}
	switch first.Type {
	case lifecycle.EventStateChanged:
		if err := json.Unmarshal(first.Data, &sc); err != nil {
			t.Fatal(err)
		}
		switch {
		case sc.Reason == lifecycle.ReasonRecovered:
			return "resumed", evs
		case sc.To == lifecycle.Rejected:
			return "rejected", evs
		case sc.To == lifecycle.Aborted:
			return "aborted", evs
		case sc.From == lifecycle.Pending && sc.To == lifecycle.Running:
			return "approved", evs
		}
	case lifecycle.EventError:
		var ed errorData
		_ = json.Unmarshal(first.Data, &ed)
		if len(evs) > 1 && evs[1].Type == lifecycle.EventStateChanged {
			_ = json.Unmarshal(evs[1].Data, &sc)
			if sc.To == lifecycle.Failed {
				return "failed:" + ed.Code, evs
			}
		}
	}
	return fmt.Sprintf("unexpected first event %s %s", first.Type, first.Data), evs
}

// runChild starts a child, waits for its UP line, kills it after delay
// (never when final) and returns what it printed.
func runChild(t *testing.T, dir string, seed int, delay time.Duration, final bool) childRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, fmt.Sprintf("%s=%d", envCrashSeed, seed))
	if final {
		cmd.Env = append(cmd.Env, envCrashFinal+"=1")
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type stamped struct {
		s  string
		at time.Duration
	}
	linec := make(chan stamped, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			linec <- stamped{sc.Text(), time.Since(start)}
		}
		close(linec)
	}()
	var c childRun
	var lines []string
	var recAt, upAt time.Duration
	guard := time.NewTimer(30 * time.Second) // hang guard only
	defer guard.Stop()
	var kill <-chan time.Time
	collect := func(l stamped) {
		lines = append(lines, l.s)
		switch {
		case strings.HasPrefix(l.s, "UP"):
			upAt = l.at
			if !final {
				kill = time.After(delay)
			}
		case strings.HasPrefix(l.s, "RECOVERED"):
			recAt = l.at
		}
	}
	killed := false
loop:
	for {
		select {
		case l, ok := <-linec:
			if !ok {
				break loop
			}
			collect(l)
		case <-kill:
			kill = nil
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill: %v", err)
			}
			killed = true
		case <-guard.C:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child hung; printed %q", lines)
		}
	}
	werr := cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if final {
		if werr != nil {
			t.Fatalf("final child: %v; printed %q", werr, lines)
		}
	} else if !killed || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended by itself (%v); printed %q", werr, lines)
	}
	c = parseChild(lines)
	c.up, c.recovered = upAt, recAt
	return c
}

func TestCrashRecovery(t *testing.T) {
	runs := 30
	if testing.Short() {
		runs = 6
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	stats := map[string]map[string]int{} // category at kill → outcome → count
	killPhase := map[string]int{}
	var prev map[string]sessSnap
	check := func(run int, c childRun, prev map[string]sessSnap) {
		t.Helper()
		// The rig, within 1 s of the restart: safe, or the state a
		// resumed (or held) session's checkpoint left it in.
		if c.recLine != "" {
			f := strings.SplitN(c.recLine, " ", 3)
			us, _ := strconv.ParseInt(f[1], 10, 64)
			var rs rigState
			if err := json.Unmarshal([]byte(f[2]), &rs); err != nil {
				t.Fatalf("run %d: rig snapshot %q: %v", run, f[2], err)
			}
			took := time.Duration(us) * time.Microsecond
			if took > time.Second {
				t.Errorf("run %d: rig checked %v after the restart, want within 1 s", run, took)
			}
			if rs.Heater {
				rec, ok := c.recs[rs.Owner]
				p, had := prev[rs.Owner]
				if !ok || !had || (rec[1] != string(ActResume) && rec[1] != string(ActHold)) {
					t.Errorf("run %d: heater on after recovery, driven by %s (recovery %v), not a resumed session", run, rs.Owner, rec)
				} else if rs.Step < p.CkptStep-1 {
					t.Errorf("run %d: rig at step %d of %s, behind its checkpoint (resumes at %d)", run, rs.Step, rs.Owner, p.CkptStep)
				}
			}
			t.Logf("run %d: restart → sessions decided and rig %s in %v (child clock), %v (parent clock, with exec)",
				run, map[bool]string{true: "in the checkpointed state", false: "safe"}[rs.Heater], took.Round(time.Millisecond), c.recovered.Round(time.Millisecond))
		}
		ids := make([]string, 0, len(prev))
		for id, s := range prev {
			if !s.State.Terminal() {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			s := prev[id]
			got, evs := outcome(t, path, s)
			rec := c.recs[id]
			decided := c.recLine != ""
			cat := s.category()
			if stats[cat] == nil {
				stats[cat] = map[string]int{}
			}
			key := got
			if !decided && got == "none" {
				key = "not reached (killed during recovery)"
			}
			stats[cat][key]++
			t.Logf("run %d:   %s %s (%s, ckpt %d): recovery %v → %s", run, id[:8], s.Capability, cat, s.LastCkpt, rec, got)
			// Never both: a resumed session shows no FAILED after, a failed
			// one no recovered_from_checkpoint.
			nRec, nFail := 0, 0
			for _, ev := range evs {
				var sc lifecycle.StateChanged
				if ev.Type == lifecycle.EventStateChanged && json.Unmarshal(ev.Data, &sc) == nil {
					if sc.Reason == lifecycle.ReasonRecovered {
						nRec++
					}
					if sc.To == lifecycle.Failed {
						nFail++
					}
				}
			}
			if nRec > 1 || (nRec > 0 && nFail > 0) {
				t.Errorf("run %d: session %s both resumed and failed (%d recovered, %d failed)", run, id, nRec, nFail)
			}
			if strings.HasPrefix(got, "unexpected") {
				t.Errorf("run %d: session %s: %s", run, id, got)
				continue
			}
			switch s.State {
			case lifecycle.Running, lifecycle.Paused:
				if decided && got != "resumed" && !strings.HasPrefix(got, "failed:") {
					t.Errorf("run %d: %s session %s neither resumed nor failed: %s", run, s.State, id, got)
				}
				if got == "resumed" && rec != nil && rec[1] != string(ActResume) && rec[1] != string(ActHold) {
					t.Errorf("run %d: session %s resumed but decision %v", run, id, rec)
				}
				if strings.HasPrefix(got, "failed:") {
					if rec != nil && rec[1] != string(ActFail) {
						t.Errorf("run %d: session %s failed but decision %v", run, id, rec)
					}
					if s.LastCkpt == 0 && got != "failed:"+string(executor.CodeInternal) && got != "failed:"+string(executor.CodeSafetyViolation) {
						t.Errorf("run %d: session %s without checkpoint failed with %s", run, id, got)
					}
					if decided {
						tf, ok := c.failed[id]
						switch {
						case !ok:
							t.Errorf("run %d: session %s failed at recovery without task_failed", run, id)
						case s.LastCkpt != 0 && tf.LastCheckpoint != fmt.Sprintf("ckpt-%06d", s.LastCkpt):
							t.Errorf("run %d: session %s task_failed last_checkpoint %q, want ckpt-%06d", run, id, tf.LastCheckpoint, s.LastCkpt)
						case s.LastCkpt != 0 && !strings.Contains(tf.Partial, "steps_done"):
							t.Errorf("run %d: session %s task_failed partial outputs %s", run, id, tf.Partial)
						}
					}
				}
			case lifecycle.Pending:
				want := []string{"rejected"}
				if s.NeedApproval {
					want = []string{"none", "approved"}
				}
				if (decided || got != "none") && !slices.Contains(want, got) {
					t.Errorf("run %d: PENDING session %s (approval %v) → %s, want %v", run, id, s.NeedApproval, got, want)
				}
			case lifecycle.Aborting:
				if (decided || got != "none") && got != "aborted" {
					t.Errorf("run %d: ABORTING session %s → %s", run, id, got)
				}
			}
		}
	}
	start := time.Now()
	for run := range runs {
		// One kill in four lands in the first 3 ms after UP (recovery,
		// whose failing sessions clean up for 15 ms), the rest while
		// sessions run.
		delay := time.Duration(3_000+rng.IntN(200_000)) * time.Microsecond
		if rng.IntN(4) == 0 {
			delay = time.Duration(rng.IntN(3_000)) * time.Microsecond
		}
		c := runChild(t, dir, run, delay, false)
		phase := "during recovery"
		switch {
		case c.ready:
			phase = "sessions running"
		case c.recLine != "":
			phase = "between recovery and new submissions"
		}
		killPhase[phase]++
		for _, ln := range c.lines {
			if strings.HasPrefix(ln, "OP ") {
				t.Logf("run %d: operator: %s", run, ln[3:])
			}
		}
		t.Logf("run %d: SIGKILL %v after UP (%s); child printed %d lines", run, delay.Round(time.Microsecond), phase, len(c.lines))
		check(run, c, prev)
		prev = inspect(t, path)
		var live []string
		for _, s := range prev {
			if !s.State.Terminal() {
				live = append(live, fmt.Sprintf("%s %s %s ckpt@%d", s.ID[:8], s.Capability, s.State, s.CkptStep))
			}
		}
		sort.Strings(live)
		t.Logf("run %d: state file opens and checks; %d sessions, non-terminal: %v", run, len(prev), live)
	}
	// The last child recovers, lets everything finish, and exits.
	c := runChild(t, dir, runs, 0, true)
	check(runs, c, prev)
	if c.done == "" {
		t.Fatal("final child never finished")
	}
	if !strings.Contains(c.done, `"heater":false`) {
		t.Errorf("rig not safe at the end: %s", c.done)
	}
	for id, s := range inspect(t, path) {
		if !s.State.Terminal() {
			t.Errorf("session %s ends in %s", id, s.State)
		}
	}
	t.Logf("%d kills in %v; kill points: %v", runs, time.Since(start).Round(time.Millisecond), killPhase)
	cats := make([]string, 0, len(stats))
	for k := range stats {
		cats = append(cats, k)
	}
	sort.Strings(cats)
	for _, k := range cats {
		t.Logf("  at kill %-40s → %v", k, stats[k])
	}
}
