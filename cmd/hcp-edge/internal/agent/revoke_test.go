package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/session/token"
)

// TestRevokeClosedAtStart: at start, the closed sessions whose tokens may
// still be valid go back on the (in-memory) revocation list; running ones
// and ones whose tokens have long expired do not.
func TestRevokeClosedAtStart(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mk := func(maxDur time.Duration, path ...lifecycle.State) string {
		t.Helper()
		id := uuid.NewString()
		if _, _, err := st.Create(ctx, store.Session{ID: id, Capability: "rig-status", CapabilityVersion: "1.0.0",
			CallerID: "local", RiskLevel: "R1", DataClass: "T1", MaxDuration: int64(maxDur), Metadata: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		for _, to := range path {
			if _, _, err := st.Transition(ctx, id, store.Change{To: to, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	closed := mk(time.Hour, lifecycle.Running, lifecycle.Completed)
	running := mk(time.Hour, lifecycle.Running)
	expired := mk(time.Millisecond, lifecycle.Running, lifecycle.Failed)
	rev := token.NewRevocations(nil)
	if err := revokeClosed(ctx, st, rev, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if !rev.Revoked(closed) || rev.Revoked(running) || rev.Revoked(expired) || rev.Len() != 1 {
		t.Fatalf("closed %t running %t expired %t (len %d)", rev.Revoked(closed), rev.Revoked(running), rev.Revoked(expired), rev.Len())
	}
}
