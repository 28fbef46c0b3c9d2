package main

// Ownership hand-off (Loops contract 4) through the real broker: alpha's
// MoS2 session handed to beta, refused hand-offs, and a technician's
// takeover and handback, with transport/caller clients logged in as the
// bench's harness-alpha-001 and harness-beta-002.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// shippedBetaACL is harness-beta-002's entry in configs/sim.yaml.
const shippedBetaACL = `    harness-beta-002:
      capabilities: [rig-status]
      max_risk_level: R1
      max_data_classification: T1
`

// grantBeta gives harness-beta-002 what the shipped harness-alpha-001 may
// (a lab that hands synthesis sessions between two harnesses); the rest of
// the configuration stays the shipped one.
func (b *brokerEnv) grantBeta(t *testing.T) {
	t.Helper()
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), shippedBetaACL) {
		t.Fatal("fixture: sim.yaml's gate section has no harness-beta-002 entry as expected")
	}
	s := strings.Replace(string(cfg), shippedBetaACL, `    harness-beta-002:
      capabilities: [cvd-material-synthesis, rig-status, leak-check]
      max_risk_level: R3
      max_data_classification: T2
`, 1)
	if err := os.WriteFile(b.cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// betaCaller is a transport/caller client logged in as harness-beta-002
// (its login url); its event queue is deleted at cleanup.
func betaCaller(t *testing.T, url string) *caller.Client {
	t.Helper()
	conn := amqptest.Dial(t, url)
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(wire.EventQueuePrefix+amqptest.BetaID, false, false, false)
			_ = ch.Close()
		}
	})
	db, err := bolt.Open(filepath.Join(t.TempDir(), "beta.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := caller.New(db, caller.Opts{URL: url, CallerID: amqptest.BetaID, CalleeID: amqptest.CalleeID,
		CalleeUser: amqptest.EdgeUser, ResubmitInterval: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.Supervisor().WaitConnected(ctx); err != nil {
		t.Fatalf("beta not connected: %v", err)
	}
	return c
}

// until reads task's messages until ok accepts one (hang guard) and
// returns all it read, that one last.
func until(t *testing.T, task *caller.Task, what string, ok func(*wire.Envelope) bool) []*wire.Envelope {
	t.Helper()
	var out []*wire.Envelope
	timeout := time.After(hangGuard)
	for {
		select {
		case m, open := <-task.Messages():
			if !open {
				t.Fatalf("stream closed before %s; read %d messages", what, len(out))
			}
			out = append(out, m)
			if ok(m) {
				return out
			}
		case <-timeout:
			t.Fatalf("no %s after %v; read %d messages", what, hangGuard, len(out))
		}
	}
}

// ownershipTo accepts the ownership_changed event that gives the session to
// caller.
func ownershipTo(caller string) func(*wire.Envelope) bool {
	return func(m *wire.Envelope) bool {
		ev, err := m.Event()
		if err != nil || ev.EventType != wire.EventOwnershipChanged {
			return false
		}
		var oc wire.OwnershipChanged
		return json.Unmarshal(ev.Data, &oc) == nil && oc.To == caller
	}
}

// ownerOf is hcp-edge owner ID --json.
func (b *brokerEnv) ownerOf(t *testing.T, sid string) ownershipView {
	t.Helper()
	r := b.mustCLI("owner", sid, "--json")
	var v ownershipView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("owner --json: %v\n%s", err, r.stdout)
	}
	return v
}

