package main

// The chaos test on the local three-node cluster of scripts/cluster.sh
// (make cluster): the daemon reaches each node through a TCP proxy of the
// test (amqptest.Proxy), so that its connection can be partitioned (bytes
// blackholed, nothing closed) as well as lost with a stopped node.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rabbitmq/amqp091-go"

	"hcp-edge/session/audit"
	"hcp-edge/session/store"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// clusterScript is scripts/cluster.sh from this package's directory.
const clusterScript = "../../scripts/cluster.sh"

// clusterNodeGuard bounds one cluster.sh stop or start (a node boots in
// seconds, much longer on a loaded machine). A hang guard only.
const clusterNodeGuard = 4 * time.Minute

// requireCluster dials every node of the local cluster as harness-alpha-001
// (skipping loudly, or failing under HCP_REQUIRE_PEERS=1, when one does
// not answer) and returns a connection to node 1.
func requireCluster(t *testing.T) *amqp091.Connection {
	t.Helper()
	amqptest.HoldCluster(t) // another checkout's suite may stop nodes meanwhile
	var first *amqp091.Connection
	for i, u := range amqptest.ClusterURLs(amqptest.AlphaUser, "harness-alpha-dev") {
		conn, err := amqp091.DialConfig(u, amqp091.Config{Heartbeat: 10 * time.Second, Dial: amqp091.DefaultDial(5 * time.Second)})
		if err != nil {
			amqptest.MissingPeer(t, fmt.Sprintf("RabbitMQ cluster node %d (%s): %v", i+1, u, err), "make cluster")
		}
		if i == 0 {
			first = conn
			continue
		}
		_ = conn.Close()
	}
	t.Cleanup(func() { _ = first.Close() })
	return first
}

// cluster runs scripts/cluster.sh with args (guarded).
func cluster(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterNodeGuard)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", append([]string{clusterScript}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("cluster.sh %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// chaosCounts is what the caller saw over the whole test.
type chaosCounts struct {
	sessions, events, lost, duplicated, redelivered int
}

