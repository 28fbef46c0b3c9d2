package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

// brokerOutageEnv shortens TestBrokerUnreachable60s's outage for local
// iteration (a Go duration); the default, and `make ci`'s, is 60 s.
const brokerOutageEnv = "HCP_BROKER_OUTAGE"

// progressed: the session moved on from before (another state, stage,
// percent or message, or a later update).
func progressed(before, now sessionView) bool {
	if now.State != before.State || now.UpdatedAt.After(before.UpdatedAt) {
		return true
	}
	if (now.Progress == nil) != (before.Progress == nil) {
		return true
	}
	if now.Progress == nil {
		return false
	}
	p, q := before.Progress, now.Progress
	return p.Stage != q.Stage || p.Message != q.Message || (p.Percent == nil) != (q.Percent == nil) ||
		(p.Percent != nil && *p.Percent != *q.Percent)
}

// TestBrokerUnreachable60s: the daemon reaches the broker through a proxy
// of the test. Mid-session (the seed's MoS2 task, approved, running) the
// proxy cuts every connection and refuses new ones for 60 s
// ($HCP_BROKER_OUTAGE shortens it locally). The session goes on meanwhile
// (sessions --json shows it progress or end); status shows the uplink down
// and the outbox holding a backlog. After the proxy resumes, the uplink
// reconnects (after its backoff, capped at 60 s), the backlog drains, and
// the caller processes every event once, in order, from 1, then
// task_completed.
func TestBrokerUnreachable60s(t *testing.T) {
	if testing.Short() {
		t.Skip("a 60 s broker outage during the MoS2 recipe")
	}
	outage := 60 * time.Second
	if v := os.Getenv(brokerOutageEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration", brokerOutageEnv, v)
		}
		outage = d
		t.Logf("outage shortened to %v by %s (the default is 60 s)", outage, brokerOutageEnv)
	}
	t.Parallel()
	b := newBrokerEnv(t)
	px := startOutageProxy(t)
	b.extra = append(b.extra, "HCP_AMQP_URL="+px.urlOf(b.edgeURL()))
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	stopTap := countTap(b.tap())
	t0 := time.Now()
	run := b.startMoS2(t)

	px.cut()
	cutAt := time.Now()
	before := b.sessionByID(run.sid)
	down := b.waitUplink("down with a backlog", func(u *uplinkStatus) bool { return !u.Connected && u.Backlog > 0 })
	t.Logf("proxy cut; uplink %+v", down)
	// The outage lasts its full length, and until the session has been seen
	// to progress without the broker.
	maxBacklog, moved := down.Backlog, false
	last := before
	for time.Since(cutAt) < outage || !moved {
		if !moved && time.Since(cutAt) > outage+hangGuard {
			t.Fatalf("the session did not progress during the outage: %s then %s", progressOf(before), progressOf(last))
		}
		st := b.statusJSON()
		if st.Uplink == nil || st.Uplink.Connected {
			t.Fatalf("uplink connected while the proxy refuses connections: %+v", st.Uplink)
		}
		maxBacklog = max(maxBacklog, st.Uplink.Backlog)
		last = b.sessionByID(run.sid)
		moved = moved || progressed(before, last)
		time.Sleep(250 * time.Millisecond)
	}
	if maxBacklog == 0 {
		t.Fatal("no backlog in the outbox during the outage")
	}
	t.Logf("outage %v: session %s → %s; outbox backlog up to %d", time.Since(cutAt).Round(time.Millisecond),
		progressOf(before), progressOf(last), maxBacklog)

	px.resume()
	resumed := time.Now()
	up := b.waitUplinkFor("reconnected and drained", brokerLongGuard, func(u *uplinkStatus) bool { return u.Connected && u.Backlog == 0 })
	t.Logf("uplink reconnected and drained %v after the proxy resumed: %+v", time.Since(resumed).Round(time.Millisecond), up)
	all := run.finish(t, brokerLongGuard)
	n := checkStream(t, all, run.sid)
	final := checkCompleted(t, all[len(all)-1], run.ts, b.grown())
	st := run.c.Stats()
	if st.PropertyViolations != 0 || st.Invalid != 0 || st.Skipped != 0 {
		t.Fatalf("caller stats %+v", st)
	}
	b.waitSession(final, func(s sessionView) bool { return s.ID == run.sid && s.State == final })
	distinct, redundant := rawStats(stopTap())
	t.Logf("MoS2 across a %v outage: %d events, sequence contiguous from 1, task_completed after %v; broker delivered %d distinct messages (+%d again); caller %+v",
		outage, n, time.Since(t0).Round(time.Millisecond), distinct, redundant, st)
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
	if logs := b.logs.String(); !strings.Contains(logs, "amqp: connect failed") || !strings.Contains(logs, "uplink closed, outbox empty") {
		t.Fatalf("no failed reconnect attempt or no clean close in the log:\n%s", logs)
	}
}