// TestBrokerHandoff: alpha's running MoS2 session is handed to beta with
// session_handoff. Both get ownership_changed with the same sequence and
// session id; beta's stream starts there and goes on without a gap; alpha's
// abort is refused (task_rejected forbidden, audited) and the session runs
// on; beta's abort ends it (session_closed ABORTED on beta's stream only).
// beta is granted what the shipped alpha may: the shipped beta may not own
// a synthesis session (TestBrokerHandoffRefused).
func TestBrokerHandoff(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a MoS2 session through the broker")
	}
	b := newBrokerEnv(t)
	b.deleteQueuesFresh()
	b.grantBeta(t)
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	run := b.startMoS2(t)
	sid := uuid.MustParse(run.sid)
	beta := betaCaller(t, b.betaURL())
	btask := beta.Watch(sid)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	t0 := time.Now()
	oc, err := run.c.Handoff(ctx, sid, amqptest.BetaID, "night shift")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hand-off answered (ownership_changed on alpha's queue) in %v", time.Since(t0).Round(time.Millisecond))
	if oc.From != amqptest.AlphaID || oc.To != amqptest.BetaID || oc.By != amqptest.AlphaID || oc.Via != "handoff" || oc.Index != 1 {
		t.Fatalf("ownership_changed %+v", oc)
	}
	// alpha's stream: up to and with the hand-off.
	alpha := until(t, run.task, "ownership_changed to beta on alpha's stream", ownershipTo(amqptest.BetaID))
	last, _ := alpha[len(alpha)-1].Event()
	// beta's stream starts at the same event.
	got := until(t, btask, "ownership_changed on beta's stream", ownershipTo(amqptest.BetaID))
	first, _ := got[0].Event()
	if len(got) != 1 || first.Sequence != last.Sequence || got[0].MessageID != alpha[len(alpha)-1].MessageID {
		t.Fatalf("beta's first message %s #%d, alpha's hand-off #%d", got[0].Type, first.Sequence, last.Sequence)
	}
	if v := b.ownerOf(t, run.sid); v.Owner != amqptest.BetaID || len(v.Chain) != 1 || v.Chain[0].RequestID == "" {
		t.Fatalf("owner %+v", v)
	}

	// alpha may no longer abort; the session runs on.
	t0 = time.Now()
	err = run.c.Abort(ctx, sid, "alpha changes its mind", hangGuard)
	var ref *caller.RefusedError
	if !errors.As(err, &ref) || ref.Code != wire.ReasonForbidden || !strings.Contains(ref.Message, amqptest.BetaID) {
		t.Fatalf("alpha's abort: %v", err)
	}
	t.Logf("alpha's abort refused in %v: %s", time.Since(t0).Round(time.Millisecond), ref.Message)
	more := until(t, btask, "an event after the refusal", func(m *wire.Envelope) bool {
		ev, err := m.Event()
		return err == nil && ev.EventType == wire.EventProgress
	})
	b.waitSession("running, owned by beta", func(s sessionView) bool {
		return s.ID == run.sid && s.State == "RUNNING" && s.Caller == amqptest.BetaID
	})

	// beta's abort is the owner's.
	if err := beta.Abort(ctx, sid, "beta stops it", 0); err != nil {
		t.Fatal(err)
	}
	rest := collect(t, btask, brokerLongGuard)
	fin, _ := rest[len(rest)-1].Event()
	if fin == nil || fin.EventType != wire.EventSessionClosed || !strings.Contains(string(fin.Data), "ABORTED") {
		t.Fatalf("beta's stream ended with %s", rest[len(rest)-1].Type)
	}
	stream := append(append(got, more...), rest...)
	for i, m := range stream {
		ev, err := m.Event()
		if err != nil {
			t.Fatalf("beta got %s", m.Type)
		}
		if ev.Sequence != first.Sequence+uint64(i) || m.SessionID.String() != run.sid {
			t.Fatalf("beta's message %d: #%d of %s", i, ev.Sequence, m.SessionID)
		}
	}
	// Nothing after the hand-off reached alpha.
	select {
	case m, ok := <-run.task.Messages():
		if ok {
			t.Fatalf("alpha got %s after the hand-off", m.Type)
		}
	case <-time.After(time.Second):
	}
	t.Logf("handed off at #%d; beta processed %d events to ABORTED", first.Sequence, len(stream))
	replay := b.mustCLI("audit", "replay", run.sid).stdout
	if !strings.Contains(replay, "ownership_changed") || !strings.Contains(replay, "control_refused") {
		t.Fatalf("audit replay shows no hand-off and refusal:\n%s", replay)
	}
}

