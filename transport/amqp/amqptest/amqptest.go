// Package amqptest helps tests that need the real RabbitMQ of
// scripts/broker.sh: the URLs of its three users, a peer check that skips
// loudly (or fails under HCP_REQUIRE_PEERS=1), broker restarts, and Echo, a
// fake session engine for the command inbox.
//
// # Concepts
//
// URL, AlphaURL and BetaURL read HCP_AMQP_URL, HCP_AMQP_URL_ALPHA and
// HCP_AMQP_URL_BETA, defaulting to what scripts/broker.sh sets up (users
// hcp-edge, harness-alpha-001, harness-beta-002), and put them on the test
// process's bench vhost: a private vhost provisioned on first use, with
// rabbitmqctl, exactly as `hcp-edge broker provision` provisions
// configs/sim.yaml (BenchSpec; the ids CalleeID, AlphaID, BetaID). No test
// runs with broader permissions than the shipped configuration grants. Main
// (from TestMain) deletes the vhost at the end. Dial connects or stops the
// test through MissingPeer. Restart runs rabbitmqctl stop_app/start_app
// and waits until the broker answers.
//
// # Caveats
//
// Restart stops the shared local broker for a few seconds: every other test
// talking to it sees its connection drop.
package amqptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/internal/brokerlock"
)

// RequirePeersEnv turns a missing broker into a failure (`make ci` sets it).
const RequirePeersEnv = "HCP_REQUIRE_PEERS"

// HidePeersEnv makes the broker look missing, running or not (`make
// test-bare` sets it; device/devicetest's rule for every other peer,
// restated here: transport imports no device package).
const HidePeersEnv = "HCP_HIDE_PEERS"

// errHidden is why the broker is not used under HCP_HIDE_PEERS=1.
var errHidden = errors.New("the broker is hidden (" + HidePeersEnv + "=1)")

// hidden reports whether HCP_HIDE_PEERS=1 is set.
func hidden() bool { return os.Getenv(HidePeersEnv) == "1" }

// Require stops t through MissingPeer unless the broker and a bench vhost
// are usable. A test whose subtests each need the broker calls it first, so
// that without a broker the whole test skips, naming what it lacks, instead
// of its subtests skipping one by one while the parent goes on with
// nothing.
func Require(t testing.TB) {
	t.Helper()
	if hidden() {
		MissingPeer(t, "RabbitMQ: "+errHidden.Error(), "unset "+HidePeersEnv)
	}
	if os.Getenv(BenchVHostEnv) == "" {
		if err := BenchError(); err != nil {
			MissingPeer(t, "the bench vhost: "+err.Error(), "bash scripts/broker.sh, and run the tests as root (rabbitmqctl), or set "+BenchVHostEnv)
		}
		return
	}
	conn, err := amqp091.DialConfig(URL(), amqp091.Config{Dial: amqp091.DefaultDial(3 * time.Second)})
	if err != nil {
		MissingPeer(t, "RabbitMQ at "+URL()+": "+err.Error(), "bash scripts/broker.sh, or set HCP_AMQP_URL")
	}
	_ = conn.Close()
}

// The users scripts/broker.sh creates.
const (
	EdgeUser  = "hcp-edge"
	AlphaUser = "harness-alpha-001"
	BetaUser  = "harness-beta-002"
)

// The environment as it was when the test binary started: a test package's
// init may clear HCP_AMQP_URL to keep its daemons off the broker.
var startEnv = map[string]string{
	"HCP_AMQP_URL":       os.Getenv("HCP_AMQP_URL"),
	"HCP_AMQP_URL_ALPHA": os.Getenv("HCP_AMQP_URL_ALPHA"),
	"HCP_AMQP_URL_BETA":  os.Getenv("HCP_AMQP_URL_BETA"),
}

func env(name, def string) string {
	if v := startEnv[name]; v != "" {
		return v
	}
	return def
}

func baseURL() string { return env("HCP_AMQP_URL", "amqp://hcp-edge:hcp-edge-dev@127.0.0.1:5672/hcp") }

func baseAlphaURL() string {
	return env("HCP_AMQP_URL_ALPHA", "amqp://harness-alpha-001:harness-alpha-dev@127.0.0.1:5672/hcp")
}

func baseBetaURL() string {
	return env("HCP_AMQP_URL_BETA", "amqp://harness-beta-002:harness-beta-dev@127.0.0.1:5672/hcp")
}

// URL is the callee's (hcp-edge) broker URL on the bench vhost.
func URL() string { return onBench(baseURL()) }

// AlphaURL is the first caller's (harness-alpha-001) broker URL on the
// bench vhost.
func AlphaURL() string { return onBench(baseAlphaURL()) }