// TestAgentKilledWithOutboxBacklog: the proxy between the daemon and the
// broker is cut mid-session (the seed's MoS2 task, heating, so past its
// first resumable checkpoint), so the session's messages pile up in the
// outbox; the daemon is SIGKILLed and started again on the same state
// directory while the proxy stays cut (status shows the backlog kept). The
// rig is healthy, nothing latched and the outage a second, far below
// agent.recovery_grace: by the engine's recovery rules (engine.Decide) the
// session is recovered from its checkpoint (a state_changed event with
// reason recovered_from_checkpoint) and, since the restarted daemon
// de-energised the interlock relay, held in PAUSED until the operator arms
// the rig and resumes it (hcp-edge arm, hcp-edge resume); the proxy
// resumes: the outbox is sent,
// the caller processes each message once (whatever the broker delivered
// twice), the sequence is contiguous from 1, and the session completes.
func TestAgentKilledWithOutboxBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("SIGKILL mid MoS2 recipe with a cut broker link")
	}
	t.Parallel()
	b := newBrokerEnv(t)
	px := startOutageProxy(t)
	b.extra = append(b.extra, "HCP_AMQP_URL="+px.urlOf(b.edgeURL()))
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	stopTap := countTap(b.tap())
	t0 := time.Now()
	run := b.startMoS2(t)

	px.cut()
	// Killed past its first checkpoints (heating under way), the session
	// has something to resume from.
	before := b.waitSession("heating", func(s sessionView) bool {
		return s.ID == run.sid && s.Progress != nil && (s.Progress.Stage == "heating" || s.Progress.Stage == "material_growth")
	})
	pile := b.waitUplink("down with a backlog", func(u *uplinkStatus) bool { return !u.Connected && u.Backlog > 0 })
	b.kill()
	killedAt := time.Now()
	t.Logf("SIGKILL with session %s and the outbox holding %d", progressOf(before), pile.Backlog)

	e2 := restartEnv(b.env)
	kept := e2.waitUplink("tried, with the backlog kept", func(u *uplinkStatus) bool {
		return !u.Connected && u.LastError != "" && u.Backlog > 0
	})
	after := e2.waitSession("held in PAUSED (relay de-energised at restart)", func(s sessionView) bool {
		return s.ID == run.sid && s.State != "RUNNING"
	})
	t.Logf("restarted: session %s, outbox %d", progressOf(after), kept.Backlog)
	if after.State != "PAUSED" {
		// The outbox still reaches the caller in order; then report the
		// decision the session's final message carries.
		px.resume()
		all := run.finish(t, brokerLongGuard)
		t.Logf("the caller processed %d events contiguous from 1 and the final %s", checkStream(t, all, run.sid), all[len(all)-1].Type)
		t.Fatalf("recovery did not hold the session for the operator (healthy rig, resumable checkpoint, outage ~%v < recovery_grace, relay off): %s; final %s",
			time.Since(killedAt).Round(100*time.Millisecond), progressOf(after), mustEncode(all[len(all)-1]))
	}
	e2.arm() // the operator arms the rig again (read back), then resumes the session
	e2.mustCLI("resume", run.sid, "--operator", "olga")
	px.resume()
	e2.waitUplinkFor("reconnected", brokerLongGuard, func(u *uplinkStatus) bool { return u.Connected })

	all := run.finish(t, brokerLongGuard)
	n := checkStream(t, all, run.sid)
	recovered, held, resumed := 0, 0, 0
	for _, m := range all {
		if ev, err := m.Event(); err == nil && ev.EventType == wire.EventStateChanged {
			var sc struct {
				From   string `json:"from_state"`
				To     string `json:"to_state"`
				Reason string `json:"reason"`
			}
			if json.Unmarshal(ev.Data, &sc) != nil {
				continue
			}
			switch {
			case sc.Reason == lifecycle.ReasonRecovered && sc.From == "RUNNING" && sc.To == "RUNNING":
				recovered++
			case sc.To == "PAUSED" && strings.Contains(sc.Reason, "held after restart"):
				held++
			case sc.From == "PAUSED" && sc.To == "RUNNING" && strings.Contains(sc.Reason, "olga"):
				resumed++
			}
		}
	}
	if recovered != 1 || held != 1 || resumed != 1 {
		t.Fatalf("state_changed in the caller's stream: %d %s, %d to PAUSED (held), %d resumed by the operator; want 1 each",
			recovered, lifecycle.ReasonRecovered, held, resumed)
	}
	final := checkCompleted(t, all[len(all)-1], run.ts, e2.grown())
	st := run.c.Stats()
	if st.PropertyViolations != 0 || st.Invalid != 0 || st.Skipped != 0 {
		t.Fatalf("caller stats %+v", st)
	}
	e2.waitSession(final, func(s sessionView) bool { return s.ID == run.sid && s.State == final })
	e2.waitUplink("drained", func(u *uplinkStatus) bool { return u.Connected && u.Backlog == 0 })
	distinct, redundant := rawStats(stopTap())
	t.Logf("after SIGKILL and restart: %d events contiguous from 1, task_completed in %v; broker delivered %d distinct messages (+%d again); caller %+v",
		n, time.Since(t0).Round(time.Millisecond), distinct, redundant, st)
	if err := e2.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e2.logs)
	}
	if logs := e2.logs.String(); !strings.Contains(logs, `msg="session recovered"`) || !strings.Contains(logs, "uplink closed, outbox empty") {
		t.Fatalf("no recovery or no clean close in the restarted daemon's log:\n%s", logs)
	}
}
