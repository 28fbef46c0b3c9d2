package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/recipe"
	"hcp-edge/transport/wire"
)

// askExec is a fake executor of capability name whose step 1 asks a
// question (a number of mm from 0 to 5) before it runs; with hang, step 1
// then waits for the end of the run (a kill between the answer and the
// next checkpoint).
type askExec struct {
	name    string
	timeout time.Duration
	hang    bool
	mu      sync.Mutex
	cleanup int
}

func (x *askExec) Capability() string { return x.name }
func (x *askExec) Plan(executor.Task) (executor.Recipe, error) {
	return &askRecipe{x: x}, nil
}
func (x *askExec) Resume(_ executor.Task, st []byte) (executor.Recipe, int, error) {
	var s askState
	if err := json.Unmarshal(st, &s); err != nil {
		return nil, 0, err
	}
	return &askRecipe{x: x, st: s}, s.Next, nil
}

type askState struct {
	Next   int `json:"next"`
	Answer any `json:"answer"`
}

type askRecipe struct {
	x  *askExec
	st askState
}

func (r *askRecipe) question() recipe.Question {
	lo, hi := 0.0, 5.0
	return recipe.Question{Name: "gap_mm", Text: "Gap between boat and substrate?", Timeout: r.x.timeout, OnTimeout: recipe.OnTimeoutAbort,
		Answer: recipe.AnswerSpec{Type: recipe.AnswerNumber, Unit: "mm", Min: &lo, Max: &hi}}
}

func (r *askRecipe) Steps() []executor.Step {
	return []executor.Step{{Name: "load", Stage: "work"}, {Name: "heat", Stage: "work"}, {Name: "done", Stage: "work"}}
}

func (r *askRecipe) Run(ctx context.Context, i int, env *executor.Env) error {
	if i == 1 {
		st, _ := json.Marshal(r.st)
		a, _, err := env.Questions.Ask(ctx, executor.Question{Question: r.question(), Step: 1, StepName: "heat",
			Checkpoint: executor.Checkpoint{Step: 1, StepName: "heat", Resumable: true, State: st, Description: "question gap_mm"}})
		if err != nil {
			return err
		}
		r.st.Answer = a
		if r.x.hang {
			<-ctx.Done()
			return ctx.Err()
		}
	}
	r.st.Next = i + 1
	return nil
}
func (r *askRecipe) Finish(context.Context, *executor.Env) (*executor.Result, error) {
	return &executor.Result{Outputs: map[string]any{"answers": map[string]any{"gap_mm": r.st.Answer}}}, nil
}
func (r *askRecipe) State() ([]byte, error) { return json.Marshal(r.st) }
func (r *askRecipe) Partial(*executor.Env) (map[string]any, []executor.Artifact) {
	return map[string]any{}, nil
}
func (r *askRecipe) Cleanup(context.Context, *executor.Env) error {
	r.x.mu.Lock()
	r.x.cleanup++
	r.x.mu.Unlock()
	return nil
}

func askHarness(t *testing.T, path string, x *askExec, mod func(*Config)) *harness {
	t.Helper()
	execs := []executor.Executor{x, &slowExec{name: "rig-status", steps: 1}, &slowExec{name: "cvd-material-synthesis", steps: 1}}
	return newHarness(t, path, &fakeRig{env: testEnvelope(t)}, 1, execs, func(c *Config) {
		c.Trips = func(context.Context) []string { return nil }
		if mod != nil {
			mod(c)
		}
	})
}

