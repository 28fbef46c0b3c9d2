package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"hcp-edge/session/executor"
)

// Journaled checkpoints store the rows added since the previous one;
// recovery reassembles the whole journal under executor.JournalKey, and
// refuses a chain with a hole.
func TestReassembleJournal(t *testing.T) {
	h, _ := fakeHarness(t, 2, time.Hour, nil) // the run waits in its first step
	ctx := context.Background()
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	l := h.e.get(res.SessionID)
	s := sink{h.e, l}
	base := []byte(`{"version":1,"next":3,"rows":null}`)
	for _, cp := range []executor.Checkpoint{
		{Step: 1, State: []byte(`{"version":1,"next":1,"rows":null}`), Journaled: true, Journal: json.RawMessage(`[1,2]`), JournalFrom: 0},
		{Step: 2, State: []byte(`{"version":1,"next":2,"rows":null}`), Journaled: true, Journal: json.RawMessage(`[]`), JournalFrom: 2},
		{Step: 3, State: base, Journaled: true, Journal: json.RawMessage(`[3]`), JournalFrom: 2},
	} {
		cp.Resumable = true
		if _, err := s.Checkpoint(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	last := ckptPayload{Step: 3, State: base, Journaled: true, Journal: json.RawMessage(`[3]`), JournalFrom: 2}
	st, err := h.e.reassemble(ctx, l, last)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Next int   `json:"next"`
		Rows []int `json:"rows"`
	}
	if err := json.Unmarshal(st, &got); err != nil || got.Next != 3 || len(got.Rows) != 3 || got.Rows[2] != 3 {
		t.Fatalf("reassembled %s (%v)", st, err)
	}
	// A row lost between two checkpoints is not guessed over.
	if _, err := s.Checkpoint(ctx, executor.Checkpoint{Step: 3, State: base, Resumable: true, Journaled: true,
		Journal: json.RawMessage(`[5]`), JournalFrom: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.reassemble(ctx, l, last); err == nil {
		t.Fatal("a journal with a hole was reassembled")
	}
}