// TestBrokerHandoffRefused: with the shipped configuration, alpha's hand-off
// of its MoS2 session to beta (who may only read the rig's status) and of an
// unknown session are refused with task_rejected and change nothing. Then a
// technician takes the session over (hcp-edge takeover): alpha is told,
// its abort is refused, its hand-off too; handback returns the session and
// its events to alpha, whose abort then ends it.
func TestBrokerHandoffRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a MoS2 session through the broker")
	}
	b := newBrokerEnv(t)
	b.deleteQueuesFresh()
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	run := b.startMoS2(t)
	sid := uuid.MustParse(run.sid)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	var ref *caller.RefusedError
	t0 := time.Now()
	_, err := run.c.Handoff(ctx, sid, amqptest.BetaID, "")
	if !errors.As(err, &ref) || ref.Code != wire.ReasonForbidden || !strings.Contains(ref.Message, "may not use cvd-material-synthesis") {
		t.Fatalf("hand-off to the shipped beta: %v", err)
	}
	t.Logf("hand-off to beta refused in %v: %s", time.Since(t0).Round(time.Millisecond), ref.Message)
	if _, err := run.c.Handoff(ctx, uuid.New(), amqptest.BetaID, ""); !errors.As(err, &ref) || ref.Code != wire.ReasonNotFound {
		t.Fatalf("hand-off of an unknown session: %v", err)
	}
	if v := b.ownerOf(t, run.sid); v.Owner != amqptest.AlphaID || len(v.Chain) != 0 {
		t.Fatalf("owner after refusals %+v", v)
	}

	// A technician takes it over; alpha is told and loses control.
	b.mustCLI("takeover", run.sid, "--operator", "olga", "--reason", "checking the MFC by hand")
	until(t, run.task, "ownership_changed to the technician", ownershipTo("local"))
	if err := run.c.Abort(ctx, sid, "alpha wants it stopped", hangGuard); !errors.As(err, &ref) || ref.Code != wire.ReasonForbidden {
		t.Fatalf("alpha's abort while taken over: %v", err)
	}
	if _, err := run.c.Handoff(ctx, sid, amqptest.AlphaID, ""); !errors.As(err, &ref) || ref.Code != wire.ReasonForbidden {
		t.Fatalf("alpha's hand-off while taken over: %v", err)
	}
	if r := b.cli("takeover", run.sid, "--operator", "bob"); r.code != exitFailure {
		t.Fatalf("second takeover: exit %d %s", r.code, r.stderr)
	}
	b.waitSession("running, owned by the technician", func(s sessionView) bool {
		return s.ID == run.sid && s.State == "RUNNING" && s.Caller == "local"
	})

	// Handback: alpha's stream resumes at the handback event, and its abort works.
	b.mustCLI("handback", run.sid, "--operator", "olga")
	until(t, run.task, "ownership_changed back to alpha", ownershipTo(amqptest.AlphaID))
	if err := run.c.Abort(ctx, sid, "alpha stops it", 0); err != nil {
		t.Fatal(err)
	}
	rest := collect(t, run.task, brokerLongGuard)
	fin, _ := rest[len(rest)-1].Event()
	if fin == nil || fin.EventType != wire.EventSessionClosed || !strings.Contains(string(fin.Data), "ABORTED") {
		t.Fatalf("alpha's stream ended with %s", rest[len(rest)-1].Type)
	}
	if v := b.ownerOf(t, run.sid); v.Owner != amqptest.AlphaID || len(v.Chain) != 2 || v.Chain[0].Via != "takeover" || v.Chain[1].Via != "handback" {
		t.Fatalf("owner at the end %+v", v)
	}
}
