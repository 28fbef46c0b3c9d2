package executor

import (
	"context"
	"encoding/json"
	"testing"
)

// ckptRec is a Checkpointer keeping what it is given.
type ckptRec struct{ cps []Checkpoint }

func (c *ckptRec) Checkpoint(_ context.Context, cp Checkpoint) (string, error) {
	c.cps = append(c.cps, cp)
	return "ckpt", nil
}

// A journaled recipe's checkpoint holds its plan without the rows and only
// the rows added since the previous checkpoint, however long the history;
// the plan and every journal, reassembled, give back State.
func TestCheckpointJournal(t *testing.T) {
	cvd := shippedExecutor(t, CVDName)
	rec, err := cvd.Plan(Task{Inputs: json.RawMessage(`{"target_material":"MoS2","substrate":"SiO2/Si"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r := rec.(*recipeRun)
	for i := range 1440 { // twelve hours of rows, already checkpointed
		r.rows = append(r.rows, LogRow{Elapsed: float64(30 * i), Stage: "grow"})
	}
	full, _ := r.State()
	resumed, _, err := cvd.Resume(Task{}, full)
	if err != nil {
		t.Fatal(err)
	}
	r = resumed.(*recipeRun)
	c := &ckptRec{}
	env := &Env{Checkpoints: c}
	if _, err := checkpoint(context.Background(), env, r, Checkpoint{Step: 5}); err != nil {
		t.Fatal(err)
	}
	r.rows = append(r.rows, LogRow{Elapsed: 43200, Stage: "grow"}, LogRow{Elapsed: 43230, Stage: "grow"})
	if _, err := checkpoint(context.Background(), env, r, Checkpoint{Step: 5}); err != nil {
		t.Fatal(err)
	}
	var first, second []LogRow
	_ = json.Unmarshal(c.cps[0].Journal, &first)
	_ = json.Unmarshal(c.cps[1].Journal, &second)
	if !c.cps[0].Journaled || c.cps[0].JournalFrom != 1440 || len(first) != 0 ||
		c.cps[1].JournalFrom != 1440 || len(second) != 2 || second[1].Elapsed != 43230 {
		t.Fatalf("journals: from %d (%d rows), from %d (%d rows)", c.cps[0].JournalFrom, len(first), c.cps[1].JournalFrom, len(second))
	}
	if len(c.cps[1].State) > len(full)/20 {
		t.Fatalf("state of %d bytes with the history of %d bytes: the rows are in it", len(c.cps[1].State), len(full))
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(c.cps[1].State, &st); err != nil || string(st[JournalKey]) != "null" {
		t.Fatalf("state without its journal: %s %v", st[JournalKey], err)
	}
}
