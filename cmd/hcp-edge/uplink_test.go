package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rabbitmq/amqp091-go"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/engine"
	"hcp-edge/session/executor"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// testBrokerURL is the callee's broker URL on the bench vhost (amqptest.URL
// reads HCP_AMQP_URL as it was before init cleared it).
func testBrokerURL() string { return amqptest.URL() }

// init keeps the daemons of the other tests off the broker even when the
// environment (make ci) sets HCP_AMQP_URL: they would all consume the
// default callee's queue. The broker tests give it, with a callee id of
// their own, to their daemon and CLI only (env.extra), or through t.Setenv.
func init() {
	_ = os.Unsetenv("HCP_AMQP_URL")
	_ = os.Unsetenv("HCP_CALLEE_ID")
}

// brokerEnv is one rig, one daemon serving HCP through the test broker
// under a callee id of its own, and a caller (harness-alpha-001's login,
// mapped by the gate to a caller id of its own, so parallel packages'
// tests never share its queue).
type brokerEnv struct {
	*env
	conn     *amqp091.Connection // harness-alpha-001's, for the tap and cleanup
	calleeID string
	callerID string
	taps     chan amqp091.Delivery // tap's channel
	stopTap  func()                // hands the caller's queue from tap to the client
	// calleeUsers are further logins the caller client trusts as callees
	// (the fleet's agents each log in as a user of their own).
	calleeUsers []string
	// callerURLs are the caller client's endpoints (harness-alpha-001's
	// login); nil: alphaURL().
	callerURLs []string
	// own is the test's own vhost (newBrokerEnvParallel); nil: the
	// process's bench vhost.
	own *amqptest.Own
}

// edgeURL is the callee's (hcp-edge) URL on the env's vhost.
func (b *brokerEnv) edgeURL() string {
	if b.own != nil {
		return b.own.URL()
	}
	return testBrokerURL()
}

// alphaURL is harness-alpha-001's URL on the env's vhost.
func (b *brokerEnv) alphaURL() string {
	if b.own != nil {
		return b.own.AlphaURL()
	}
	return amqptest.AlphaURL()
}

// betaURL is harness-beta-002's URL on the env's vhost.
func (b *brokerEnv) betaURL() string {
	if b.own != nil {
		return b.own.BetaURL()
	}
	return amqptest.BetaURL()
}

// newBrokerEnv checks the broker (skipping loudly, or failing under
// HCP_REQUIRE_PEERS=1; holding brokerlock shared through amqptest.Dial),
// then builds the rig and the configuration with the caller in the gate:
// the shipped ids on a vhost of the test's own (amqptest.OwnBench), and the
// daemon's broker URL and callee id in its environment (extra; a later
// HCP_AMQP_URL there, a proxy's, overrides it), not in the process's, so
// that the test may run beside the package's others (t.Parallel).
func newBrokerEnv(t *testing.T) *brokerEnv {
	t.Helper()
	return newBrokerEnvWith(t, func() *env { return newEnv(t, nil) })
}

// newBrokerEnvWith is newBrokerEnv on the rig and daemon configuration mk
// builds (newEnvAt with a time scale of its own, a daemon binary of its own
// set on the env before start: TestPiSim).
func newBrokerEnvWith(t *testing.T, mk func() *env) *brokerEnv {
	t.Helper()
	own := amqptest.OwnBench(t)
	b := &brokerEnv{conn: amqptest.Dial(t, own.AlphaURL()), calleeID: amqptest.CalleeID, callerID: amqptest.AlphaID, own: &own}
	b.env = mk()
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapping := fmt.Sprintf("    %s: %s\n", amqptest.AlphaUser, amqptest.AlphaID)
	if !strings.Contains(string(cfg), "\ngate:\n") || !strings.Contains(string(cfg), mapping) {
		t.Fatal("fixture: sim.yaml's gate section does not map " + amqptest.AlphaUser + " to " + amqptest.AlphaID)
	}
	b.extra = append(b.extra, "HCP_AMQP_URL="+own.URL(), "HCP_CALLEE_ID="+b.calleeID)
	return b
}

