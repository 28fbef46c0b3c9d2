package executor

import (
	"context"
	"errors"
	"fmt"

	"hcp-edge/session/recipe"
)

// Errors of a recipe's questions (docs/RECIPES.md, "Questions").
var (
	// ErrUnanswered: a question was not answered within its timeout; the
	// session fails (timeout) and its cleanup drives the rig safe.
	ErrUnanswered = errors.New("executor: question not answered in time")
	// ErrUnexpectedAnswer: the answer is not the one the recipe expects
	// (e.g. the precursor loaded is not the recipe's); the session fails
	// before the phase runs (execution_error).
	ErrUnexpectedAnswer = errors.New("executor: answer is not the one the recipe expects")
	// ErrNoAsker: the run has a question and nobody to ask (Env.Questions
	// is nil): the session fails before the phase runs.
	ErrNoAsker = errors.New("executor: a question and nobody to ask it")
)

// Question is one question a run asks, with the checkpoint it blocks at.
type Question struct {
	recipe.Question
	// Step is the index of the phase it is asked before.
	Step     int
	StepName string
	// Checkpoint is the checkpoint the question is raised at (resuming it
	// runs the phase again, and so the question): the Asker stores it with
	// the question the first time it is asked.
	Checkpoint Checkpoint
}

// Asker is whom a run's questions reach: the engine, which blocks the
// session (PAUSED, awaiting_input) until an operator answers over the
// local control socket or the question's timeout passes.
type Asker interface {
	// Ask returns the typed answer to q (a bool, float64 or string, as
	// q.Answer takes it). The first time q is asked in a session the asker
	// stores q.Checkpoint with it (stored reports that); an answer already
	// recorded for q (a restart after it was given) is returned at once,
	// and a question already raised is waited for again without a new
	// checkpoint. A timeout returns an error wrapping ErrUnanswered.
	Ask(ctx context.Context, q Question) (answer any, stored bool, err error)
}

// ask asks the questions of phase i, in order, before it runs. An answer
// given in advance through a declared input is taken as given. Every
// answer is kept in the state (the result's answers); an answer other than
// the expected one fails the step.
func (r *recipeRun) ask(ctx context.Context, i int, ph *recipe.Phase, env *Env) error {
	for _, q := range ph.Questions {
		if _, done := r.st.Answers[q.Name]; done {
			continue
		}
		if c := q.When; c != nil && c.Answer != "" && r.st.Answers[c.Answer] != c.Equals {
			continue // conditional on an earlier answer that is not this one
		}
		ans := q.Given
		if ans == nil {
			if env.Questions == nil {
				return fmt.Errorf("%w: question %s before step %s", ErrNoAsker, q.Name, ph.Name)
			}
			st, rows, n, err := r.journalState(r.logged)
			if err != nil {
				return err
			}
			cp := Checkpoint{Step: i, StepName: ph.Name, Resumable: true, State: st,
				Journaled: true, Journal: rows, JournalFrom: r.logged,
				Description: fmt.Sprintf("question %s before step %s: %s (answer %s)", q.Name, ph.Name, q.Text, q.Answer)}
			a, stored, err := env.Questions.Ask(ctx, Question{Question: q, Step: i, StepName: ph.Name, Checkpoint: cp})
			if stored {
				r.logged = n
			}
			if err != nil {
				return err
			}
			if ans, err = q.Answer.Check(q.Name, a); err != nil {
				return fmt.Errorf("%w: %w", errSink, err)
			}
		}
		if r.st.Answers == nil {
			r.st.Answers = map[string]any{}
		}
		r.st.Answers[q.Name] = ans
		if q.Expect != nil && ans != q.Expect {
			return fmt.Errorf("%w: %s answered %s to %q; the recipe goes on only with %s: stopped before %s",
				ErrUnexpectedAnswer, q.Name, q.Answer.Text(ans), q.Text, q.Answer.Text(q.Expect), ph.Name)
		}
	}
	return nil
}
