package amqptest

import (
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"

	"hcp-edge/transport/internal/brokerlock"
)

// Own is a bench of one test's own: BenchSpec's users, ids and narrow
// permissions on a vhost that no other test shares, so that a test that
// waits long on the broker (an outage, kills, restarts of the daemon) can
// run beside the package's other tests (t.Parallel) with the shipped ids
// (CalleeID, AlphaID, BetaID) and never see their queues.
type Own struct {
	// VHost is the test's vhost.
	VHost string
}

// URL is the callee's (hcp-edge) broker URL on the test's vhost.
func (o Own) URL() string { return onVHost(baseURL(), o.VHost) }

// AlphaURL is the first caller's (harness-alpha-001) URL on the test's vhost.
func (o Own) AlphaURL() string { return onVHost(baseAlphaURL(), o.VHost) }

// BetaURL is the second caller's (harness-beta-002) URL on the test's vhost.
func (o Own) BetaURL() string { return onVHost(baseBetaURL(), o.VHost) }

// sharedBench serialises the tests that asked for a bench of their own
// when none could be provisioned (BenchVHostEnv names the only vhost
// there is): they share the process's bench one at a time instead.
var sharedBench sync.Mutex

// provisioning serialises the process's OwnBench provisionings: each reads
// the broker's definitions, diffs and imports them, and two at once read
// a half-written export (TestRecipeKillEditRestart under make ci).
var provisioning sync.Mutex

// OwnBench provisions a vhost for t alone with rabbitmqctl and deletes it,
// with every queue in it, when t ends. Without a broker it stops t through
// MissingPeer, as Dial does. When BenchVHostEnv names a vhost provisioned
// by someone else (no rabbitmqctl here), t gets that vhost, held for t
// alone among the process's OwnBench tests until t ends.
func OwnBench(t testing.TB) Own {
	t.Helper()
	brokerlock.Shared(t) // no broker restart while the vhost is provisioned and used
	if hidden() {
		MissingPeer(t, "RabbitMQ: "+errHidden.Error(), "unset "+HidePeersEnv)
	}
	if v := os.Getenv(BenchVHostEnv); v != "" {
		sharedBench.Lock()
		t.Cleanup(sharedBench.Unlock)
		return Own{VHost: v}
	}
	if err := BenchError(); err != nil {
		MissingPeer(t, "the bench vhost: "+err.Error(), "bash scripts/broker.sh, and run the tests as root (rabbitmqctl), or set "+BenchVHostEnv)
	}
	vhost := "hcp-test-" + uuid.NewString()[:8]
	provisioning.Lock()
	err := provisionVHost(vhost)
	provisioning.Unlock()
	if err != nil {
		_ = deleteVHost(vhost)
		MissingPeer(t, "a vhost of the test's own: "+err.Error(), "bash scripts/broker.sh, and run the tests as root (rabbitmqctl)")
	}
	t.Cleanup(func() {
		if err := deleteVHost(vhost); err != nil {
			t.Logf("amqptest: delete the test's vhost %s: %v", vhost, err)
		}
	})
	return Own{VHost: vhost}
}