// TestClusterChaos: MoS2 sessions (the seed's task, approved, through a
// transport/caller client on every node's endpoint) run on the three-node
// cluster while the node the daemon is connected to is stopped and started
// again (cluster.sh stop N, start N), three times, and while the daemon's
// connection is partitioned and healed through its proxy. The daemon fails
// over to another node each time. Every session completes; the caller
// processes each event once, contiguous from 1, each message_id once; the
// broker's redeliveries are counted (the caller de-duplicated them).
func TestClusterChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("stops and starts cluster nodes during four MoS2 sessions (a few minutes)")
	}
	conn := requireCluster(t)
	// Parallel: the cluster of scripts/cluster.sh is this test's alone in
	// the suite (TestFleet, its other user, runs under make fleet), and its
	// rigs and daemons are its own; sequential, its 100 s delayed every
	// parallel test of the package (build/ci-suite.json).
	t.Parallel()
	ports := amqptest.ClusterPorts()
	proxies := make([]*amqptest.Proxy, len(ports))
	var edgeURLs []string
	for i, port := range ports {
		proxies[i] = amqptest.StartProxy(t, "127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", port))
		edgeURLs = append(edgeURLs, "amqp://hcp-edge:hcp-edge-dev@"+proxies[i].Addr()+"/hcp")
	}
	stopped := map[int]bool{}
	t.Cleanup(func() { // never leave a node down for the next test
		for n := range stopped {
			ctx, cancel := context.WithTimeout(context.Background(), clusterNodeGuard)
			out, err := exec.CommandContext(ctx, "bash", clusterScript, "start", fmt.Sprint(n)).CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("cluster.sh start %d: %v\n%s", n, err, out)
			}
		}
	})
	// Each round has a rig of its own (the simulated sample keeps what a
	// session grew) and a daemon on it, reaching the cluster through the
	// proxies with a short heartbeat (a partitioned path is found in ~3 × 2 s).
	newRound := func() *brokerEnv {
		b := newBrokerEnvOn(t, conn)
		b.callerURLs = amqptest.ClusterURLs(amqptest.AlphaUser, "harness-alpha-dev")
		b.deleteQueuesOn(b.callerURLs)
		b.extra = append(b.extra, "HCP_AMQP_URLS="+strings.Join(edgeURLs, ",")) // not t.Setenv: the test is parallel
		cfg, err := os.ReadFile(b.cfg)
		if err != nil {
			t.Fatal(err)
		}
		const grace = "  recovery_grace: 5m"
		if !bytes.Contains(cfg, []byte(grace)) {
			t.Fatal("fixture: no recovery_grace line in sim.yaml's agent section")
		}
		cfg = bytes.Replace(cfg, []byte(grace), []byte(grace+"\n  amqp:\n    heartbeat: 2s"), 1)
		if err := os.WriteFile(b.cfg, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		b.start()
		b.arm()
		b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
		return b
	}
	t0 := time.Now()
	var total chaosCounts
	lost := 0
	for round, kind := range []string{"stop", "stop", "stop", "partition"} {
		b := newRound()
		// onNode is the index of the proxy (= node) the daemon is connected to.
		onNode := func(u *uplinkStatus) int {
			for i, p := range proxies {
				if strings.Contains(u.Endpoint, "@"+p.Addr()+"/") {
					return i
				}
			}
			t.Fatalf("uplink endpoint %q is none of the proxies", u.Endpoint)
			return -1
		}
		run := b.startMoS2(t)
		up := b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
		k := onNode(up)
		tCut := time.Now()
		switch kind {
		case "stop":
			cluster(t, "stop", fmt.Sprint(k+1))
			stopped[k+1] = true
		case "partition":
			proxies[k].Blackhole()
		}
		moved := b.waitUplinkFor("connected to another node", brokerLongGuard, func(u *uplinkStatus) bool {
			return u.Connected && onNode(u) != k
		})
		took := time.Since(tCut).Round(100 * time.Millisecond)
		during := b.sessionByID(run.sid)
		switch kind {
		case "stop":
			cluster(t, "start", fmt.Sprint(k+1))
			delete(stopped, k+1)
		case "partition":
			proxies[k].Heal()
		}
		t.Logf("round %d: %s of node %d (the daemon's) with session %s: the daemon moved to node %d after %v; node %d back",
			round+1, kind, k+1, progressOf(during), onNode(moved)+1, took, k+1)

		all := run.finish(t, brokerLongGuard)
		n := checkStream(t, all, run.sid)
		final := checkCompleted(t, all[len(all)-1], run.ts, b.grown())
		ids := map[string]int{}
		for _, m := range all {
			ids[m.MessageID.String()]++
		}
		dup := 0
		for _, c := range ids {
			dup += c - 1
		}
		last, _ := lastEvent(all)
		st := run.c.Stats()
		if dup != 0 || st.Skipped != 0 || st.Invalid != 0 || st.PropertyViolations != 0 || last.EventType != wire.EventSessionClosed {
			t.Fatalf("round %d: %d duplicated message_ids, last event %s, caller %+v", round+1, dup, last.EventType, st)
		}
		b.waitSession(final, func(s sessionView) bool { return s.ID == run.sid && s.State == final })
		// The next round's client consumes the same queue: this one must not
		// take its messages.
		_ = run.c.Close()
		total.sessions++
		total.events += n
		total.duplicated += dup
		total.redelivered += int(st.Duplicates)
		t.Logf("round %d: session %s %s: %d events contiguous from 1 (the last session_closed), 0 duplicated; the caller dropped %d redelivered copies",
			round+1, run.sid, strings.ToLower(final), n, st.Duplicates)
		b.waitUplink("drained", func(u *uplinkStatus) bool { return u.Connected && u.Backlog == 0 })
		if err := b.stop(); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, b.logs)
		}
		// Lost: events the agent stored for the session that the caller never
		// processed (the stream is contiguous, so only a missing tail can be).
		lost += int(b.storedEvents(run.sid)) - n
		logs := b.logs.String()
		if !strings.Contains(logs, "amqp: connection lost") || !strings.Contains(logs, "amqp: topology declared") || !strings.Contains(logs, "uplink closed, outbox empty") {
			t.Fatalf("the log lacks the lost connection, the declaration or the clean close:\n%s", logs)
		}
	}
	total.lost = lost
	if lost != 0 {
		t.Fatalf("%d events lost", lost)
	}
	msg := fmt.Sprintf("CHAOS: %d sessions completed across 3 node stops and 1 partition in %v: %d events, %d lost, %d duplicated after de-duplication by message_id (%d redelivered copies dropped by the caller)",
		total.sessions, time.Since(t0).Round(time.Second), total.events, total.lost, total.duplicated, total.redelivered)
	t.Log(msg)
	fmt.Println(msg)
}

// lastEvent is the last event of a stream.
func lastEvent(all []*wire.Envelope) (*wire.Event, bool) {
	for i := len(all) - 1; i >= 0; i-- {
		if ev, err := all[i].Event(); err == nil {
			return ev, true
		}
	}
	return &wire.Event{}, false
}

// deleteQueuesOn deletes the env's command, dead-letter and event queues at
// cleanup through a connection of its own to the first endpoint of urls
// that answers (a node may have just been stopped).
func (b *brokerEnv) deleteQueuesOn(urls []string) {
	b.t.Cleanup(func() {
		for _, u := range urls {
			conn, err := amqp091.DialConfig(u, amqp091.Config{Dial: amqp091.DefaultDial(3 * time.Second)})
			if err != nil {
				continue
			}
			defer conn.Close()
			ch, err := conn.Channel()
			if err != nil {
				return
			}
			for _, q := range []string{"hcp.cmd." + b.calleeID, "hcp.dlq." + b.calleeID, "hcp.evt." + b.callerID} {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
			_ = ch.Close()
			return
		}
		b.t.Log("cleanup: no cluster node answered; queues left")
	})
}

// auditTail is the last n entries of the (stopped) daemon's audit log.
func (e *env) auditTail(n int) []audit.Entry {
	e.t.Helper()
	st, err := store.Open(filepath.Join(e.dir, stateFile), store.DefaultOpts())
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	all, err := st.Audit().Tail(context.Background(), n)
	if err != nil {
		e.t.Fatal(err)
	}
	return all
}

// storedEvents is the number of events the (stopped) daemon stored for
// session sid: its last sequence number in the state file.
func (e *env) storedEvents(sid string) uint64 {
	e.t.Helper()
	st, err := store.Open(filepath.Join(e.dir, stateFile), store.DefaultOpts())
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	s, err := st.Session(context.Background(), sid)
	if err != nil {
		e.t.Fatal(err)
	}
	return s.LastSeq
}
