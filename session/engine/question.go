package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"hcp-edge/session/atrest"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/recipe"
	"hcp-edge/session/store"
)

// ReasonAwaitingInput is the reason of the RUNNING → PAUSED transition of
// a session that blocks at a recipe's question (docs/PROTOCOL-NOTES.md):
// the spec's PAUSED ("callee decision or checkpoint") with this reason is
// the Loops seed's checkpoint-to-block.
const ReasonAwaitingInput = "awaiting_input"

// StageAwaitingInput is the stage of the progress event that carries the
// question to the caller.
const StageAwaitingInput = "awaiting_input"

// ErrNotPending: the answer names no pending question of the session (no
// question pending, another checkpoint, or the question timed out). It
// wraps ErrState.
var ErrNotPending = fmt.Errorf("%w: no such pending question", ErrState)

// PendingQuestion is a question a session is blocked at, kept in the
// session's metadata: `hcp-edge sessions` and the dashboard show it.
type PendingQuestion struct {
	CheckpointID string            `json:"checkpoint_id"`
	Name         string            `json:"name"`
	Question     string            `json:"question"`
	Answer       recipe.AnswerSpec `json:"answer"`
	Step         string            `json:"step"`
	AskedAt      time.Time         `json:"asked_at"`
	Deadline     time.Time         `json:"deadline"` // wall: the timeout aborts the session then
}

// Answer is an answer recorded for a session's question: the value (a
// bool, float64 or string), who gave it and when.
type Answer struct {
	CheckpointID string    `json:"checkpoint_id"`
	Value        any       `json:"value"`
	By           Signer    `json:"by"`
	At           time.Time `json:"at"`
}

// QuestionEvent is what Config.OnQuestion hears: a question raised (a
// person must answer) or resolved (Answered, or TimedOut).
type QuestionEvent struct {
	SessionID string
	Question  PendingQuestion
	Answered  bool
	TimedOut  bool
}

// questionData is the data of the progress event that carries a
// question: the spec's stage and message, and the question.
type questionData struct {
	Stage    string         `json:"stage"`
	Message  string         `json:"message"`
	Question questionDetail `json:"question"`
}

type questionDetail struct {
	PendingQuestion
	AnswerWith string `json:"answer_with"`
}

// asker is the executor's Asker of one session.
type asker struct {
	e *Engine
	l *live
}

var _ executor.Asker = asker{}

// Ask blocks the session at q (RUNNING → PAUSED awaiting_input, with the
// question's checkpoint, in one transaction) and waits for Answer, the
// question's timeout (ErrUnanswered) or the end of ctx.
func (a asker) Ask(ctx context.Context, q executor.Question) (any, bool, error) {
	e, l := a.e, a.l
	l.mu.Lock()
	if ans, ok := l.meta.Answers[q.Name]; ok {
		l.mu.Unlock()
		return ans.Value, false, nil
	}
	if l.answered == nil {
		l.answered = make(chan struct{}, 1)
	}
	stored := false
	pq := l.meta.Question
	if pq == nil || pq.Name != q.Name {
		var err error
		if pq, err = e.raiseLocked(l, q); err != nil {
			l.mu.Unlock()
			return nil, false, fmt.Errorf("%w: question: %w", errSinkFailed, err)
		}
		stored = true
	}
	ch, p := l.answered, *pq
	l.mu.Unlock()
	e.noteQuestion(QuestionEvent{SessionID: l.id, Question: p})
	t := time.NewTimer(max(p.Deadline.Sub(e.cfg.Now()), 0))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, stored, context.Cause(ctx)
		case <-ch:
			l.mu.Lock()
			ans, ok := l.meta.Answers[q.Name]
			l.mu.Unlock()
			if ok {
				return ans.Value, stored, nil
			}
		case <-t.C:
			l.mu.Lock()
			ans, ok := l.meta.Answers[q.Name]
			if !ok {
				l.timedOut = p.CheckpointID // no answer is taken now: the session fails
			}
			l.mu.Unlock()
			if ok {
				return ans.Value, stored, nil
			}
			e.noteQuestion(QuestionEvent{SessionID: l.id, Question: p, TimedOut: true})
			return nil, stored, fmt.Errorf("%w: %s (%q, checkpoint %s) not answered within %v: the session aborts to a safe state",
				executor.ErrUnanswered, p.Name, p.Question, p.CheckpointID, q.Timeout)
		}
	}
}

