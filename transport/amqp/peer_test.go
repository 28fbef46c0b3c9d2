package amqp

import (
	"github.com/hcp-edge/hcp-edge/transport/internal/brokerlock"
	"os"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// requirePeersEnv turns a missing broker into a failure (`make ci` sets it).
// The same rule as device/devicetest.MissingPeer, written here because
// transport may not import device.
const requirePeersEnv = "HCP_REQUIRE_PEERS"

// defaultURL is what scripts/broker.sh sets up for the callee.
const defaultURL = "amqp://hcp-edge:hcp-edge-dev@127.0.0.1:5672/hcp"

func missingPeer(t testing.TB, what, fix string) {
	t.Helper()
	msg := "PEER MISSING: " + what + " (" + fix + "); run `make ci` to install peers and run this test"
	if os.Getenv(requirePeersEnv) == "1" {
		t.Fatal(msg + " — failing because " + requirePeersEnv + "=1")
	}
	t.Skip(msg)
}

// brokerURL returns HCP_AMQP_URL or the broker.sh default.
func brokerURL() string {
	if u := os.Getenv("HCP_AMQP_URL"); u != "" {
		return u
	}
	return defaultURL
}

// dial connects to the test broker or stops the test through missingPeer.
func dial(t testing.TB) *amqp091.Connection {
	t.Helper()
	brokerlock.Shared(t) // no broker restart while this test runs (see brokerlock)
	conn, err := amqp091.DialConfig(brokerURL(), amqp091.Config{
		Heartbeat: 10 * time.Second,
		Dial:      amqp091.DefaultDial(3 * time.Second),
	})
	if err != nil {
		missingPeer(t, "RabbitMQ at "+brokerURL()+": "+err.Error(), "bash scripts/broker.sh, or set HCP_AMQP_URL")
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