// BetaURL is the second caller's (harness-beta-002) broker URL on the bench
// vhost.
func BetaURL() string { return onBench(baseBetaURL()) }

// MissingPeer skips t with a loud reason, or fails it under
// HCP_REQUIRE_PEERS=1.
func MissingPeer(t testing.TB, what, fix string) {
	t.Helper()
	msg := "PEER MISSING: " + what + " (" + fix + "); run `make ci` to install peers and run this test"
	if os.Getenv(RequirePeersEnv) == "1" {
		t.Fatal(msg + " — failing because " + RequirePeersEnv + "=1")
	}
	t.Skip(msg)
}

// Dial connects to url or stops t through MissingPeer; the connection is
// closed at cleanup.
func Dial(t testing.TB, url string) *amqp091.Connection {
	t.Helper()
	brokerlock.Shared(t) // no broker restart while this test runs (see brokerlock)
	if hidden() {
		MissingPeer(t, "RabbitMQ at "+url+": "+errHidden.Error(), "unset "+HidePeersEnv)
	}
	if err := BenchError(); err != nil && vhostOf(url) == "hcp-test-unprovisioned" {
		MissingPeer(t, "the bench vhost: "+err.Error(), "bash scripts/broker.sh, and run the tests as root (rabbitmqctl), or set "+BenchVHostEnv)
	}
	conn, err := amqp091.DialConfig(url, amqp091.Config{Heartbeat: 10 * time.Second, Dial: amqp091.DefaultDial(3 * time.Second)})
	if err != nil {
		MissingPeer(t, "RabbitMQ at "+url+": "+err.Error(), "bash scripts/broker.sh, or set HCP_AMQP_URL")
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// rabbitmqctl runs rabbitmqctl with a deadline.
func rabbitmqctl(ctx context.Context, args ...string) error {
	path, err := exec.LookPath("rabbitmqctl")
	if err != nil {
		path = "/usr/sbin/rabbitmqctl"
	}
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rabbitmqctl %v: %w: %s", args, err, out)
	}
	return nil
}

// HoldExclusive keeps every other package's broker test waiting until t ends:
// call it first in a test that restarts the broker.
func HoldExclusive(t testing.TB) {
	t.Helper()
	if hidden() {
		MissingPeer(t, "RabbitMQ: "+errHidden.Error(), "unset "+HidePeersEnv)
	}
	brokerlock.Exclusive(t)
}

// HoldCluster keeps every other process's cluster test waiting until t
// ends: call it first in a test that uses the local three-node cluster.
func HoldCluster(t testing.TB) {
	t.Helper()
	if hidden() {
		MissingPeer(t, "the RabbitMQ cluster: "+errHidden.Error(), "unset "+HidePeersEnv)
	}
	brokerlock.Cluster(t)
}

// CanRestart reports whether rabbitmqctl can control the local broker.
func CanRestart() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return rabbitmqctl(ctx, "-q", "status")
}

// StopApp stops the broker application (connections drop; the node stays).
func StopApp(ctx context.Context) error { return rabbitmqctl(ctx, "-q", "stop_app") }

// StartApp starts the broker application and waits until it answers and
// accepts a connection at url.
func StartApp(ctx context.Context, url string) error {
	if err := rabbitmqctl(ctx, "-q", "start_app"); err != nil {
		return err
	}
	if err := rabbitmqctl(ctx, "-q", "await_startup"); err != nil {
		return err
	}
	for {
		conn, err := amqp091.DialConfig(url, amqp091.Config{Dial: amqp091.DefaultDial(2 * time.Second)})
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker did not answer after start_app: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ClusterPortsEnv lists the AMQP ports of scripts/cluster.sh's nodes,
// comma-separated (default 5681,5682,5683 on 127.0.0.1).
const ClusterPortsEnv = "HCP_CLUSTER_PORTS"

// ClusterPorts returns the AMQP ports of the local cluster's nodes, node 1
// first.
func ClusterPorts() []int {
	var out []int
	for _, p := range strings.Split(env(ClusterPortsEnv, "5681,5682,5683"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// ClusterURL is the URL of the local cluster's node on port with the login
// user:pass and the vhost hcp.
func ClusterURL(user, pass string, port int) string {
	return fmt.Sprintf("amqp://%s:%s@127.0.0.1:%d/hcp", user, pass, port)
}

// ClusterURLs is ClusterURL for every node.
func ClusterURLs(user, pass string) []string {
	var out []string
	for _, p := range ClusterPorts() {
		out = append(out, ClusterURL(user, pass, p))
	}
	return out
}