// newBrokerEnvOn is a broker environment on the broker of conn
// (harness-alpha-001's login; the cluster of scripts/cluster.sh), with a
// callee and a caller id of its own, leaving the daemon's broker endpoints
// (HCP_AMQP_URL or HCP_AMQP_URLS) to the test.
func newBrokerEnvOn(t *testing.T, conn *amqp091.Connection) *brokerEnv {
	t.Helper()
	suffix := strings.ReplaceAll(uuid.NewString(), "-", "")[:10]
	return newBrokerEnvAs(t, conn, "hcp-edge-uplinktest-"+suffix, "uplinktest-"+suffix)
}

// newBrokerEnvAs is newBrokerEnvOn with the callee and caller ids given
// (the fleet's agents share one caller): the configuration maps
// harness-alpha-001's login to callerID and lets it run what the shipped
// harness-alpha-001 may.
func newBrokerEnvAs(t *testing.T, conn *amqp091.Connection, calleeID, callerID string) *brokerEnv {
	t.Helper()
	b := &brokerEnv{conn: conn, calleeID: calleeID, callerID: callerID}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete("hcp.cmd."+b.calleeID, false, false, false)
			_, _ = ch.QueueDelete("hcp.dlq."+b.calleeID, false, false, false)
			_, _ = ch.QueueDelete("hcp.evt."+b.callerID, false, false, false)
			_ = ch.Close()
		}
	})
	b.env = newEnv(t, nil)
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapping := fmt.Sprintf("    %s: %s\n", amqptest.AlphaUser, amqptest.AlphaID)
	callers := "\n  callers:\n"
	if !strings.Contains(string(cfg), "\ngate:\n") || !strings.Contains(string(cfg), mapping) || !strings.Contains(string(cfg), callers) {
		t.Fatal("fixture: sim.yaml's gate section does not map " + amqptest.AlphaUser + " to " + amqptest.AlphaID)
	}
	s := strings.Replace(string(cfg), mapping, fmt.Sprintf("    %s: %s\n", amqptest.AlphaUser, b.callerID), 1)
	s = strings.Replace(s, callers, callers+fmt.Sprintf(`    %s:
      capabilities: [cvd-material-synthesis, rig-status, leak-check]
      max_risk_level: R3
      max_data_classification: T2
`, b.callerID), 1)
	if err := os.WriteFile(b.cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	b.extra = append(b.extra, "HCP_CALLEE_ID="+b.calleeID) // the daemon's and the CLI's; not t.Setenv, so a parallel test may use it
	return b
}

// statusJSON is hcp-edge status --json.
func (e *env) statusJSON() statusResult {
	e.t.Helper()
	r := e.mustCLI("status", "--json")
	var st statusResult
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		e.t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	return st
}

