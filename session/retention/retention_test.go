package retention

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/session/atrest"
	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
)

// fakeClock is the simulated clock of the state file and the pruner.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond) // strictly increasing stamps
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const day = 24 * time.Hour

// rig is a state directory with a store on a fake clock.
type rig struct {
	t     *testing.T
	clock *fakeClock
	st    *store.Store
	dir   string
	arts  string
	res   string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	c := &fakeClock{t: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)}
	o := store.DefaultOpts()
	o.Clock = c.Now
	st, err := store.Open(filepath.Join(dir, "state.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := atrest.ParseKey([]byte(strings.Repeat("5a", 32))) // T3/T4 events are sealed at rest
	if err != nil {
		t.Fatal(err)
	}
	st.SetAtRest(key)
	r := &rig{t: t, clock: c, st: st, dir: dir, arts: filepath.Join(dir, "artifacts"), res: filepath.Join(dir, "results")}
	for _, d := range []string{r.arts, r.res} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// session runs a session with events, checkpoints, artifacts and a result
// copy; it is left RUNNING unless end is a terminal state.
func (r *rig) session(id, class string, end lifecycle.State) {
	r.t.Helper()
	ctx := context.Background()
	if _, _, err := r.st.Create(ctx, store.Session{ID: id, Capability: "rig-status", CapabilityVersion: "1.0.0", CallerID: "lab-ai", DataClass: class}); err != nil {
		r.t.Fatal(err)
	}
	if _, _, err := r.st.Transition(ctx, id, store.Change{To: lifecycle.Running, Reason: "accepted"}); err != nil {
		r.t.Fatal(err)
	}
	for i := range 20 {
		if _, err := r.st.Append(ctx, id, store.Emit{Type: lifecycle.EventProgress, Data: map[string]any{"stage": "grow", "percent": i * 5, "message": strings.Repeat("x", 200)}}); err != nil {
			r.t.Fatal(err)
		}
		if i%5 == 0 {
			if _, _, err := r.st.Checkpoint(ctx, id, store.NewCheckpoint{Description: "step", Resumable: true, Step: "grow", Payload: make([]byte, 2048)}); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	ad := filepath.Join(r.arts, id)
	if err := os.MkdirAll(ad, 0o750); err != nil {
		r.t.Fatal(err)
	}
	for _, n := range []string{"raman_spectrum.json", "profile.svg"} {
		if err := os.WriteFile(filepath.Join(ad, n), make([]byte, 4096), 0o640); err != nil {
			r.t.Fatal(err)
		}
	}
	if end.Terminal() {
		if _, _, err := r.st.Transition(ctx, id, store.Change{To: end, Reason: "done"}); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.res, id+".json"), []byte(`{"type":"task_completed"}`), 0o640); err != nil {
			r.t.Fatal(err)
		}
	}
}

// gone reports whether session id has no record, no events, no artifacts
// and no result copy left; intact whether it has all of them.
func (r *rig) present(id string) (record, events, checkpoints, artifacts, result bool) {
	ctx := context.Background()
	_, err := r.st.Session(ctx, id)
	record = err == nil
	evs, _ := r.st.Events(ctx, id, 0)
	events = len(evs) > 0
	cps, _ := r.st.Checkpoints(ctx, id)
	checkpoints = len(cps) > 0
	_, err = os.Stat(filepath.Join(r.arts, id))
	artifacts = err == nil
	_, err = os.Stat(filepath.Join(r.res, id+".json"))
	result = err == nil
	return
}

func (r *rig) wantGone(id string) {
	r.t.Helper()
	if a, b, c, d, e := r.present(id); a || b || c || d || e {
		r.t.Errorf("%s: record %v events %v checkpoints %v artifacts %v result %v; want all gone", id, a, b, c, d, e)
	}
	if _, err := r.st.Session(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		r.t.Errorf("%s: Session = %v, want ErrNotFound", id, err)
	}
}

func (r *rig) wantIntact(id string, closed bool) {
	r.t.Helper()
	a, b, c, d, e := r.present(id)
	if !a || !b || !c || !d || e != closed {
		r.t.Errorf("%s: record %v events %v checkpoints %v artifacts %v result %v; want all kept", id, a, b, c, d, e)
	}
}

// verify runs the store's check and the audit chain's verification.
func (r *rig) verify() {
	r.t.Helper()
	ctx := context.Background()
	if err := r.st.Check(ctx); err != nil {
		r.t.Fatalf("store Check after pruning: %v", err)
	}
	if n, err := r.st.Audit().Verify(ctx); err != nil || n == 0 {
		r.t.Fatalf("audit Verify after pruning: %d entries, %v", n, err)
	}
}

func (r *rig) pruner(p Policy) *Pruner {
	r.t.Helper()
	pr, err := New(r.st, Opts{Policy: p, ArtifactsDir: r.arts, ResultsDir: r.res, Clock: r.clock.Now, PerTx: 2, Pause: time.Microsecond})
	if err != nil {
		r.t.Fatal(err)
	}
	return pr
}

func prunedIDs(rep Report) map[string]string {
	out := map[string]string{}
	for _, p := range rep.Pruned {
		out[p.SessionID] = p.Reason
	}
	return out
}

// TestRetentionMonths simulates seven months of a rig: closed sessions past
// their class's retention go (records, events, checkpoints, artifacts,
// result copy), running and recent ones and a T4 session awaiting its
// access decision stay, the state file checks and the audit chain
// verifies after every pass, and each removal is audited.
func TestRetentionMonths(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	pol := Policy{Default: 90 * day, Classes: map[string]time.Duration{"T3": 180 * day}}

	// January: three closed sessions, one that keeps running (a session
	// never closed, e.g. paused for months, is never touched), a T4 one
	// whose access request waits for an operator.
	r.session("jan-t1", "T1", lifecycle.Completed)
	r.session("jan-t2", "T2", lifecycle.Failed)
	r.session("jan-t3", "T3", lifecycle.Completed)
	r.session("jan-running", "T1", lifecycle.Running)
	r.session("jan-t4", "T4", lifecycle.Completed)
	err := r.st.Update(ctx, func(w *store.Tx) error {
		return w.PutAccess(store.AccessRequest{ID: "acc-00000001", SessionID: "jan-t4", CallerID: "lab-ai", DataClass: "T4",
			State: store.AccessPending, CreatedAt: r.clock.Now(), ExpiresAt: r.clock.Now().Add(day)})
	})
	if err != nil {
		t.Fatal(err)
	}
	// March: one more, closed.
	r.clock.Advance(60 * day)
	r.session("mar-t1", "T1", lifecycle.Failed)

	p := r.pruner(pol)
	rep, err := p.Once(ctx)
	if err != nil || len(rep.Pruned) != 0 {
		t.Fatalf("March pass: %+v %v; want nothing pruned", rep, err)
	}

	// April, day 95: January's T1 and T2 are past 90 days.
	r.clock.Advance(35 * day)
	if rep, err = p.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := prunedIDs(rep); len(got) != 2 || got["jan-t1"] != ReasonRetention || got["jan-t2"] != ReasonRetention || rep.Held != 1 {
		t.Fatalf("April pass pruned %v (held %d); want jan-t1 and jan-t2, jan-t4 held", got, rep.Held)
	}
	r.wantGone("jan-t1")
	r.wantGone("jan-t2")
	r.wantIntact("jan-t3", true)
	r.wantIntact("jan-running", false)
	r.wantIntact("jan-t4", true)
	r.wantIntact("mar-t1", true)
	r.verify()

	// The removal is in the audit log, under the session, and replay of
	// the pruned session still shows its history.
	es, err := r.st.Audit().Replay(ctx, "jan-t1")
	if err != nil || len(es) < 3 {
		t.Fatalf("replay of a pruned session: %d entries, %v", len(es), err)
	}
	last := es[len(es)-1]
	if last.Kind != audit.KindRetention || !strings.Contains(last.Detail, `"reason":"retention"`) || !strings.Contains(last.Detail, `"artifacts":2`) {
		t.Fatalf("last entry of jan-t1: %s %s", last.Kind, last.Detail)
	}

	// A second pass in the same instant finds nothing more.
	if rep, err = p.Once(ctx); err != nil || len(rep.Pruned) != 0 {
		t.Fatalf("second April pass: %+v %v", rep, err)
	}

	// July, day 200: the T3 session (180 days) and March's go; the
	// running one and the held T4 stay.
	r.clock.Advance(105 * day)
	if rep, err = p.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if got := prunedIDs(rep); len(got) != 2 || got["jan-t3"] == "" || got["mar-t1"] == "" {
		t.Fatalf("July pass pruned %v; want jan-t3 and mar-t1", got)
	}
	r.wantGone("jan-t3")
	r.wantGone("mar-t1")
	r.wantIntact("jan-running", false)
	r.wantIntact("jan-t4", true)
	r.verify()

	// The operator denies the T4 access: the next pass removes it.
	err = r.st.Update(ctx, func(w *store.Tx) error {
		a, err := w.Access("jan-t4")
		if err != nil {
			return err
		}
		a.State = store.AccessDenied
		return w.PutAccess(a)
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err = p.Once(ctx); err != nil || len(rep.Pruned) != 1 || rep.Pruned[0].SessionID != "jan-t4" || !rep.Pruned[0].Removed.Access {
		t.Fatalf("after the denial: %+v %v", rep, err)
	}
	if _, err := r.st.Access(ctx, "jan-t4"); !errors.Is(err, store.ErrNoAccess) {
		t.Fatalf("access request of a pruned session: %v", err)
	}
	r.wantIntact("jan-running", false)
	r.verify()
}

// TestRetentionCeiling: above the size ceiling the oldest closed sessions
// go first, inside their retention, but never one younger than MinAge;
// what cannot be freed is reported.
func TestRetentionCeiling(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		r.session(id, "T1", lifecycle.Completed)
		r.clock.Advance(2 * day)
	}
	r.session("today", "T1", lifecycle.Completed)
	p := r.pruner(Policy{Default: 365 * day, MaxBytes: 1, MinAge: day})
	rep, err := p.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := prunedIDs(rep)
	if len(got) != 4 || got["a"] != ReasonSize || got["d"] != ReasonSize || !rep.OverCeiling {
		t.Fatalf("ceiling pass: %+v; want a..d pruned for size and over_ceiling", rep)
	}
	if rep.Pruned[0].SessionID != "a" {
		t.Errorf("first pruned %s, want the oldest (a)", rep.Pruned[0].SessionID)
	}
	r.wantIntact("today", true)
	r.verify()

	// A ceiling above what is used prunes nothing.
	big := r.pruner(Policy{Default: 365 * day, MaxBytes: 1 << 40, MinAge: day})
	if rep, err = big.Once(ctx); err != nil || len(rep.Pruned) != 0 || rep.OverCeiling || rep.Bytes <= 0 {
		t.Fatalf("generous ceiling: %+v %v", rep, err)
	}
}

// TestRetentionInterrupted: files left by a pass interrupted after its
// commit (the ids in retention_pending) are removed by the next pass.
func TestRetentionInterrupted(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.session("old", "T1", lifecycle.Completed)
	r.clock.Advance(100 * day)
	// What the interrupted pass committed: records removed, id pending;
	// the files still there.
	err := r.st.Update(ctx, func(w *store.Tx) error {
		if _, err := w.Remove("old"); err != nil {
			return err
		}
		return markPending(w.Bolt(), "old")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, arts, res := r.present("old"); !arts || !res {
		t.Fatal("setup: files should still be there")
	}
	if _, err := r.pruner(Policy{Default: 90 * day}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	r.wantGone("old")
	r.verify()
}

// TestRemoveRefusesOpenSessions: store.Tx.Remove never removes a session
// that is not closed, and changes nothing when it refuses.
func TestRemoveRefusesOpenSessions(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.session("live", "T1", lifecycle.Running)
	err := r.st.Update(ctx, func(w *store.Tx) error { _, err := w.Remove("live"); return err })
	if !errors.Is(err, store.ErrNotClosed) {
		t.Fatalf("Remove of a running session: %v, want ErrNotClosed", err)
	}
	r.wantIntact("live", false)
	r.verify()
}

// TestPolicyValidate: the bad inputs of a policy, each a *PolicyError.
func TestPolicyValidate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		p       Policy
		longest time.Duration
		key     string
	}{
		{"zero default", Policy{}, 0, "default"},
		{"negative class", Policy{Default: day, Classes: map[string]time.Duration{"T3": -day}}, 0, "T3"},
		{"unknown class", Policy{Default: day, Classes: map[string]time.Duration{"T9": day}}, 0, "T9"},
		{"shorter than a session", Policy{Default: time.Hour}, 2 * time.Hour, "default"},
		{"class shorter than a session", Policy{Default: day, Classes: map[string]time.Duration{"T1": time.Minute}}, time.Hour, "T1"},
		{"negative ceiling", Policy{Default: day, MaxBytes: -1}, 0, "max_bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate(tt.longest)
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.Key != tt.key || !errors.Is(err, ErrPolicy) {
				t.Fatalf("Validate = %v, want a *PolicyError on %s", err, tt.key)
			}
		})
	}
	if err := (Policy{Default: day, Classes: map[string]time.Duration{"T4": 2 * day}}).Validate(time.Hour); err != nil {
		t.Fatalf("good policy: %v", err)
	}
}

// TestStartClose: the pruner's goroutine stops with Close.
func TestStartClose(t *testing.T) {
	r := newRig(t)
	p := r.pruner(Policy{Default: day})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	p.Close()
	p.Close()
}

// TestRetentionTransactionSize: 40 closed sessions the size of a MoS2 run
// (about 40 checkpoints of 7 KB and 50 events each) are removed four per
// transaction; the log gives the longest transaction (the longest a step
// may wait for the file behind a pass). No timed assertion: the figure is
// for docs/STATE.md.
func TestRetentionTransactionSize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 40 sessions")
	}
	ctx := context.Background()
	r := newRig(t)
	for i := range 40 {
		id := "mos2-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if _, _, err := r.st.Create(ctx, store.Session{ID: id, DataClass: "T2"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.st.Transition(ctx, id, store.Change{To: lifecycle.Running}); err != nil {
			t.Fatal(err)
		}
		err := r.st.Update(ctx, func(w *store.Tx) error {
			for j := range 40 {
				if _, err := w.Emit(id, store.Emit{Type: lifecycle.EventProgress, Data: map[string]any{"stage": "grow", "percent": j, "message": strings.Repeat("p", 400)}}); err != nil {
					return err
				}
				if _, _, err := w.Checkpoint(id, store.NewCheckpoint{Description: "step", Step: "grow", Payload: make([]byte, 7000)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.st.Transition(ctx, id, store.Change{To: lifecycle.Completed}); err != nil {
			t.Fatal(err)
		}
	}
	r.clock.Advance(100 * day)
	p, err := New(r.st, Opts{Policy: Policy{Default: 90 * day}, ArtifactsDir: r.arts, ResultsDir: r.res, Clock: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Once(ctx)
	if err != nil || len(rep.Pruned) != 40 || rep.Transactions != 10 {
		t.Fatalf("pass: %d pruned in %d transactions, %v", len(rep.Pruned), rep.Transactions, err)
	}
	t.Logf("40 MoS2-sized sessions (%d bytes of records each) removed in %d transactions of 4; longest transaction %v",
		rep.Pruned[0].Removed.Bytes, rep.Transactions, rep.LongestTx)
	r.verify()
}

// TestRetentionCeilingIgnoresAudit: the audit log is kept whole, so the
// ceiling does not count it: a large audit log under a ceiling that the
// sessions' own data respects prunes nothing.
func TestRetentionCeilingIgnoresAudit(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.session("a", "T1", lifecycle.Completed)
	r.session("b", "T1", lifecycle.Completed)
	err := r.st.Update(ctx, func(w *store.Tx) error {
		for range 3000 {
			if _, err := w.Audit(ctx, audit.Entry{Kind: audit.KindInterlock, Detail: strings.Repeat("d", 1000)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(10 * day)
	u, err := r.st.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := r.pruner(Policy{Default: 365 * day, MaxBytes: 1 << 20, MinAge: day})
	size, err := p.Size()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Once(ctx)
	if err != nil || len(rep.Pruned) != 0 || rep.OverCeiling {
		t.Fatalf("a 3 MB audit log under a 1 MiB ceiling: %+v %v (file %d bytes, counted %d)", rep, err, u.FileBytes, size)
	}
	t.Logf("file %d bytes, counted against the ceiling %d", u.FileBytes, size)
	r.wantIntact("a", true)
	r.wantIntact("b", true)
}
