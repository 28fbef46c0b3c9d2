package uplink

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/audit"
	"hcp-edge/session/store"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/wire"
)

// TestAuditRefusal: the inbox's refusals of undecodable extension requests
// are audited as the uplink's own refusals are (discovery; data_access of
// a known session, else of none), with the login and its caller and the
// reason naming the field; refusals of other commands are not audited
// here.
func TestAuditRefusal(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, rigconfig.StateFile), store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	known := uuid.NewString()
	if _, _, err := st.Create(context.Background(), store.Session{ID: known, Capability: "leak-check", CallerID: "harness-alpha-001",
		DataClass: "T2"}); err != nil {
		t.Fatal(err)
	}
	u := &Uplink{st: st, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	refuse := func(r tamqp.Refusal) []audit.Entry {
		t.Helper()
		before, _, err := st.Audit().Head()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.DB().Update(func(tx *bolt.Tx) error { return u.auditRefusal(tx, r) }); err != nil {
			t.Fatal(err)
		}
		tail, err := st.Audit().Tail(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []audit.Entry
		for _, e := range tail {
			if e.Seq > before {
				out = append(out, e)
			}
		}
		return out
	}
	detail := func(e audit.Entry) map[string]string {
		var d map[string]string
		if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	const reason = "hcp wire: payload.uri: path traversal: …"
	mid := uuid.NewString()

	es := refuse(tamqp.Refusal{MessageID: mid, Type: wire.TypeArtifactRequest, SessionID: known, UserID: "harness-alpha-001",
		CallerID: "harness-alpha-001", Reason: wire.ReasonInvalidInput, Detail: reason})
	if len(es) != 1 || es[0].Kind != audit.KindDataAccess || es[0].SessionID != known {
		t.Fatalf("artifact_request of a known session: %+v", es)
	}
	if d := detail(es[0]); d["refused"] != wire.ReasonInvalidInput || d["reason"] != reason || d["caller"] != "harness-alpha-001" ||
		d["broker_user"] != "harness-alpha-001" || d["message_id"] != mid || d["data_classification"] != "T2" || d["access"] != "artifact_fetch" {
		t.Fatalf("detail %s", es[0].Detail)
	}

	es = refuse(tamqp.Refusal{MessageID: mid, Type: wire.TypeArtifactRequest, SessionID: uuid.NewString(), UserID: "stranger",
		Reason: wire.ReasonInvalidInput, Detail: reason})
	if len(es) != 1 || es[0].Kind != audit.KindDataAccess || es[0].SessionID != "" || detail(es[0])["broker_user"] != "stranger" ||
		detail(es[0])["caller"] != "" {
		t.Fatalf("artifact_request of an unknown session, login mapped to no caller: %+v", es)
	}

	es = refuse(tamqp.Refusal{MessageID: mid, Type: wire.TypeCapabilitiesRequest, UserID: "harness-beta-002", CallerID: "harness-beta-002",
		Reason: wire.ReasonInvalidInput, Detail: "hcp wire: payload.capability: …"})
	if len(es) != 1 || es[0].Kind != audit.KindDiscovery || es[0].SessionID != "" {
		t.Fatalf("capabilities_request: %+v", es)
	}
	if d := detail(es[0]); d["caller"] != "harness-beta-002" || d["user"] != "harness-beta-002" || d["request"] != string(wire.TypeCapabilitiesRequest) ||
		d["message_id"] != mid || d["refused"] != wire.ReasonInvalidInput {
		t.Fatalf("detail %s", es[0].Detail)
	}

	for _, typ := range []wire.Type{wire.TypeTaskSubmit, wire.TypeAbort, wire.TypeSessionHandoff, "task_explode"} {
		if es := refuse(tamqp.Refusal{MessageID: mid, Type: typ, UserID: "harness-alpha-001", Reason: wire.ReasonInvalidInput, Detail: "x"}); len(es) != 0 {
			t.Fatalf("%s refusal audited here: %+v", typ, es)
		}
	}
	if n, err := st.Audit().Verify(context.Background()); err != nil {
		t.Fatalf("audit chain after %d entries: %v", n, err)
	}
}