// waitUplink polls status --json until ok accepts the uplink (hang guard).
func (e *env) waitUplink(what string, ok func(*uplinkStatus) bool) *uplinkStatus {
	e.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		st := e.statusJSON()
		if st.Uplink != nil && ok(st.Uplink) {
			return st.Uplink
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("uplink never %s: %+v\n%s", what, st.Uplink, e.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tap sees every message to the caller as the broker delivers it,
// properties and all. The caller's login may read only its own queue (no
// second queue bound with its keys), so the tap consumes that queue itself
// until a client starts; from then on the client hands it every delivery
// (caller.Opts.Tap).
func (b *brokerEnv) tap() <-chan amqp091.Delivery {
	b.t.Helper()
	return b.tapLater()()
}

// tapLater declares the caller's event queue now, so that every event from
// here on waits in it, and returns the function that starts consuming it
// (tap's channel). A timed test starts its tap after the figure it times:
// this process, the caller's side, then decodes nothing beside the agent.
func (b *brokerEnv) tapLater() func() <-chan amqp091.Delivery {
	b.t.Helper()
	if b.taps != nil {
		b.t.Fatal("tap: one per test")
	}
	b.taps = make(chan amqp091.Delivery, 1<<14)
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = ch.Close() })
	if err := tamqp.DeclareCallerQueue(ch, tamqp.CallerQueueOpts{CallerID: b.callerID, MessageTTL: 24 * time.Hour, MaxLength: 100000}); err != nil {
		b.t.Fatal(err)
	}
	return func() <-chan amqp091.Delivery {
		b.t.Helper()
		ds, err := ch.Consume(wire.EventQueuePrefix+b.callerID, "tap", true, true, false, false, nil)
		if err != nil {
			b.t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for d := range ds {
				b.taps <- d
			}
		}()
		b.stopTap = func() {
			_ = ch.Cancel("tap", false)
			<-done // every delivery the raw consumer got is in taps
		}
		return b.taps
	}
}

// client starts a transport/caller client as the caller.
func (b *brokerEnv) client(unclaimed func(*wire.Envelope)) *caller.Client {
	b.t.Helper()
	db, err := bolt.Open(filepath.Join(b.t.TempDir(), "caller.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.t.Fatal(err)
	}
	urls := b.callerURLs
	if len(urls) == 0 {
		urls = []string{b.alphaURL()}
	}
	// The callee logs in as hcp-edge whatever its callee id: the client
	// trusts only events published with that user_id.
	opts := caller.Opts{URL: urls[0], URLs: urls[1:], CallerID: b.callerID, CalleeID: b.calleeID, CalleeUser: amqptest.EdgeUser, CalleeUsers: b.calleeUsers,
		ResubmitInterval: 3 * time.Second, Unclaimed: unclaimed,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if b.stopTap != nil { // the client takes over the queue and feeds the tap
		b.stopTap()
		b.stopTap = nil
		taps := b.taps
		opts.Tap = func(d amqp091.Delivery) { taps <- d }
	}
	c, err := caller.New(db, opts)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = c.Close(); _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.Supervisor().WaitConnected(ctx); err != nil {
		b.t.Fatalf("caller not connected: %v", err)
	}
	return c
}

// collect reads a task's messages until its channel closes (hang guard).
func collect(t *testing.T, task *caller.Task, guard time.Duration) []*wire.Envelope {
	t.Helper()
	var out []*wire.Envelope
	timeout := time.After(guard)
	for {
		select {
		case m, ok := <-task.Messages():
			if !ok {
				return out
			}
			out = append(out, m)
		case <-timeout:
			t.Fatalf("task not finished after %v; got %d messages", guard, len(out))
		}
	}
}

// checkSequence: the events are numbered 1, 2, 3, … without a gap.
func checkSequence(t *testing.T, msgs []*wire.Envelope) int {
	t.Helper()
	n := 0
	for _, m := range msgs {
		if m.Type != wire.TypeEvent {
			continue
		}
		ev, err := m.Event()
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ev.Sequence != uint64(n) {
			t.Fatalf("event %d (%s) has sequence %d", n, ev.EventType, ev.Sequence)
		}
	}
	if n == 0 {
		t.Fatal("no events")
	}
	return n
}

// checkDeliveries checks L1's properties and routing keys of what the tap
// saw of session sid (up to its final message), and that task_accepted
// names the submit in hcp-in-reply-to.
func checkDeliveries(t *testing.T, ds <-chan amqp091.Delivery, callerID, sid, submitID string, final wire.Type) {
	t.Helper()
	timeout := time.After(hangGuard)
	for {
		var d amqp091.Delivery
		select {
		case d = <-ds:
		case <-timeout:
			t.Fatalf("tap: no %s of %s", final, sid)
		}
		env, err := wire.Decode(d.Body)
		if err != nil {
			t.Fatalf("tap: %v", err)
		}
		if env.SessionID == nil || env.SessionID.String() != sid {
			continue
		}
		want := callerID + "." + sid + "." + string(env.Type)
		switch {
		case d.RoutingKey != want:
			t.Fatalf("routing key %q, want %q", d.RoutingKey, want)
		case d.Exchange != wire.EventsExchange:
			t.Fatalf("exchange %q", d.Exchange)
		case d.ContentType != "application/json" || !strings.EqualFold(d.ContentEncoding, "utf-8"):
			t.Fatalf("content %q %q", d.ContentType, d.ContentEncoding)
		case d.DeliveryMode != 2:
			t.Fatalf("delivery_mode %d", d.DeliveryMode)
		case d.MessageId != env.MessageID.String() || d.Type != string(env.Type) || d.CorrelationId != sid:
			t.Fatalf("message_id %q type %q correlation_id %q vs body %s %s", d.MessageId, d.Type, d.CorrelationId, env.MessageID, env.Type)
		case d.UserId != amqptest.EdgeUser:
			t.Fatalf("user_id %q", d.UserId)
		case d.Timestamp.IsZero():
			t.Fatal("no timestamp")
		}
		if env.Type == wire.TypeTaskAccepted {
			if irt, _ := d.Headers[wire.HeaderInReplyTo].(string); irt != submitID {
				t.Fatalf("task_accepted %s = %q, want %s", wire.HeaderInReplyTo, irt, submitID)
			}
		}
		if env.Type == final {
			return
		}
	}
}

// TestUplinkRigStatus: rig-status (R1, no approval) submitted through the
// broker by transport/caller as harness-alpha-001: task_accepted, events
// numbered from 1, task_completed; L1's properties and routing keys; the
// daemon's status shows the uplink; it stops cleanly with the outbox empty.
func TestUplinkRigStatus(t *testing.T) {
	t.Parallel()
	b := newBrokerEnv(t)
	b.start()
	up := b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	if up.TLS || strings.Contains(up.Broker, "hcp-edge-dev") {
		t.Fatalf("uplink status %+v: TLS on amqp:// or the password shown", up)
	}
	taps := b.tap()
	c := b.client(nil)
	t0 := time.Now()
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.RigStatusName, CapabilityVersion: "1.x",
		Intent: "snapshot of the rig for the uplink test", Inputs: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := collect(t, task, hangGuard)
	t.Logf("rig-status through the broker: %d messages in %v", len(msgs), time.Since(t0).Round(time.Millisecond))
	if msgs[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("first message %s", msgs[0].Type)
	}
	fin := msgs[len(msgs)-1]
	tc, err := fin.TaskCompleted()
	if err != nil {
		t.Fatalf("final %s: %v", fin.Type, err)
	}
	var out map[string]any
	if err := json.Unmarshal(tc.Outputs, &out); err != nil || out["taken_at"] == nil {
		t.Fatalf("outputs %s: %v", tc.Outputs, err)
	}
	n := checkSequence(t, msgs)
	sid, _ := task.Session()
	checkDeliveries(t, taps, b.callerID, sid.String(), task.SubmitID(), wire.TypeTaskCompleted)
	if s := c.Stats(); s.PropertyViolations != 0 || s.Invalid != 0 {
		t.Fatalf("caller stats %+v", s)
	}
	t.Logf("%d events, sequence contiguous from 1", n)
	b.waitUplink("drained", func(u *uplinkStatus) bool { return u.Backlog == 0 })
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
	if !strings.Contains(b.logs.String(), "uplink closed, outbox empty") {
		t.Fatalf("no clean uplink close in the log:\n%s", b.logs)
	}
}

// TestUplinkMoS2: the seed's MoS2 task through the broker, R3 so pending;
// approved with hcp-edge approve; task_completed with layer_count 1, the
// events numbered from 1 (the approval_pending event comes before
// task_accepted, so the caller hands it to Unclaimed).
func TestUplinkMoS2(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the MoS2 recipe against the simulator (~25 s)")
	}
	b := newBrokerEnv(t)
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	var mu sync.Mutex
	var early []*wire.Envelope
	c := b.client(func(env *wire.Envelope) {
		mu.Lock()
		early = append(early, env)
		mu.Unlock()
	})
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
	t0 := time.Now()
	task, err := c.Submit(context.Background(), ts)
	if err != nil {
		t.Fatal(err)
	}
	pending := b.waitSession("pending approval", func(s sessionView) bool {
		return s.State == "PENDING" && s.ApprovalID != "" && s.Caller == b.callerID
	})
	if pending.Risk != "R3" {
		t.Fatalf("pending %+v, want R3", pending)
	}
	b.mustCLI("approve", pending.ApprovalID, "--operator", "olga")
	msgs := collect(t, task, 2*time.Minute)
	t.Logf("MoS2 through the broker: %d messages in %v", len(msgs), time.Since(t0).Round(time.Millisecond))
	mu.Lock()
	all := append(append([]*wire.Envelope{}, early...), msgs...)
	mu.Unlock()
	if len(early) == 0 {
		t.Fatal("no approval_pending event before task_accepted")
	}
	if ev, err := early[0].Event(); err != nil || ev.EventType != engine.EventApprovalPending {
		t.Fatalf("first message %s %v, want approval_pending", early[0].Type, err)
	}
	if msgs[0].Type != wire.TypeTaskAccepted {
		t.Fatalf("first message of the task %s", msgs[0].Type)
	}
	n := checkSequence(t, all)
	checkCompleted(t, msgs[len(msgs)-1], ts, b.grown())
	if s := c.Stats(); s.PropertyViolations != 0 || s.Invalid != 0 || s.Skipped != 0 {
		t.Fatalf("caller stats %+v", s)
	}
	t.Logf("%d events, sequence contiguous from 1", n)
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}

// TestUplinkBrokerUnreachable: with the broker URL on a closed port the
// daemon starts, serves the control socket, reports the uplink down in
// status, logs its reconnect attempts, and stops cleanly. Needs no broker.
func TestUplinkBrokerUnreachable(t *testing.T) {
	e := newEnv(t, nil)
	t.Setenv("HCP_AMQP_URL", "amqp://hcp-edge:secret-pw@"+amqptest.ClosedPort(t)+"/hcp")
	t.Setenv("HCP_CALLEE_ID", "hcp-edge-unreachable")
	e.start()
	up := e.waitUplink("tried", func(u *uplinkStatus) bool { return u.LastError != "" })
	if up.Connected || strings.Contains(up.Broker, "secret-pw") {
		t.Fatalf("uplink %+v", up)
	}
	if st := e.statusJSON(); len(st.Readings) == 0 {
		t.Fatalf("status without readings: %+v", st)
	}
	if r := e.mustCLI("status"); !strings.Contains(r.stdout, "uplink: amqp://hcp-edge:xxxxx@") || !strings.Contains(r.stdout, "DISCONNECTED") {
		t.Fatalf("human status:\n%s", r.stdout)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
	if !strings.Contains(e.logs.String(), "amqp: connect failed") {
		t.Fatalf("no reconnect attempt logged:\n%s", e.logs)
	}
}

// u0Target is the real broker's host:port.
func u0Target(t *testing.T) string {
	t.Helper()
	u, err := amqp091.ParseURI(testBrokerURL())
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(u.Host, fmt.Sprint(u.Port))
}

// writeTask writes a task_submit of the caller to a file.
func (b *brokerEnv) writeTask(capability string, inputs string) string {
	b.t.Helper()
	env, err := wire.NewEnvelope(nil, &wire.TaskSubmit{Capability: capability, CallerID: b.callerID,
		Intent: "uplink CLI test", Inputs: json.RawMessage(inputs)}, time.Now())
	if err != nil {
		b.t.Fatal(err)
	}
	data, err := wire.Encode(env)
	if err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(b.t.TempDir(), capability+".json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// TestUplinkSubmitCLI: hcp-edge submit FILE --broker URL, with and without
// --watch, and a refusal (a capability outside the caller's ACL) exits 1.
func TestUplinkSubmitCLI(t *testing.T) {
	t.Parallel()
	b := newBrokerEnv(t)
	// This caller may not run leak-check here (the gate's ACL only; the
	// broker's permissions do not depend on capabilities).
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	const all = "capabilities: [cvd-material-synthesis, ws2-sulfurization, h2-anneal, rig-status, leak-check]"
	if strings.Count(string(cfg), all) != 1 {
		t.Fatalf("fixture: %q not once in the configuration", all)
	}
	cfg = []byte(strings.Replace(string(cfg), all, "capabilities: [cvd-material-synthesis, ws2-sulfurization, h2-anneal, rig-status]", 1))
	if err := os.WriteFile(b.cfg, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	rs := b.writeTask(executor.RigStatusName, `{"include":["furnace","interlock"]}`)
	broker := []string{"--broker", b.alphaURL(), "--callee", b.calleeID}

	r := b.cli(append([]string{"submit", rs, "--watch"}, broker...)...)
	if r.code != exitOK {
		t.Fatalf("submit --broker --watch: exit %d\n%s\n%s", r.code, r.stderr, r.stdout)
	}
	fin := decodeFinal(t, r)
	if fin.Type != wire.TypeTaskCompleted || !strings.Contains(r.stderr, "session_created") {
		t.Fatalf("final %s; watch output:\n%s", fin.Type, r.stderr)
	}
	t.Logf("submit --broker --watch: rig-status completed in %v", r.took.Round(time.Millisecond))

	r = b.cli(append([]string{"submit", rs}, broker...)...)
	var res submitResult
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != exitOK || err != nil || res.SessionID == "" {
		t.Fatalf("submit --broker: exit %d %v\n%s\n%s", r.code, err, r.stderr, r.stdout)
	}

	lc := b.writeTask(executor.LeakCheckName, `{}`)
	r = b.cli(append([]string{"submit", lc, "--watch"}, broker...)...)
	if r.code != exitFailure || !strings.Contains(r.stdout, `"task_rejected"`) || !strings.Contains(r.stdout, "forbidden") {
		t.Fatalf("leak-check outside the ACL: exit %d\n%s\n%s", r.code, r.stderr, r.stdout)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}
