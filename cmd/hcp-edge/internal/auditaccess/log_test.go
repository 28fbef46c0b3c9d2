package auditaccess

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"hcp-edge/session/audit"
	"hcp-edge/session/store"
)

// TestLog: outcomes from each entry's own words, the uid filter, and the
// detail of a T3 session (known by its gate decision once its record is
// gone) withheld while a T2 session's is shown.
func TestLog(t *testing.T) {
	ctx := context.Background()
	opts := store.DefaultOpts()
	opts.Timeout = time.Second
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, e := range []audit.Entry{
		{SessionID: "t3", Kind: audit.KindGate, Detail: `{"outcome":"accepted","data_classification":"T3"}`},
		{SessionID: "t3", Kind: audit.KindToolCall, Detail: `{"decision":"executed","action":{"value":700}}`},
		{SessionID: "t2", Kind: audit.KindGate, Detail: `{"outcome":"rejected","data_classification":"T2"}`},
		{Kind: audit.KindControl, Detail: `{"op":"reset","outcome":"refused","uid":1003,"user":"cleo"}`},
		{Kind: audit.KindInterlock, Detail: `{"decision":"refused"}`},
		{Kind: audit.KindControl, Detail: `{"op":"reset","outcome":"done","uid":0,"user":"root"}`},
	} {
		if _, err := st.Audit().Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Log(ctx, st, LogQuery{Outcome: OutcomeRefused}, ViaStateFile, "x")
	if err != nil || len(r.Entries) != 3 || r.HeadSeq != 6 {
		t.Fatalf("refused: %+v %v", r.Entries, err)
	}
	uid := uint32(1003)
	if r, _ = Log(ctx, st, LogQuery{UID: &uid}, ViaStateFile, "x"); len(r.Entries) != 1 || r.Entries[0].User != "cleo" || r.Entries[0].Seq != 4 {
		t.Fatalf("uid 1003: %+v", r.Entries)
	}
	r, _ = Log(ctx, st, LogQuery{Kinds: []string{"gate_decision", "tool_call"}}, ViaStateFile, "x")
	if len(r.Entries) != 3 || r.Entries[0].Withheld == "" || r.Entries[1].Withheld == "" || string(r.Entries[1].Detail) != "null" || r.Entries[2].Withheld != "" {
		t.Fatalf("withheld: %+v", r.Entries)
	}
	for _, q := range []LogQuery{{Kinds: []string{"nope"}}, {Outcome: "maybe"}, {Since: time.Now(), Until: time.Now().Add(-time.Hour)}} {
		if _, err := Log(ctx, st, q, ViaStateFile, "x"); err == nil {
			t.Fatalf("%+v accepted", q)
		}
	}
}