// raiseLocked stores q's checkpoint, the pending question in the metadata,
// RUNNING → PAUSED (awaiting_input) and the progress event carrying the
// question, in one transaction (l.mu held).
func (e *Engine) raiseLocked(l *live, q executor.Question) (*PendingQuestion, error) {
	if l.state != lifecycle.Running {
		return nil, fmt.Errorf("%w: question in %s", ErrState, l.state)
	}
	cp := q.Checkpoint
	payload, err := json.Marshal(ckptPayload{Step: cp.Step, State: cp.State, Journaled: cp.Journaled,
		Journal: cp.Journal, JournalFrom: cp.JournalFrom, Budget: budgetStateLocked(l)})
	if err != nil {
		return nil, err
	}
	nc := store.NewCheckpoint{Description: cp.Description, Resumable: true, Step: cp.StepName, Payload: payload}
	if l.sealed() {
		if nc.Seal = e.cfg.AtRest; nc.Seal == nil {
			return nil, fmt.Errorf("engine: question of a %s session: %w", l.class, atrest.ErrNoKey)
		}
	}
	now := e.cfg.Now()
	pq := &PendingQuestion{Name: q.Name, Question: q.Text, Answer: q.Answer, Step: q.StepName, AskedAt: now, Deadline: now.Add(q.Timeout)}
	m := l.meta
	var sess store.Session
	var ckID string
	err = e.step(l, func(w *store.Tx) error {
		c, evs, err := w.Checkpoint(l.id, nc)
		if err != nil {
			return err
		}
		ckID, pq.CheckpointID = c.ID, c.ID
		m.Question = pq
		mb, err := json.Marshal(m)
		if err != nil {
			return err
		}
		s, tevs, err := w.Transition(l.id, store.Change{To: lifecycle.Paused,
			Reason: ReasonAwaitingInput + ": " + c.ID + " " + q.Name,
			After: []store.Emit{{Type: lifecycle.EventProgress, Data: questionData{Stage: StageAwaitingInput, Message: q.Text,
				Question: questionDetail{PendingQuestion: *pq, AnswerWith: fmt.Sprintf("hcp-edge answer %s %s VALUE", l.id, c.ID)}}}},
			Update: func(s *store.Session) { s.Metadata = mb }})
		if err != nil {
			return err
		}
		sess = s
		out, err := e.eventEnvelopes(l, append(evs, tevs...))
		if err != nil {
			return err
		}
		return e.send(w, l, out...)
	})
	if err != nil {
		return nil, err
	}
	// Field by field: the run reads other fields of meta without l.mu.
	l.meta.Question = pq
	l.sess, l.state = sess, sess.State
	l.ckpts++
	l.lastCkpt = ckID
	e.log.Warn("session awaits an answer", "session", l.id, "checkpoint", ckID, "question", q.Name, "deadline", pq.Deadline)
	return pq, nil
}

