package executor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"hcp-edge/session/recipe"
)

// fakeAsker answers every question with its answers, by name, and
// records what it was asked.
type fakeAsker struct {
	answers map[string]any
	err     error
	asked   []Question
}

func (a *fakeAsker) Ask(_ context.Context, q Question) (any, bool, error) {
	a.asked = append(a.asked, q)
	if a.err != nil {
		return nil, true, a.err
	}
	return a.answers[q.Name], true, nil
}

// askingRun is the shipped MoS2 recipe's run of inputs and the index of
// its pump-down, where it asks.
func askingRun(t *testing.T, inputs string) (*recipeRun, int) {
	t.Helper()
	rec, err := shippedExecutor(t, CVDName).Plan(Task{SessionID: "s", Inputs: json.RawMessage(inputs)})
	if err != nil {
		t.Fatal(err)
	}
	r := rec.(*recipeRun)
	for i, ph := range r.st.Plan.Phases {
		if ph.Kind == recipe.KindPumpDown {
			return r, i
		}
	}
	t.Fatal("no pump_down")
	return nil, 0
}

const askInputs = `{"target_material":"MoS2","substrate":"SiO2/Si","technician_checks":"ask"}`

func TestRecipeAsks(t *testing.T) {
	ctx := context.Background()
	t.Run("answered, kept for the result", func(t *testing.T) {
		r, i := askingRun(t, askInputs)
		a := &fakeAsker{answers: map[string]any{"precursor_loaded": "MoO3", "substrate_loaded": true}}
		if err := r.ask(ctx, i, &r.st.Plan.Phases[i], &Env{Questions: a}); err != nil {
			t.Fatal(err)
		}
		if len(a.asked) != 2 || a.asked[0].Checkpoint.Step != i || !a.asked[0].Checkpoint.Resumable || a.asked[0].StepName != "pump_down" {
			t.Fatalf("asked %+v", a.asked)
		}
		if r.st.Answers["precursor_loaded"] != "MoO3" || r.st.Answers["substrate_loaded"] != true {
			t.Fatalf("answers %v", r.st.Answers)
		}
		// Asked again (a resumed step): what is answered is not asked.
		a.asked = nil
		if err := r.ask(ctx, i, &r.st.Plan.Phases[i], &Env{Questions: a}); err != nil || len(a.asked) != 0 {
			t.Fatalf("asked again: %d, %v", len(a.asked), err)
		}
	})
	t.Run("the wrong precursor stops it", func(t *testing.T) {
		r, i := askingRun(t, askInputs)
		a := &fakeAsker{answers: map[string]any{"precursor_loaded": "WO3"}}
		err := r.ask(ctx, i, &r.st.Plan.Phases[i], &Env{Questions: a})
		if !errors.Is(err, ErrUnexpectedAnswer) || Classify(ctx, err) != CodeExecution || len(a.asked) != 1 {
			t.Fatalf("err %v (%s), asked %d", err, Classify(ctx, err), len(a.asked))
		}
	})
	t.Run("answered in advance", func(t *testing.T) {
		r, i := askingRun(t, `{"target_material":"MoS2","substrate":"SiO2/Si","technician_checks":"ask","precursor_loaded":"MoO3"}`)
		a := &fakeAsker{answers: map[string]any{"substrate_loaded": true}}
		if err := r.ask(ctx, i, &r.st.Plan.Phases[i], &Env{Questions: a}); err != nil || len(a.asked) != 1 || a.asked[0].Name != "substrate_loaded" {
			t.Fatalf("asked %+v, %v", a.asked, err)
		}
	})
	t.Run("unanswered is a timeout", func(t *testing.T) {
		r, i := askingRun(t, askInputs)
		err := r.ask(ctx, i, &r.st.Plan.Phases[i], &Env{Questions: &fakeAsker{err: ErrUnanswered}})
		if Classify(ctx, err) != CodeTimeout {
			t.Fatalf("err %v: %s", err, Classify(ctx, err))
		}
	})
	t.Run("nobody to ask", func(t *testing.T) {
		r, i := askingRun(t, askInputs)
		if err := r.ask(ctx, i, &r.st.Plan.Phases[i], &Env{}); !errors.Is(err, ErrNoAsker) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("conditional on an earlier answer", func(t *testing.T) {
		r, i := askingRun(t, askInputs)
		ph := &r.st.Plan.Phases[i]
		lo, hi := 0.0, 50.0
		ph.Questions = append(ph.Questions, recipe.Question{Name: "wo3_mass_mg", Text: "WO3 mass?", Timeout: 1,
			Answer: recipe.AnswerSpec{Type: recipe.AnswerNumber, Unit: "mg", Min: &lo, Max: &hi},
			When:   &recipe.Condition{Answer: "precursor_loaded", Equals: "WO3"}})
		a := &fakeAsker{answers: map[string]any{"precursor_loaded": "MoO3", "substrate_loaded": true, "wo3_mass_mg": 5.0}}
		if err := r.ask(ctx, i, ph, &Env{Questions: a}); err != nil || len(a.asked) != 2 {
			t.Fatalf("asked %d, %v; want the conditional question skipped", len(a.asked), err)
		}
	})
	t.Run("the default task asks nothing", func(t *testing.T) {
		r, i := askingRun(t, `{"target_material":"MoS2","substrate":"SiO2/Si"}`)
		if err := r.ask(ctx, i, &r.st.Plan.Phases[i], &Env{}); err != nil || r.st.Answers != nil {
			t.Fatalf("err %v, answers %v", err, r.st.Answers)
		}
	})
}