// waitQuestion waits until session id is blocked at a question.
func waitQuestion(t *testing.T, h *harness, id string) PendingQuestion {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if q, ok := h.e.PendingQuestionOf(id); ok {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s never asked", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func lastOf(t *testing.T, h *harness, id string) *wire.Envelope {
	t.Helper()
	msgs := h.out.of(id, nil)
	return msgs[len(msgs)-1]
}

func TestQuestionBlockAnswerResume(t *testing.T) {
	ctx := context.Background()
	x := &askExec{name: "leak-check", timeout: time.Hour}
	var mu sync.Mutex
	var heard []QuestionEvent
	h := askHarness(t, "", x, func(c *Config) {
		c.OnQuestion = func(ev QuestionEvent) { mu.Lock(); heard = append(heard, ev); mu.Unlock() }
	})
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	id := res.SessionID
	q := waitQuestion(t, h, id)
	h.waitState(t, id, lifecycle.Paused)
	if q.Name != "gap_mm" || !strings.HasPrefix(q.CheckpointID, "ckpt-") || q.Answer.Type != recipe.AnswerNumber {
		t.Fatalf("pending %+v", q)
	}
	// The caller heard it: checkpoint_created, state_changed PAUSED
	// awaiting_input, and the question in a progress event.
	evs := events(t, h.out.of(id, res.Replies))
	var sawCkpt, sawPause, sawQuestion bool
	for _, ev := range evs {
		d := string(ev.Data)
		switch {
		case ev.EventType == string(lifecycle.EventCheckpointCreated) && strings.Contains(d, q.CheckpointID):
			sawCkpt = true
		case ev.EventType == string(lifecycle.EventStateChanged) && strings.Contains(d, `"to_state":"PAUSED"`) && strings.Contains(d, ReasonAwaitingInput):
			sawPause = sawCkpt
		case ev.EventType == string(lifecycle.EventProgress) && strings.Contains(d, StageAwaitingInput) && strings.Contains(d, q.CheckpointID):
			sawQuestion = sawPause
		}
	}
	if !sawQuestion {
		t.Fatalf("events do not carry the question in order: %d events", len(evs))
	}
	sess, err := h.st.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sq, ok := PendingQuestionIn(sess); !ok || sq.CheckpointID != q.CheckpointID {
		t.Fatalf("stored question %+v %v", sq, ok)
	}

	// Refusals change nothing.
	before := len(h.storedSeqs(t, id))
	olga := Signer{UID: 1001, User: "olga", Display: "olga", Known: true}
	if err := h.e.Resume(ctx, id, "olga"); !errors.Is(err, ErrState) {
		t.Fatalf("resume of a blocked session: %v", err)
	}
	for _, bad := range []struct {
		ckpt, value string
		want        error
	}{
		{q.CheckpointID, "7", recipe.ErrAnswer},     // out of range
		{q.CheckpointID, "wide", recipe.ErrAnswer},  // wrong type
		{"ckpt-999999", "2", ErrNotPending},         // not the pending checkpoint
		{q.CheckpointID, "NaN", recipe.ErrAnswer},   // not a finite number
		{q.CheckpointID, "-0.5", recipe.ErrAnswer},  // below the minimum
		{q.CheckpointID, "", recipe.ErrAnswer},      // nothing
		{q.CheckpointID, "2 mm", recipe.ErrAnswer},  // a unit is not a number
		{q.CheckpointID, "1e309", recipe.ErrAnswer}, // infinite
	} {
		if _, err := h.e.AnswerQuestion(ctx, id, bad.ckpt, bad.value, olga); !errors.Is(err, bad.want) {
			t.Errorf("answer %s %q: %v, want %v", bad.ckpt, bad.value, err, bad.want)
		}
	}
	if _, err := h.e.AnswerQuestion(ctx, "no-such-session", q.CheckpointID, "2", olga); !errors.Is(err, ErrNotFound) {
		t.Errorf("answer to no session: %v", err)
	}
	if n := len(h.storedSeqs(t, id)); n != before {
		t.Fatalf("refused answers changed the session: %d events, were %d", n, before)
	}
	if st, _ := h.e.State(ctx, id); st != lifecycle.Paused {
		t.Fatalf("state %s after refusals", st)
	}

	ans, err := h.e.AnswerQuestion(ctx, id, q.CheckpointID, "2.5", olga)
	if err != nil || ans.Value != 2.5 {
		t.Fatalf("answer: %+v %v", ans, err)
	}
	if _, err := h.e.AnswerQuestion(ctx, id, q.CheckpointID, "2.5", olga); !errors.Is(err, ErrNotPending) {
		t.Fatalf("second answer: %v", err)
	}
	h.waitState(t, id, lifecycle.Completed)
	tc, err := lastOf(t, h, id).TaskCompleted()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tc.Outputs), `"gap_mm":2.5`) {
		t.Fatalf("outputs %s", tc.Outputs)
	}
	// The answer's transition is audited with who gave it.
	entries, err := h.st.Audit().Replay(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var audited bool
	for _, e := range entries {
		audited = audited || (strings.Contains(e.Detail, `"decision":"answer"`) && strings.Contains(e.Detail, `"uid":1001`) && strings.Contains(e.Detail, "2.5"))
	}
	if !audited {
		t.Fatal("no audit entry of the answer")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 2 || heard[0].Answered || !heard[1].Answered {
		t.Fatalf("OnQuestion heard %+v", heard)
	}
}

func TestQuestionTimeoutAborts(t *testing.T) {
	x := &askExec{name: "leak-check", timeout: 50 * time.Millisecond}
	h := askHarness(t, "", x, nil)
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	if st := h.waitTerminal(t, res.SessionID); st != lifecycle.Failed {
		t.Fatalf("ended %s", st)
	}
	tf, err := lastOf(t, h, res.SessionID).TaskFailed()
	if err != nil {
		t.Fatal(err)
	}
	if tf.ErrorCode != string(executor.CodeTimeout) || !strings.Contains(tf.ErrorMessage, "gap_mm") || !strings.Contains(tf.ErrorMessage, "not answered") {
		t.Fatalf("task_failed %s: %s", tf.ErrorCode, tf.ErrorMessage)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cleanup == 0 {
		t.Fatal("no cleanup after the timeout")
	}
}

func TestQuestionAbortWhileBlocked(t *testing.T) {
	x := &askExec{name: "leak-check", timeout: time.Hour}
	h := askHarness(t, "", x, nil)
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	waitQuestion(t, h, res.SessionID)
	if err := h.e.Abort(context.Background(), res.SessionID, "caller_abort"); err != nil {
		t.Fatal(err)
	}
	if st := h.waitTerminal(t, res.SessionID); st != lifecycle.Aborted {
		t.Fatalf("ended %s", st)
	}
}

// TestQuestionSurvivesRestart: a session killed while blocked is blocked
// again after the restart, at the same checkpoint, without asking anew;
// one killed after its answer was recorded and before the run went on
// resumes with the answer, asking nothing.
func TestQuestionSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	olga := Signer{UID: 1001, User: "olga", Display: "olga", Known: true}
	t.Run("blocked stays blocked", func(t *testing.T) {
		x := &askExec{name: "leak-check", timeout: time.Hour}
		h := askHarness(t, "", x, nil)
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
		q := waitQuestion(t, h, res.SessionID)
		h.close()
		h2 := askHarness(t, h.path, x, nil)
		if _, err := h2.e.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		q2 := waitQuestion(t, h2, res.SessionID)
		if q2.CheckpointID != q.CheckpointID {
			t.Fatalf("asked anew at %s, was %s", q2.CheckpointID, q.CheckpointID)
		}
		if _, err := h2.e.AnswerQuestion(ctx, res.SessionID, q.CheckpointID, "1", olga); err != nil {
			t.Fatal(err)
		}
		h2.waitState(t, res.SessionID, lifecycle.Completed)
	})
	t.Run("blocked past the grace stays blocked", func(t *testing.T) {
		// A blocked session emits nothing while it waits: the time since
		// its last event is no outage; the question's deadline bounds it.
		x := &askExec{name: "leak-check", timeout: time.Hour}
		h := askHarness(t, "", x, nil)
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
		q := waitQuestion(t, h, res.SessionID)
		h.close()
		time.Sleep(20 * time.Millisecond)
		h2 := askHarness(t, h.path, x, func(c *Config) { c.RecoveryGrace = 10 * time.Millisecond })
		recs, err := h2.e.Recover(ctx)
		if err != nil || len(recs) != 1 || recs[0].Decision.Action != ActHold {
			t.Fatalf("recoveries %+v %v", recs, err)
		}
		if q2 := waitQuestion(t, h2, res.SessionID); q2.CheckpointID != q.CheckpointID {
			t.Fatalf("asked anew at %s", q2.CheckpointID)
		}
		if err := h2.e.Abort(ctx, res.SessionID, "caller_abort"); err != nil {
			t.Fatal(err)
		}
		h2.waitTerminal(t, res.SessionID)
	})
	t.Run("deadline passed during the outage fails", func(t *testing.T) {
		x := &askExec{name: "leak-check", timeout: 300 * time.Millisecond}
		h := askHarness(t, "", x, nil)
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
		waitQuestion(t, h, res.SessionID)
		h.close()
		time.Sleep(400 * time.Millisecond)
		h2 := askHarness(t, h.path, x, nil)
		if _, err := h2.e.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		if st := h2.waitTerminal(t, res.SessionID); st != lifecycle.Failed {
			t.Fatalf("ended %s", st)
		}
		// Failed by the timeout: in the restarted agent, or (a slow
		// machine) before the first one stopped; the store says which code.
		failed := false
		for _, ev := range h2.storedSeqs(t, res.SessionID) {
			failed = failed || (ev.Type == lifecycle.EventError && strings.Contains(string(ev.Data), `"code":"timeout"`))
		}
		if !failed {
			t.Fatal("no timeout error event")
		}
	})
	t.Run("answered resumes", func(t *testing.T) {
		x := &askExec{name: "leak-check", timeout: time.Hour, hang: true}
		h := askHarness(t, "", x, nil)
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
		q := waitQuestion(t, h, res.SessionID)
		if _, err := h.e.AnswerQuestion(ctx, res.SessionID, q.CheckpointID, "4", olga); err != nil {
			t.Fatal(err)
		}
		h.waitState(t, res.SessionID, lifecycle.Running)
		h.close() // the answer is recorded; the run has not reached its next checkpoint
		x2 := &askExec{name: "leak-check", timeout: time.Hour}
		h2 := askHarness(t, h.path, x2, nil)
		recs, err := h2.e.Recover(ctx)
		if err != nil || len(recs) != 1 || recs[0].Decision.Action != ActResume {
			t.Fatalf("recoveries %+v %v", recs, err)
		}
		h2.waitState(t, res.SessionID, lifecycle.Completed)
		tc, err := lastOf(t, h2, res.SessionID).TaskCompleted()
		if err != nil || !strings.Contains(string(tc.Outputs), `"gap_mm":4`) {
			t.Fatalf("outputs %v %v", tc, err)
		}
		for _, ev := range events(t, h2.out.of(res.SessionID, nil)) {
			if strings.Contains(string(ev.Data), ReasonAwaitingInput) {
				t.Fatalf("asked again after the restart: %s", ev.Data)
			}
		}
	})
}
