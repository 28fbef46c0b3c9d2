package main

// Helpers of the broker_*_test.go files: the seed's MoS2 task run through
// the broker by a transport/caller client, an outage proxy that cuts and
// resumes, and cleanup that survives a broker restart.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rabbitmq/amqp091-go"

	"hcp-edge/cmd/hiltest/hilbench"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/engine"
	"hcp-edge/session/executor"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// brokerLongGuard bounds the waits that span a reconnect after a long
// outage: the Supervisor's backoff reaches L1's 60 s cap, so the first
// attempt after a 60 s outage can come up to a minute later. A guard
// against hangs, never a performance assertion.
const brokerLongGuard = 3 * time.Minute

// seedSubmit is the payload of the seed's MoS2 task_submit.
func seedSubmit(t *testing.T) *wire.TaskSubmit {
	t.Helper()
	data, err := os.ReadFile(seedTask)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := wire.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := seed.TaskSubmit()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// mos2Run is the seed's MoS2 task submitted through the broker by a
// transport/caller client as harness-alpha-001, approved by an operator.
type mos2Run struct {
	c    *caller.Client
	task *caller.Task
	ts   *wire.TaskSubmit
	sid  string // the session id (sessions --json)

	mu    sync.Mutex
	early []*wire.Envelope // approval_pending comes before task_accepted: Unclaimed
}

// startMoS2 submits the seed's task through a new caller client, approves
// it with hcp-edge approve and waits until the session runs with progress.
// Arm the rig and wait for the uplink before.
func (b *brokerEnv) startMoS2(t *testing.T) *mos2Run {
	t.Helper()
	return b.startApproved(t, seedSubmit(t))
}

// startApproved submits ts through a new caller client, approves it with
// hcp-edge approve and waits until the session runs with progress (a task
// of risk R3 or above). Arm the rig and wait for the uplink before.
func (b *brokerEnv) startApproved(t *testing.T, ts *wire.TaskSubmit) *mos2Run {
	t.Helper()
	r := &mos2Run{ts: ts}
	r.c = b.client(func(env *wire.Envelope) {
		r.mu.Lock()
		r.early = append(r.early, env)
		r.mu.Unlock()
	})
	task, err := r.c.Submit(context.Background(), r.ts)
	if err != nil {
		t.Fatal(err)
	}
	r.task = task
	pending := b.waitSession("pending approval", func(s sessionView) bool {
		return s.State == "PENDING" && s.ApprovalID != "" && s.Caller == b.callerID
	})
	b.mustCLI("approve", pending.ApprovalID, "--operator", "olga")
	r.sid = pending.ID
	run := b.waitSession("running with progress", func(s sessionView) bool {
		return s.ID == pending.ID && s.State == "RUNNING" && s.Progress != nil
	})
	t.Logf("%s session %s running: %s", ts.Capability, run.ID, run.Progress.Stage)
	return r
}

// finish reads the task to its end (guard) and returns every message the
// caller processed, the Unclaimed ones first, with the final message last.
func (r *mos2Run) finish(t *testing.T, guard time.Duration) []*wire.Envelope {
	t.Helper()
	msgs := collect(t, r.task, guard)
	r.mu.Lock()
	defer r.mu.Unlock()
	all := append(append([]*wire.Envelope{}, r.early...), msgs...)
	if len(all) == 0 {
		t.Fatal("the caller processed no message")
	}
	return all
}

// checkStream: each event processed once, sequence contiguous from 1, the
// approval_pending event first, task_accepted among the messages, the
// final message last; it returns the number of events.
func checkStream(t *testing.T, all []*wire.Envelope, sid string) int {
	t.Helper()
	accepted := 0
	for _, m := range all {
		if m.SessionID == nil || m.SessionID.String() != sid {
			t.Fatalf("message %s of session %v in the stream of %s", m.Type, m.SessionID, sid)
		}
		if m.Type == wire.TypeTaskAccepted {
			accepted++
		}
	}
	if accepted != 1 {
		t.Fatalf("%d task_accepted processed, want 1", accepted)
	}
	if ev, err := all[0].Event(); err != nil || ev.EventType != engine.EventApprovalPending {
		t.Fatalf("first message %s %v, want the approval_pending event", all[0].Type, err)
	}
	return checkSequence(t, all)
}

// checkCompleted judges the final message of a MoS2 run by what the plant
// grew (grown: the simulated plant after the session; nil when the test
// cannot see it, and then only a monolayer passes). The final message is
// task_completed with a monolayer that satisfies the task's
// expected_output. Only when the plant shows the loaded machine overgrew
// the film (overgrown) may it instead be task_completed with more layers,
// or task_failed because the caller's confidence threshold refused the
// ambiguous spectrum between one layer and two: both report what grew, as
// they must. It returns the session state the agent must end in.
func checkCompleted(t *testing.T, fin *wire.Envelope, ts *wire.TaskSubmit, grown *plant.Snapshot) string {
	t.Helper()
	over := grown != nil && overgrown(*grown)
	if over {
		t.Logf("the loaded machine stalled the run at the simulator's time scale: the plant got %.2f× the planned H2S and grew %.3f layers; the result must report what grew",
			exposureRatio(*grown), grown.Layers)
	}
	if tf, err := fin.TaskFailed(); err == nil && over &&
		tf.ErrorCode == wire.ErrorExecution && strings.Contains(tf.ErrorMessage, "below the caller's confidence_threshold") {
		t.Logf("refused as it must be: %s", tf.ErrorMessage)
		return "FAILED"
	}
	tc, err := fin.TaskCompleted()
	if err != nil {
		t.Fatalf("final %s: %v (%s)", fin.Type, err, mustEncode(fin))
	}
	var out map[string]any
	if err := json.Unmarshal(tc.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	if lc, _ := out["layer_count"].(float64); lc != 1 && (!over || lc < 2) {
		t.Fatalf("layer_count %v, want 1 (outputs %v)", out["layer_count"], out)
	}
	eo := ts.ExpectedOutput
	if err := executor.ValidateOutputs(out, &executor.ExpectedOutput{RequiredFields: eo.RequiredFields, Schema: eo.Schema}); err != nil {
		t.Fatal(err)
	}
	return "COMPLETED"
}

// exposureRatio and overgrown judge a run by the plant against the default
// recipe's plan (hilbench.Overgrown).
func exposureRatio(snap plant.Snapshot) float64 {
	return hilbench.ExposureRatio(snap, hilbench.SeedExposure)
}

func overgrown(snap plant.Snapshot) bool {
	return hilbench.Overgrown(snap, hilbench.SeedExposure)
}

// grown is the plant of an env with an in-process rig after its session.
func (e *env) grown() *plant.Snapshot {
	snap := e.p.Snapshot()
	return &snap
}

// deleteQueuesFresh deletes the env's command and event queues through a
// connection of its own at cleanup: newBrokerEnv's cleanup uses the
// connection it dialled first, which a broker restart has closed.
func (b *brokerEnv) deleteQueuesFresh() {
	b.t.Cleanup(func() {
		var conns []*amqp091.Connection
		for _, u := range []string{b.edgeURL(), b.alphaURL()} {
			conn, err := amqp091.DialConfig(u, amqp091.Config{Dial: amqp091.DefaultDial(3 * time.Second)})
			if err != nil {
				b.t.Logf("cleanup: %v", err)
				return
			}
			defer conn.Close()
			conns = append(conns, conn)
		}
		amqptest.DeleteQueues(conns[0], conns[1], b.calleeID, b.callerID)
	})
}

// outageProxy sits between the daemon and the broker: cut closes every
// connection and the listening socket (new connections are refused),
// resume listens on the same address again. It reuses startProxy.
type outageProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	p      *amqptest.Proxy // nil while cut
}

func startOutageProxy(t *testing.T) *outageProxy {
	t.Helper()
	o := &outageProxy{t: t, addr: amqptest.ClosedPort(t), target: u0Target(t)}
	o.resume()
	return o
}

// urlOf is the broker URL base (a login on a vhost) through the proxy.
func (o *outageProxy) urlOf(base string) string {
	u, err := amqp091.ParseURI(base)
	if err != nil {
		o.t.Fatal(err)
	}
	u.Host, u.Port = strings.Split(o.addr, ":")[0], amqptest.Port(o.t, o.addr)
	return u.String()
}

func (o *outageProxy) cut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.p != nil {
		o.p.Close()
		o.p = nil
	}
}

