package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"hcp-edge/session/gate"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// TestOpenSessionsQuota (issue 24): the engine counts the caller's open
// sessions in the transaction that decides the next submit, so sessions
// created earlier in the same transaction (the inbox's group commit) count;
// past the quota the submit is answered resource_unavailable and no
// session is created.
func TestOpenSessionsQuota(t *testing.T) {
	h, _ := fakeHarness(t, 50, 20*time.Millisecond, func(c *Config) {
		cfg := gateConfig()
		cfg.Quotas = gate.Quotas{SubmitsPerMinute: gate.Unlimited, OpenSessions: gate.Limit(2)}
		g, err := gate.New(cfg, c.Registry, c.Store.Audit(), gate.Opts{Clock: attended})
		if err != nil {
			t.Fatal(err)
		}
		c.Gate = g
	})
	ctx := context.Background()
	var results []Result
	err := h.st.Update(ctx, func(w *store.Tx) error {
		for range 3 {
			env := submitEnv(t, "rig-status", `{}`, "")
			res, err := h.e.SubmitTx(ctx, w, SubmitRequest{MessageID: env.MessageID.String(), BrokerUser: "alpha", Envelope: env})
			if err != nil {
				return err
			}
			results = append(results, res)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range results[:2] {
		if res.SessionID == "" {
			t.Fatalf("submit %d: %+v", i, res.Replies)
		}
	}
	if res := results[2]; res.SessionID != "" || len(res.Replies) != 1 || res.Replies[0].Type != wire.TypeTaskRejected {
		t.Fatalf("third submit: %+v", res)
	}
	rej, _ := results[2].Replies[0].TaskRejected()
	if rej.ReasonCode != "resource_unavailable" || !strings.HasPrefix(rej.ReasonMessage, "open_sessions 2 reached for harness-alpha-001 (2 open)") {
		t.Errorf("rejection %+v", rej)
	}
	ss, err := h.st.Sessions(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Errorf("%d sessions, want 2", len(ss))
	}
	// Another caller is not counted against alpha's quota.
	env := submitEnv(t, "rig-status", `{}`, "")
	res := h.submit(t, "pipe", withCaller(t, env, "pipeline-7"))
	if res.SessionID == "" {
		t.Errorf("pipeline-7: %+v", res.Replies)
	}
}

func withCaller(t *testing.T, env *wire.Envelope, caller string) *wire.Envelope {
	t.Helper()
	s, err := env.TaskSubmit()
	if err != nil {
		t.Fatal(err)
	}
	s.CallerID = caller
	out, err := wire.NewEnvelope(nil, s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return out
}
