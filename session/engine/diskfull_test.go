package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// fullQueue is a store Queue whose appends of final messages fail with a
// wrapped ENOSPC while full is set: the disk is full when the session ends.
type fullQueue struct {
	full   atomic.Bool
	failed atomic.Int64
}

func (q *fullQueue) QueueTx(_ *bolt.Tx, msgs []store.Message) error {
	for _, m := range msgs {
		if t := m.Envelope.Type; q.full.Load() && (t == wire.TypeTaskCompleted || t == wire.TypeTaskFailed) {
			q.failed.Add(1)
			return fmt.Errorf("outbox: write state.db: %w", syscall.ENOSPC)
		}
	}
	return nil
}

// TestEndWaitsForSpace: a session whose terminal step fails for want of
// space stays unended, its end tried again and again (status answers
// meanwhile), and ends with its final message once the disk takes writes.
func TestEndWaitsForSpace(t *testing.T) {
	h, _ := fakeHarness(t, 3, 5*time.Millisecond, nil)
	q := &fullQueue{}
	h.st.SetQueue(q)
	q.full.Store(true)
	res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, ""))
	deadline := time.Now().Add(10 * time.Second)
	for q.failed.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the end was tried %d times", q.failed.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	st, err := h.e.State(context.Background(), res.SessionID)
	if err != nil || st.Terminal() {
		t.Fatalf("while the disk is full: %s %v", st, err)
	}
	if _, ok := h.e.Budgets(res.SessionID); time.Since(t0) > time.Second {
		t.Fatalf("state and budgets took %v while the end waits (budgets %t)", time.Since(t0), ok)
	}
	q.full.Store(false)
	h.waitState(t, res.SessionID, lifecycle.Completed)
	fin := ofType(h.out.of(res.SessionID, res.Replies), wire.TypeTaskCompleted)
	if len(fin) != 1 {
		t.Fatalf("%d task_completed, want 1", len(fin))
	}
	t.Logf("the end failed %d times, then committed", q.failed.Load())
}