// AnswerQuestion answers the question session id is blocked at, at
// checkpoint: value is parsed as the question's answer type; the answer,
// recorded in the session's metadata with who gave it, PAUSED → RUNNING
// and its audit entry commit in one transaction before the run goes on
// (a restart after it resumes with the answer). A value of the wrong type
// or out of range wraps recipe.ErrAnswer; a checkpoint that is not the
// pending question's, ErrNotPending: nothing changes either way.
func (e *Engine) AnswerQuestion(ctx context.Context, id, checkpoint, value string, by Signer) (Answer, error) {
	if by.Display == "" {
		return Answer{}, errors.New("engine: an answer needs the operator's name")
	}
	l := e.get(id)
	if l == nil {
		return Answer{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	pq := l.meta.Question
	switch {
	case pq == nil || l.state != lifecycle.Paused:
		return Answer{}, fmt.Errorf("%w: session %s awaits no answer (%s)", ErrNotPending, id, l.state)
	case pq.CheckpointID != checkpoint:
		return Answer{}, fmt.Errorf("%w: session %s awaits an answer at %s, not %s", ErrNotPending, id, pq.CheckpointID, checkpoint)
	case l.timedOut == pq.CheckpointID:
		return Answer{}, fmt.Errorf("%w: question %s at %s timed out; the session is failing", ErrNotPending, pq.Name, checkpoint)
	}
	v, err := pq.Answer.Parse(pq.Name, value)
	if err != nil {
		return Answer{}, err
	}
	ans := Answer{CheckpointID: pq.CheckpointID, Value: v, By: by, At: e.cfg.Now()}
	m := l.meta
	m.Question = nil
	m.Answers = maps.Clone(m.Answers)
	if m.Answers == nil {
		m.Answers = map[string]Answer{}
	}
	m.Answers[pq.Name] = ans
	mb, err := json.Marshal(m)
	if err != nil {
		return Answer{}, err
	}
	text := pq.Answer.Text(v)
	err = e.step(l, func(w *store.Tx) error {
		det := answerAudit{Decision: "answer", Checkpoint: pq.CheckpointID, Question: pq.Name, Text: pq.Question, Answer: text,
			By: by, Operator: by.Display, Reason: fmt.Sprintf("%s = %s at %s (%q)", pq.Name, text, pq.CheckpointID, pq.Question)}
		if by.Known {
			det.UID, det.User = &by.UID, by.User
		}
		if err := auditJSON(ctx, w, l.id, det); err != nil {
			return err
		}
		s, evs, err := w.Transition(l.id, store.Change{To: lifecycle.Running,
			Reason: fmt.Sprintf("answered %s = %s at %s by %s", pq.Name, text, pq.CheckpointID, by),
			Update: func(s *store.Session) { s.Metadata = mb }})
		if err != nil {
			return err
		}
		out, err := e.eventEnvelopes(l, evs)
		if err != nil {
			return err
		}
		w.OnCommit(func() { l.sess, l.state = s, s.State })
		return e.send(w, l, out...)
	})
	if err != nil {
		return Answer{}, fmt.Errorf("engine: answer %s: %w", id, err)
	}
	l.meta.Question, l.meta.Answers = nil, m.Answers // field by field: the run reads others without l.mu
	if l.answered != nil {
		select {
		case l.answered <- struct{}{}:
		default:
		}
	}
	e.noteQuestion(QuestionEvent{SessionID: l.id, Question: *pq, Answered: true})
	return ans, nil
}

// answerAudit is the audit detail of an answer (kind approval: a human
// decision on a session).
type answerAudit struct {
	Decision   string `json:"decision"` // answer
	Checkpoint string `json:"checkpoint_id"`
	Question   string `json:"question"`
	Text       string `json:"text"`
	Answer     string `json:"answer"`
	By         Signer `json:"by"`
	// Operator, UID, User and Reason are what audit replay shows of it.
	Operator string  `json:"operator"`
	UID      *uint32 `json:"uid,omitempty"`
	User     string  `json:"user,omitempty"`
	Reason   string  `json:"reason"`
}

// PendingQuestionOf returns the question session id is blocked at.
func (e *Engine) PendingQuestionOf(id string) (PendingQuestion, bool) {
	l := e.get(id)
	if l == nil {
		return PendingQuestion{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.meta.Question == nil || l.state != lifecycle.Paused {
		return PendingQuestion{}, false
	}
	return *l.meta.Question, true
}

// PendingQuestionIn reads the pending question from a stored session's
// metadata (what `hcp-edge sessions` lists).
func PendingQuestionIn(s store.Session) (PendingQuestion, bool) {
	if s.State != lifecycle.Paused || len(s.Metadata) == 0 {
		return PendingQuestion{}, false
	}
	var m struct {
		Question *PendingQuestion `json:"question"`
	}
	if json.Unmarshal(s.Metadata, &m) != nil || m.Question == nil {
		return PendingQuestion{}, false
	}
	return *m.Question, true
}

// noteQuestion hands ev to Config.OnQuestion (the alerts' hook), outside
// every lock; a panic in it is not the session's.
func (e *Engine) noteQuestion(ev QuestionEvent) {
	if e.cfg.OnQuestion == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("OnQuestion panicked", "session", ev.SessionID, "panic", r)
		}
	}()
	e.cfg.OnQuestion(ev)
}