func (o *outageProxy) resume() {
	o.t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.p == nil {
		o.p = amqptest.StartProxy(o.t, o.addr, o.target)
	}
}

// restartEnv is a second daemon on the same state directory, rig and
// configuration as e (e's daemon must have exited): it has its own exit
// channel and cleanup.
func restartEnv(e *env) *env {
	e.t.Helper()
	if !e.stopped {
		e.t.Fatal("restartEnv: the first daemon still runs")
	}
	e2 := &env{t: e.t, r: e.r, p: e.p, dir: e.dir, cfg: e.cfg, sock: e.sock, exe: e.exe, emu: e.emu,
		extra: slices.Clone(e.extra)}
	e2.start()
	return e2
}

// kill SIGKILLs e's daemon and waits for it to exit.
func (e *env) kill() {
	e.t.Helper()
	if err := e.daemon.Process.Kill(); err != nil {
		e.t.Fatal(err)
	}
	select {
	case <-e.exited:
	case <-time.After(hangGuard):
		e.t.Fatal("daemon did not exit on SIGKILL")
	}
	e.stopped = true
	e.t.Cleanup(func() { // the env's own cleanup skips a stopped daemon
		if e.t.Failed() {
			e.t.Logf("log of the daemon killed:\n%s", e.logs)
		}
	})
}

