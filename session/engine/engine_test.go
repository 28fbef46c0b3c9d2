package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

const (
	leakInputs = `{}`
	cvdInputs  = `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":750,"unit":"celsius"}}`
)

func fakeHarness(t *testing.T, steps int, d time.Duration, mod func(*Config)) (*harness, map[string]*slowExec) {
	t.Helper()
	xs := map[string]*slowExec{}
	var execs []executor.Executor
	for _, n := range []string{"leak-check", "rig-status", "cvd-material-synthesis"} {
		x := &slowExec{name: n, steps: steps, d: d}
		xs[n] = x
		execs = append(execs, x)
	}
	return newHarness(t, "", &fakeRig{env: testEnvelope(t)}, 1, execs, mod), xs
}

func TestSubmitRejections(t *testing.T) {
	h, _ := fakeHarness(t, 2, time.Millisecond, nil)
	for _, tc := range []struct {
		name, user, capab, inputs, code string
	}{
		{"unauthorized", "ghost", "leak-check", leakInputs, "unauthorized"},
		{"unknown capability", "alpha", "no-such-thing", leakInputs, "invalid_input"},
		{"invalid input", "alpha", "cvd-material-synthesis", `{"target_material":"MoS2"}`, "invalid_input"},
		{"forbidden", "low", "cvd-material-synthesis", cvdInputs, "forbidden"},
		{"risk too high", "pipe", "cvd-material-synthesis", strings.Replace(cvdInputs, "750", "850", 1), "risk_too_high"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := submitEnv(t, tc.capab, tc.inputs, "")
			if caller := map[string]string{"low": "lowrisk", "pipe": "pipeline-7"}[tc.user]; caller != "" {
				var s wire.TaskSubmit
				_ = json.Unmarshal(env.Payload, &s)
				s.CallerID = caller
				env, _ = wire.NewEnvelope(nil, &s, time.Now())
			}
			res := h.submit(t, tc.user, env)
			if res.SessionID != "" || len(res.Replies) != 1 || res.Replies[0].Type != wire.TypeTaskRejected || res.Replies[0].SessionID != nil {
				t.Fatalf("result %+v", res)
			}
			rej, err := res.Replies[0].TaskRejected()
			if err != nil || rej.ReasonCode != tc.code {
				t.Fatalf("rejection %+v %v, want %s", rej, err, tc.code)
			}
		})
	}
}

// complete runs a leak-check (no approval) to its end and checks the stream.
func TestSubmitRunsToCompletion(t *testing.T) {
	h, _ := fakeHarness(t, 4, 5*time.Millisecond, nil)
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	if len(res.Replies) != 3 || res.Replies[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("replies %+v", res.Replies)
	}
	acc, _ := res.Replies[0].TaskAccepted()
	if acc.RiskLevel != "R2" || acc.SessionToken == "" {
		t.Fatalf("accepted %+v", acc)
	}
	h.waitState(t, res.SessionID, lifecycle.Completed)
	msgs := h.out.of(res.SessionID, res.Replies)
	evs := events(t, msgs)
	contiguous(t, evs)
	if evs[0].EventType != "state_changed" || evs[1].EventType != "session_created" || evs[len(evs)-1].EventType != "session_closed" {
		t.Fatalf("events %v … %v", evs[0].EventType, evs[len(evs)-1].EventType)
	}
	last := msgs[len(msgs)-1]
	if last.Type != wire.TypeTaskCompleted {
		t.Fatalf("last message %s", last.Type)
	}
	tc, _ := last.TaskCompleted()
	if tc.ExecutionSummary == nil || tc.ExecutionSummary.StepsExecuted != 4 || tc.ExecutionSummary.CheckpointsCreated != 4 {
		t.Fatalf("summary %+v", tc.ExecutionSummary)
	}
	if stored := h.storedSeqs(t, res.SessionID); len(stored) != len(evs) {
		t.Fatalf("%d stored, %d published", len(stored), len(evs))
	}
	if !h.cfg.Revocations.Revoked(res.SessionID) {
		t.Fatal("token not revoked at the end")
	}
}

