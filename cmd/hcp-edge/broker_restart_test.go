package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"hcp-edge/transport/amqp/amqptest"
)

// brokerDownFor is how long the broker application stays stopped at least.
const brokerDownFor = 3 * time.Second

// TestBrokerRestartMidSession: the seed's MoS2 task runs through the broker
// (a transport/caller client as harness-alpha-001, approved by an
// operator). Mid-session the broker application stops for a few seconds
// (rabbitmqctl stop_app, then start_app) while the session goes on and its
// messages wait in the daemon's outbox. The daemon's status shows the
// uplink down with a backlog, then connected again with the lost
// connection as its last error; the caller processes every event once, in
// order, numbered from 1, and the final task_completed.
func TestBrokerRestartMidSession(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the broker; the MoS2 recipe against the simulator (~30 s)")
	}
	if err := amqptest.CanRestart(); err != nil {
		amqptest.MissingPeer(t, "rabbitmqctl for the local broker: "+err.Error(), "run as root or the rabbitmq user")
	}
	amqptest.HoldExclusive(t) // no other package's broker test runs while the broker is down
	b := newBrokerEnv(t)
	b.deleteQueuesFresh()
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	t0 := time.Now()
	run := b.startMoS2(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	started := false
	t.Cleanup(func() { // never leave the shared broker stopped
		if !started {
			sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
			defer scancel()
			if err := amqptest.StartApp(sctx, amqptest.URL()); err != nil {
				t.Errorf("broker not started again: %v", err)
			}
		}
	})
	tStop := time.Now()
	if err := amqptest.StopApp(ctx); err != nil {
		started = true // nothing was stopped
		t.Fatal(err)
	}
	before := b.sessionByID(run.sid)
	down := b.waitUplink("down with a backlog", func(u *uplinkStatus) bool { return !u.Connected && u.Backlog > 0 })
	for time.Since(tStop) < brokerDownFor {
		time.Sleep(100 * time.Millisecond)
	}
	during := b.sessionByID(run.sid)
	if err := amqptest.StartApp(ctx, amqptest.URL()); err != nil {
		t.Fatal(err)
	}
	started = true
	t.Logf("broker down %v; the uplink reported %+v; session %s → %s",
		time.Since(tStop).Round(time.Millisecond), down, progressOf(before), progressOf(during))
	up := b.waitUplinkFor("reconnected", brokerLongGuard, func(u *uplinkStatus) bool { return u.Connected })
	if up.LastError == "" {
		t.Fatalf("reconnected uplink without the lost connection as its last error: %+v", up)
	}
	t.Logf("uplink reconnected %v after stop_app: %+v", time.Since(tStop).Round(time.Millisecond), up)

	all := run.finish(t, brokerLongGuard)
	n := checkStream(t, all, run.sid)
	checkCompleted(t, all[len(all)-1], run.ts, b.grown())
	st := run.c.Stats()
	if st.PropertyViolations != 0 || st.Invalid != 0 || st.Skipped != 0 {
		t.Fatalf("caller stats %+v", st)
	}
	if r := run.c.Supervisor().State().Reconnects; r == 0 {
		t.Fatal("the caller never reconnected: the restart missed the stream")
	}
	t.Logf("MoS2 across a broker restart: %d events, sequence contiguous from 1, task_completed after %v; caller %+v",
		n, time.Since(t0).Round(time.Millisecond), st)
	b.waitSession("completed", func(s sessionView) bool { return s.ID == run.sid && s.State == "COMPLETED" })
	b.waitUplink("drained", func(u *uplinkStatus) bool { return u.Connected && u.Backlog == 0 })
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
	logs := b.logs.String()
	if !strings.Contains(logs, "amqp: connection lost") || !strings.Contains(logs, "uplink closed, outbox empty") {
		t.Fatalf("no lost connection or no clean close in the log:\n%s", logs)
	}
}

// progressOf is a session's state and progress for the log.
func progressOf(s sessionView) string {
	if s.Progress == nil {
		return s.State
	}
	return s.State + " " + s.Progress.Stage
}
