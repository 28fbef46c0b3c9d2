package auditaccess

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/audit"
	"hcp-edge/session/store"
)

// TestRecordAccess: a data_access entry for T2 and above only, with the
// operator and the object; none for T1 or an unknown session; replay of a
// T2 session is itself recorded; the chain stays intact.
func TestRecordAccess(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), rigconfig.StateFile)
	st, err := store.Open(path, store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, class := range map[string]string{"s-t1": "T1", "s-t2": "T2", "s-t3": "T3", "s-none": ""} {
		if _, _, err := st.Create(ctx, store.Session{ID: id, DataClass: class}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, sid string
		want      bool
	}{
		{"T1 not recorded", "s-t1", false},
		{"unclassified not recorded", "s-none", false},
		{"unknown session not recorded", "s-unknown", false},
		{"T2 recorded", "s-t2", true},
		{"T3 recorded", "s-t3", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n0, _, _ := st.Audit().Head()
			if err := Record(ctx, st, tt.sid, "artifact_get", "hcp://"+tt.sid+"/artifacts/x.json", Accessor{Operator: "ada", Via: "test"}); err != nil {
				t.Fatal(err)
			}
			n1, _, _ := st.Audit().Head()
			if got := n1 > n0; got != tt.want {
				t.Fatalf("recorded %v, want %v", got, tt.want)
			}
			if !tt.want {
				return
			}
			es, err := st.Audit().Replay(ctx, tt.sid)
			if err != nil {
				t.Fatal(err)
			}
			last := es[len(es)-1]
			var d DataAccess
			if err := json.Unmarshal([]byte(last.Detail), &d); err != nil || last.Kind != audit.KindDataAccess ||
				d.Operator != "ada" || d.Object != "hcp://"+tt.sid+"/artifacts/x.json" || d.Access != "artifact_get" {
				t.Fatalf("entry %+v (%v)", last, err)
			}
		})
	}
	r, err := Replay(ctx, st, "s-t2", Accessor{Operator: "bob", Via: "test"}, ViaStateFile, path)
	if err != nil {
		t.Fatal(err)
	}
	last := r.Entries[len(r.Entries)-1]
	if r.DataClass != "T2" || last.Kind != string(audit.KindDataAccess) || last.Operator != "bob" || last.Decision != "audit_replay" {
		t.Fatalf("replay: %+v", r)
	}
	if r.Entries[0].Kind != string(audit.KindTransition) || r.Entries[0].Decision != "∅ → PENDING" {
		t.Fatalf("first entry %+v", r.Entries[0])
	}
	v, err := Verify(ctx, st.Audit(), ViaStateFile, path)
	if err != nil || !v.Intact || v.Checked != v.HeadSeq || v.Checked == 0 {
		t.Fatalf("verify: %+v %v", v, err)
	}
}

// TestDescribe: what replay pulls out of each kind of detail.
func TestDescribe(t *testing.T) {
	tests := []struct {
		name             string
		kind             audit.Kind
		detail           string
		decision, opName string
	}{
		{"approval transition", audit.KindTransition, `{"from":"PENDING","to":"RUNNING","trigger":"approved","reason":"approved by operator olga"}`, "PENDING → RUNNING", "olga"},
		{"pause", audit.KindTransition, `{"from":"RUNNING","to":"PAUSED","reason":"paused by operator tess"}`, "RUNNING → PAUSED", "tess"},
		{"gate", audit.KindGate, `{"outcome":"pending_approval","risk_level":"R3","capability":"c","version":"1.0.0"}`, "pending_approval R3", ""},
		{"interlock", audit.KindInterlock, `{"decision":"reset","operator":"alice"}`, "reset", "alice"},
		{"data access", audit.KindDataAccess, `{"operator":"ada","access":"artifact_get","object":"hcp://s/artifacts/a"}`, "artifact_get", "ada"},
		{"not JSON", audit.KindToolCall, `plain text`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Describe(audit.Entry{Seq: 1, Kind: tt.kind, Detail: tt.detail})
			if r.Decision != tt.decision || r.Operator != tt.opName || !json.Valid(r.Detail) {
				t.Fatalf("%+v", r)
			}
		})
	}
}