func pendingSubmit(t *testing.T, h *harness) (Result, string) {
	t.Helper()
	res := h.submit(t, "alpha", submitEnv(t, "cvd-material-synthesis", cvdInputs, `{"data_classification":"T2"}`))
	if len(res.Replies) != 1 || res.Replies[0].Type != wire.TypeEvent {
		t.Fatalf("replies %+v", res.Replies)
	}
	ev, _ := res.Replies[0].Event()
	var d approvalData
	if err := json.Unmarshal(ev.Data, &d); err != nil || ev.EventType != EventApprovalPending || ev.Sequence != 1 || d.Details.ApprovalID == "" {
		t.Fatalf("approval_pending %+v %v", ev, err)
	}
	if d.Details.RiskLevel != "R3" {
		t.Fatalf("risk %s, want R3", d.Details.RiskLevel)
	}
	return res, d.Details.ApprovalID
}

func TestApproval(t *testing.T) {
	ctx := context.Background()
	t.Run("approve", func(t *testing.T) {
		h, _ := fakeHarness(t, 2, time.Millisecond, nil)
		res, id := pendingSubmit(t, h)
		if err := h.e.Approve(ctx, id, ""); err == nil {
			t.Fatal("approve without operator")
		}
		if err := h.e.Approve(ctx, id, "olga"); err != nil {
			t.Fatal(err)
		}
		h.waitState(t, res.SessionID, lifecycle.Completed)
		msgs := h.out.of(res.SessionID, res.Replies)
		contiguous(t, events(t, msgs))
		if len(ofType(msgs, wire.TypeTaskAccepted)) != 1 || msgs[1].Type != wire.TypeTaskAccepted {
			t.Fatalf("task_accepted not right after approval_pending: %v", msgs[1].Type)
		}
		entries, err := h.st.Audit().Replay(ctx, res.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range entries {
			found = found || strings.Contains(e.Detail, "approved by operator olga")
		}
		if !found {
			t.Fatal("approval not audited with the operator")
		}
		if err := h.e.Approve(ctx, id, "olga"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second approve: %v", err)
		}
	})
	t.Run("deny", func(t *testing.T) {
		h, _ := fakeHarness(t, 2, time.Millisecond, nil)
		res, _ := pendingSubmit(t, h)
		if err := h.e.Deny(ctx, res.SessionID, "olga", "not today"); err != nil {
			t.Fatal(err)
		}
		st, _ := h.e.State(ctx, res.SessionID)
		if st != lifecycle.Rejected {
			t.Fatalf("state %s", st)
		}
		msgs := h.out.of(res.SessionID, res.Replies)
		last := msgs[len(msgs)-1]
		rej, err := last.TaskRejected()
		if err != nil || rej.ReasonCode != "forbidden" || !strings.Contains(rej.ReasonMessage, "olga") {
			t.Fatalf("last %v %+v %v", last.Type, rej, err)
		}
		contiguous(t, events(t, msgs))
	})
	t.Run("timeout", func(t *testing.T) {
		h, _ := fakeHarness(t, 2, time.Millisecond, func(c *Config) { c.ApprovalTimeout = 50 * time.Millisecond })
		res, id := pendingSubmit(t, h)
		h.waitState(t, res.SessionID, lifecycle.Rejected)
		if err := h.e.Approve(ctx, id, "late"); !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrState) {
			t.Fatalf("late approve: %v", err)
		}
		msgs := h.out.of(res.SessionID, res.Replies)
		rej, err := msgs[len(msgs)-1].TaskRejected()
		if err != nil || rej.ReasonCode != "resource_unavailable" {
			t.Fatalf("%+v %v", rej, err)
		}
	})
}