// countTap drains a tap() in the background and counts, per message_id,
// what the broker delivered: stop returns the counts (the key is
// type/sequence/message_id).
func countTap(ds <-chan amqp091.Delivery) (stop func() map[string]int) {
	counts := map[string]int{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case d, ok := <-ds:
				if !ok {
					return
				}
				key := d.Type + "/" + d.MessageId
				if env, err := wire.Decode(d.Body); err == nil && env.Type == wire.TypeEvent {
					if ev, err := env.Event(); err == nil {
						key = fmt.Sprintf("event/%d/%s", ev.Sequence, d.MessageId)
					}
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
			}
		}
	}()
	return func() map[string]int {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return counts
	}
}

// rawStats summarises countTap's counts: distinct messages and the
// redundant deliveries (the same message_id more than once).
func rawStats(counts map[string]int) (distinct, redundant int) {
	for _, n := range counts {
		distinct++
		redundant += n - 1
	}
	return distinct, redundant
}

// waitUplinkFor is waitUplink with a guard of its own (a reconnect after a
// long outage waits out the backoff). It does not print the daemon's log,
// which its output goroutine is still writing: the env's cleanup prints it
// once the daemon stopped.
func (e *env) waitUplinkFor(what string, guard time.Duration, ok func(*uplinkStatus) bool) *uplinkStatus {
	e.t.Helper()
	deadline := time.Now().Add(guard)
	for {
		st := e.statusJSON()
		if st.Uplink != nil && ok(st.Uplink) {
			return st.Uplink
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("uplink never %s within %v: %+v", what, guard, st.Uplink)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sessionByID is the session id of sessions --all --json.
func (e *env) sessionByID(id string) sessionView {
	e.t.Helper()
	for _, s := range e.sessionsJSON() {
		if s.ID == id {
			return s
		}
	}
	e.t.Fatalf("no session %s", id)
	return sessionView{}
}
