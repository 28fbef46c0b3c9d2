package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/engine"
	"hcp-edge/transport/wire"
)

// TestMoS2QuestionOverTheBroker: the seed's MoS2 task, asking for the
// technician's checks (technician_checks: ask), submitted through the
// broker: the session blocks before pump-down at its first question
// (PAUSED awaiting_input, hcp-edge sessions shows it), the caller hears
// the question; a bad value, a checkpoint that is not pending and a user
// without the operate role are refused, audited, and change nothing; the
// operator's answers over the local CLI resume it, and the run completes
// with the answers in its result.
func TestMoS2QuestionOverTheBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole MoS2 run through the broker")
	}
	t.Parallel()
	b := newBrokerEnv(t)
	// dora holds approve, not operate: she may not answer. Unix users need
	// root; without it that part is skipped, loudly.
	var dora *osUser
	var exe string
	if os.Geteuid() == 0 {
		gid, us := testUsers(t, "dora")
		u := us["dora"]
		dora = &u
		if err := os.Chmod(filepath.Dir(b.dir), 0o711); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(b.dir, 0, int(gid)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(b.dir, os.ModeSetgid|0o750); err != nil {
			t.Fatal(err)
		}
		xdir, err := os.MkdirTemp("", "hcp-edge-q-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(xdir) })
		_ = os.Chmod(xdir, 0o755)
		exe = filepath.Join(xdir, "hcp-edge")
		copyFile(t, bin, exe, 0o755)
		cfg, err := os.ReadFile(b.cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg = append(cfg, fmt.Sprintf("\noperators:\n  Dora D: {user: %s, roles: [approve]}\n", u.name)...)
		if err := os.WriteFile(b.cfg, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Log("SKIP (part): the refusal of a user without the operate role needs root to create unix users")
	}
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	b.arm()

	r, q := b.startAsking(t)
	ts := r.ts
	defer r.c.Close()
	if q.Name != "precursor_loaded" || !strings.Contains(q.Answer, "MoO3") || !strings.HasPrefix(q.CheckpointID, "ckpt-") {
		t.Fatalf("pending question %+v", q)
	}
	if out := b.mustCLI("sessions").stdout; !strings.Contains(out, "hcp-edge answer "+r.sid+" "+q.CheckpointID+" VALUE") {
		t.Fatalf("sessions does not show the question:\n%s", out)
	}
	// The caller hears it: the progress event awaiting_input naming the
	// checkpoint, after state_changed to PAUSED.
	var mine []*wire.Envelope
	heard := time.After(brokerLongGuard)
	for found := false; !found; {
		select {
		case m, ok := <-r.task.Messages():
			if !ok {
				t.Fatal("the task ended before the question")
			}
			mine = append(mine, m)
			if ev, err := m.Event(); err == nil && ev.EventType == "progress" &&
				strings.Contains(string(ev.Data), engine.StageAwaitingInput) && strings.Contains(string(ev.Data), q.CheckpointID) {
				found = true
			}
		case <-heard:
			t.Fatalf("the caller never heard the question (%d messages)", len(mine))
		}
	}

	// Refusals: nothing changes.
	for _, bad := range [][]string{
		{r.sid, q.CheckpointID, "ZrO2"},             // not a choice
		{r.sid, "ckpt-999999", "MoO3"},              // not the pending checkpoint
		{"no-such-session", q.CheckpointID, "MoO3"}, // no session
	} {
		if res := b.cli(append([]string{"answer"}, append(bad, "--operator", "olga")...)...); res.code != exitFailure {
			t.Fatalf("answer %v: exit %d\n%s%s", bad, res.code, res.stdout, res.stderr)
		} else {
			t.Logf("answer %v refused: %s", bad, strings.TrimSpace(res.stderr))
		}
	}
	if dora != nil {
		res := b.cliAs(*dora, exe, "answer", r.sid, q.CheckpointID, "MoO3", "--operator", "Dora D")
		if res.code != exitFailure || !strings.Contains(res.stderr, `"operate"`) {
			t.Fatalf("answer by dora (approve only): exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
	}
	if s := b.sessionByID(r.sid); s.State != "PAUSED" || s.Question == nil || s.Question.CheckpointID != q.CheckpointID {
		t.Fatalf("a refused answer changed the session: %+v", s)
	}

	b.mustCLI("answer", r.sid, q.CheckpointID, "MoO3", "--operator", "olga")
	second := b.waitSessionFor(brokerLongGuard, "blocked at its second question", func(s sessionView) bool {
		return s.ID == r.sid && s.State == "PAUSED" && s.Question != nil && s.Question.Name == "substrate_loaded"
	})
	b.mustCLI("answer", r.sid, second.Question.CheckpointID, "yes", "--operator", "olga")

	rest := r.finish(t, brokerLongGuard)
	all := append(append([]*wire.Envelope{}, rest[:len(r.early)]...), append(mine, rest[len(r.early):]...)...)
	checkStream(t, all, r.sid)
	fin := all[len(all)-1]
	state := checkCompleted(t, fin, ts, b.grown())
	if state == "COMPLETED" {
		tc, _ := fin.TaskCompleted()
		var out struct {
			Answers map[string]any `json:"answers"`
		}
		if err := json.Unmarshal(tc.Outputs, &out); err != nil || out.Answers["precursor_loaded"] != "MoO3" || out.Answers["substrate_loaded"] != true {
			t.Fatalf("answers in the result: %+v %v", out.Answers, err)
		}
	}
	b.waitSession(state, func(s sessionView) bool { return s.ID == r.sid && s.State == state })

	// The audit: both answers with who gave them; the refusals.
	var rep auditaccess.ReplayResult
	if err := json.Unmarshal([]byte(b.mustCLI("audit", "replay", r.sid, "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	answers, refused := 0, 0
	for _, en := range rep.Entries {
		switch {
		case en.Kind == "approval" && en.Decision == "answer":
			answers++
		case en.Kind == "control" && (en.Decision == "answer failed" || en.Decision == "answer refused"):
			refused++
		}
	}
	wantRefused := 1 // the bad value (the unknown checkpoint's is audited too; the unknown session's is not this session's)
	if dora != nil {
		wantRefused++
	}
	if answers != 2 || refused < wantRefused {
		for _, en := range rep.Entries {
			t.Logf("audit #%d %s %s %s", en.Seq, en.Kind, en.Decision, en.Summary)
		}
		t.Fatalf("audit: %d answers (want 2), %d refused or failed answers (want at least %d)", answers, refused, wantRefused)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// sessionQuestion is a session's pending question as sessions lists it.
type sessionQuestion = reply.Question

// startAsking submits the seed's MoS2 task asking for the technician's
// checks through a new caller client, approves it and waits until it is
// blocked at its first question, which it returns.
func (b *brokerEnv) startAsking(t *testing.T) (*mos2Run, *sessionQuestion) {
	t.Helper()
	ts := seedSubmit(t)
	var in map[string]any
	if err := json.Unmarshal(ts.Inputs, &in); err != nil {
		t.Fatal(err)
	}
	in["technician_checks"] = "ask"
	ts.Inputs, _ = json.Marshal(in)
	r := &mos2Run{ts: ts}
	r.c = b.client(func(env *wire.Envelope) {
		r.mu.Lock()
		r.early = append(r.early, env)
		r.mu.Unlock()
	})
	task, err := r.c.Submit(context.Background(), ts)
	if err != nil {
		t.Fatal(err)
	}
	r.task = task
	pending := b.waitSession("pending approval", func(s sessionView) bool {
		return s.State == "PENDING" && s.ApprovalID != "" && s.Caller == b.callerID
	})
	b.mustCLI("approve", pending.ApprovalID, "--operator", "olga")
	r.sid = pending.ID
	blocked := b.waitSessionFor(brokerLongGuard, "blocked at its question", func(s sessionView) bool {
		return s.ID == r.sid && s.State == "PAUSED" && s.Question != nil
	})
	return r, blocked.Question
}

// TestMoS2QuestionKill: the agent SIGKILLed while a MoS2 run is blocked at
// its question comes back with the session blocked at the same checkpoint;
// SIGKILLed again right after the operator's answer (the answer and the
// resumption are one transaction: whichever side of the kill the run
// was, nothing is lost), it comes back with the answer kept, never asking
// that question again, and the run completes with both answers, one
// audited answer per question.
func TestMoS2QuestionKill(t *testing.T) {
	if testing.Short() {
		t.Skip("SIGKILLs the agent twice in a MoS2 run through the broker")
	}
	t.Parallel()
	b := newBrokerEnv(t)
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	b.arm()
	r, q := b.startAsking(t)
	defer r.c.Close()

	b.kill()
	b.env = restartEnv(b.env)
	again := b.waitSessionFor(brokerLongGuard, "blocked again after the restart", func(s sessionView) bool {
		return s.ID == r.sid && s.State == "PAUSED" && s.Question != nil
	})
	if again.Question.CheckpointID != q.CheckpointID || again.Question.Name != q.Name {
		t.Fatalf("after the restart: %+v, was %+v", again.Question, q)
	}
	b.arm() // the agent starts with the relay de-energised
	b.mustCLI("answer", r.sid, q.CheckpointID, "MoO3", "--operator", "olga")
	b.kill()
	b.env = restartEnv(b.env)

	// Back: held after the restart (answered, it was running), or blocked
	// at the second question; never at the first again.
	for answered := map[string]bool{q.Name: true}; ; {
		s := b.waitSessionFor(brokerLongGuard, "paused after the restart, or ended", func(s sessionView) bool {
			return s.ID == r.sid && (s.State == "PAUSED" || s.State == "COMPLETED" || s.State == "FAILED")
		})
		if s.State != "PAUSED" {
			break
		}
		switch {
		case s.Question == nil:
			b.arm()
			b.mustCLI("resume", r.sid, "--operator", "olga")
		case answered[s.Question.Name]:
			t.Fatalf("asked %s again after its answer was recorded", s.Question.Name)
		default:
			b.arm()
			b.mustCLI("answer", r.sid, s.Question.CheckpointID, "yes", "--operator", "olga")
			answered[s.Question.Name] = true
		}
		b.waitSessionFor(brokerLongGuard, "going on", func(v sessionView) bool {
			return v.ID == r.sid && (v.State != "PAUSED" || (v.Question != nil && !answered[v.Question.Name]))
		})
	}

	all := r.finish(t, brokerLongGuard)
	checkSequence(t, all)
	fin := all[len(all)-1]
	if checkCompleted(t, fin, r.ts, b.grown()) == "COMPLETED" {
		tc, _ := fin.TaskCompleted()
		var out struct {
			Answers map[string]any `json:"answers"`
		}
		if err := json.Unmarshal(tc.Outputs, &out); err != nil || out.Answers["precursor_loaded"] != "MoO3" || out.Answers["substrate_loaded"] != true {
			t.Fatalf("answers in the result: %+v %v", out.Answers, err)
		}
	}
	var rep auditaccess.ReplayResult
	if err := json.Unmarshal([]byte(b.mustCLI("audit", "replay", r.sid, "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	perQuestion := map[string]int{}
	for _, en := range rep.Entries {
		if en.Kind == "approval" && en.Decision == "answer" {
			var d struct {
				Question string `json:"question"`
			}
			_ = json.Unmarshal(en.Detail, &d)
			perQuestion[d.Question]++
		}
	}
	if perQuestion["precursor_loaded"] != 1 || perQuestion["substrate_loaded"] != 1 {
		t.Fatalf("audited answers per question: %v", perQuestion)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// TestQuestionTimeoutAbortsToSafe: a lab's recipe (the shipped H2 anneal
// with a question before it cools, to be answered within 3 s) submitted
// through the broker while the furnace is hot: nobody answers; at the
// timeout the task fails (task_failed timeout, naming the question), and
// the rig is left safe: heater disabled, every gas line closed and its MFC
// at zero, the vent closed.
func TestQuestionTimeoutAbortsToSafe(t *testing.T) {
	if testing.Short() {
		t.Skip("a lab recipe through the broker, left unanswered")
	}
	t.Parallel()
	b := newBrokerEnv(t)
	dir := withRecipesDir(t, b, "anneal-asks")
	rec := string(labRecipe(t, "anneal-asks", "1.0.0", "anneal"))
	const cool = "  - cool: {below_c: 75, timeout: PT6H}\n"
	if !strings.Contains(rec, cool) {
		t.Fatalf("fixture: %q not in h2-anneal.yaml", cool)
	}
	rec = strings.Replace(rec, cool, `  - cool:
      below_c: 75
      timeout: PT6H
      ask:
        - name: foil_checked
          question: "Foil inspected through the window before cooling?"
          answer: {type: yes_no}
          timeout: PT3S
`, 1)
	writeRecipe(t, dir, "anneal-asks.yaml", []byte(rec))
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	b.arm()
	r := b.startApproved(t, &wire.TaskSubmit{Capability: "anneal-asks", CallerID: b.callerID, Intent: "an anneal that asks",
		Inputs: json.RawMessage(`{"substrate":"sapphire","anneal_temperature":500,"anneal_duration":"PT10M"}`)})
	defer r.c.Close()
	blocked := b.waitSessionFor(brokerLongGuard, "blocked at its question", func(s sessionView) bool {
		return s.ID == r.sid && s.State == "PAUSED" && s.Question != nil
	})
	if blocked.Question.Name != "foil_checked" {
		t.Fatalf("pending question %+v", blocked.Question)
	}
	if tc := b.p.Snapshot().Furnace.TemperatureC; tc < 300 {
		t.Fatalf("the furnace is at %.0f °C when the question is asked: the test means a hot rig", tc)
	}
	all := r.finish(t, brokerLongGuard)
	fin := all[len(all)-1]
	tf, err := fin.TaskFailed()
	if err != nil {
		t.Fatalf("final %s, want task_failed: %v", fin.Type, err)
	}
	if tf.ErrorCode != "timeout" || !strings.Contains(tf.ErrorMessage, "foil_checked") {
		t.Fatalf("task_failed %s: %s", tf.ErrorCode, tf.ErrorMessage)
	}
	b.waitSession("failed", func(s sessionView) bool { return s.ID == r.sid && s.State == "FAILED" })
	deadline := time.Now().Add(time.Minute)
	for !safeAfterAbort(b.p.Snapshot()) {
		if time.Now().After(deadline) {
			s := b.p.Snapshot()
			t.Fatalf("the rig is not safe a minute after the abort: heater %v, MFCs %+v, coils %v", s.Furnace.HeaterEnable, s.MFCs, s.Coils)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := b.p.Snapshot()
	t.Logf("after the timeout: heater %v, furnace %.0f °C, coils %v", s.Furnace.HeaterEnable, s.Furnace.TemperatureC, s.Coils)
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// safeAfterAbort: heater disabled, every gas line's MFC at zero and its
// valve closed, the vent closed (the pump and the gate valve may keep the
// chamber under vacuum).
func safeAfterAbort(s plant.Snapshot) bool {
	if s.Furnace.HeaterEnable || s.Coils["vent_valve"] {
		return false
	}
	for _, m := range s.MFCs {
		if m.SetpointSCCM != 0 || m.ValveOpen {
			return false
		}
	}
	return true
}