func TestAbortPauseTimeout(t *testing.T) {
	ctx := context.Background()
	t.Run("abort", func(t *testing.T) {
		h, xs := fakeHarness(t, 50, 20*time.Millisecond, nil)
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
		time.Sleep(60 * time.Millisecond)
		if err := h.e.Abort(ctx, res.SessionID, "enough"); err != nil {
			t.Fatal(err)
		}
		h.waitState(t, res.SessionID, lifecycle.Aborted)
		if xs["leak-check"].cleanups() != 1 {
			t.Fatalf("cleanup ran %d times", xs["leak-check"].cleanups())
		}
		evs := events(t, h.out.of(res.SessionID, res.Replies))
		contiguous(t, evs)
		last := evs[len(evs)-1]
		if last.EventType != "session_closed" || !strings.Contains(string(last.Data), `"ABORTED"`) {
			t.Fatalf("last event %s %s", last.EventType, last.Data)
		}
		if err := h.e.Abort(ctx, res.SessionID, "again"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("abort after close: %v", err)
		}
	})
	t.Run("pause and resume", func(t *testing.T) {
		h, _ := fakeHarness(t, 6, 20*time.Millisecond, nil)
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
		if err := h.e.Pause(ctx, res.SessionID, "otto"); err != nil {
			t.Fatal(err)
		}
		h.waitState(t, res.SessionID, lifecycle.Paused)
		if err := h.e.Resume(ctx, res.SessionID, "otto"); err != nil {
			t.Fatal(err)
		}
		h.waitState(t, res.SessionID, lifecycle.Completed)
		contiguous(t, events(t, h.out.of(res.SessionID, res.Replies)))
	})
	t.Run("abort while paused", func(t *testing.T) {
		h, _ := fakeHarness(t, 6, 20*time.Millisecond, nil)
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
		_ = h.e.Pause(ctx, res.SessionID, "otto")
		h.waitState(t, res.SessionID, lifecycle.Paused)
		if err := h.e.Abort(ctx, res.SessionID, "stop"); err != nil {
			t.Fatal(err)
		}
		h.waitState(t, res.SessionID, lifecycle.Aborted)
	})
	t.Run("max_duration", func(t *testing.T) {
		h, _ := fakeHarness(t, 100, 20*time.Millisecond, nil)
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, `{"max_duration":"PT0.3S"}`))
		h.waitState(t, res.SessionID, lifecycle.Failed)
		msgs := h.out.of(res.SessionID, res.Replies)
		tf, err := msgs[len(msgs)-1].TaskFailed()
		if err != nil || tf.ErrorCode != "timeout" || !strings.Contains(string(tf.ErrorDetails), "last_checkpoint") {
			t.Fatalf("%+v %v", tf, err)
		}
		contiguous(t, events(t, msgs))
	})
}

func TestConcurrencyWithFakes(t *testing.T) {
	h, xs := fakeHarness(t, 1000, 10*time.Millisecond, nil)
	xs["rig-status"].steps = 2
	ctx := context.Background()
	first := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	for _, tc := range []struct{ name, capab, inputs, want string }{
		{"same capability", "leak-check", leakInputs, "resource_unavailable"},
		{"shared vacuum system", "cvd-material-synthesis", cvdInputs, "resource_unavailable"},
	} {
		res := h.submit(t, "alpha", submitEnv(t, tc.capab, tc.inputs, ""))
		rej, err := res.Replies[0].TaskRejected()
		if err != nil || rej.ReasonCode != tc.want {
			t.Fatalf("%s: %v %+v", tc.name, err, rej)
		}
	}
	side := h.submit(t, "alpha", submitEnv(t, "rig-status", `{}`, ""))
	if side.Replies[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("rig-status beside a leak check: %v", side.Replies[0].Type)
	}
	h.waitState(t, side.SessionID, lifecycle.Completed)
	if err := h.e.Abort(ctx, first.SessionID, "done"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, first.SessionID, lifecycle.Aborted)
}
