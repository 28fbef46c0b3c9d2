package amqptest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"

	"hcp-edge/transport/provision"
)

// The ids of the bench: those of configs/sim.yaml and scripts/broker.sh.
const (
	CalleeID = "hcp-edge"          // the callee's id, and its command queue hcp.cmd.hcp-edge
	AlphaID  = "harness-alpha-001" // the first caller's id (hcp.evt.harness-alpha-001)
	BetaID   = "harness-beta-002"  // the second caller's id (hcp.evt.harness-beta-002)
)

// The development passwords of scripts/broker.sh; used only when the bench
// has to create a user that broker.sh has not.
var devPasswords = map[string]string{
	EdgeUser:  "hcp-edge-dev",
	AlphaUser: "harness-alpha-dev",
	BetaUser:  "harness-beta-dev",
}

var bench struct {
	once  sync.Once
	vhost string
	err   error
}

func user(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.Username()
}

// BenchSpec is what the bench provisions on vhost: the callee (URL's user,
// id CalleeID) and the two callers (AlphaURL's and BetaURL's users, ids
// AlphaID and BetaID), both allowed to command the callee — what `hcp-edge
// broker provision` derives from configs/sim.yaml.
func BenchSpec(vhost string) provision.Spec {
	return provision.Spec{
		VHost:  vhost,
		Callee: provision.Role{User: user(baseURL()), ID: CalleeID},
		Callers: []provision.Caller{
			{Role: provision.Role{User: user(baseAlphaURL()), ID: AlphaID}, MayCommand: true},
			{Role: provision.Role{User: user(baseBetaURL()), ID: BetaID}, MayCommand: true},
		},
	}
}

// benchVHost provisions, once per test process, a private vhost with
// BenchSpec's narrow permissions: the tests of one package run one at a
// time, and no other package or developer shares the vhost's queues.
func benchVHost() (string, error) {
	bench.once.Do(func() {
		if hidden() {
			bench.err = errHidden
			return
		}
		if v := os.Getenv(BenchVHostEnv); v != "" {
			bench.vhost = v // provisioned by someone else (see BenchVHostEnv)
			return
		}
		vhost := "hcp-test-" + uuid.NewString()[:8]
		if bench.err = provisionVHost(vhost); bench.err != nil {
			return
		}
		bench.vhost = vhost
	})
	return bench.vhost, bench.err
}

// provisionVHost creates vhost with BenchSpec's users and permissions
// (rabbitmqctl) and declares the exchanges on it, as the callee does when
// it starts: callers only check them (they may not configure them).
func provisionVHost(vhost string) error {
	g, err := provision.Derive(BenchSpec(vhost))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := provision.Rabbitmqctl{}
	st, err := provision.Read(ctx, r)
	if err != nil {
		return err
	}
	changes, _ := provision.Diff(st, g)
	if err := provision.Apply(ctx, r, g, changes, provision.Options{Passwords: devPasswords}); err != nil {
		return err
	}
	return declareExchanges(onVHost(baseURL(), vhost))
}

// deleteVHost deletes vhost with every queue in it.
func deleteVHost(vhost string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := (provision.Rabbitmqctl{}).Run(ctx, nil, "-q", "delete_vhost", vhost)
	return err
}

// BenchVHostEnv names a vhost already provisioned with BenchSpec (for a run
// without rabbitmqctl); when unset, the first test that needs the broker
// provisions a private one with rabbitmqctl.
const BenchVHostEnv = "HCP_TEST_VHOST"

// Main runs the package's tests (call it from TestMain) and deletes the
// process's bench vhost, with every queue in it, when one was provisioned.
func Main(m *testing.M) int {
	code := m.Run()
	if bench.vhost != "" && os.Getenv(BenchVHostEnv) == "" {
		if err := deleteVHost(bench.vhost); err != nil {
			fmt.Fprintf(os.Stderr, "amqptest: delete the bench vhost: %v\n", err)
		}
	}
	return code
}

func declareExchanges(url string) error {
	conn, err := amqp091.DialConfig(url, amqp091.Config{Dial: amqp091.DefaultDial(5 * time.Second)})
	if err != nil {
		return fmt.Errorf("amqptest: bench vhost: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("amqptest: bench vhost: %w", err)
	}
	return tamqp.DeclareExchanges(ch)
}

func onVHost(raw, vhost string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + vhost
	u.RawPath = "/" + url.PathEscape(vhost)
	return u.String()
}

// onBench is raw with its vhost replaced by the bench's; when the bench
// cannot be provisioned it returns raw on a vhost that does not exist, so
// that Dial fails and reports why.
func onBench(raw string) string {
	vhost, err := benchVHost()
	if err != nil {
		vhost = "hcp-test-unprovisioned"
	}
	return onVHost(raw, vhost)
}

// BenchError is why the bench vhost could not be provisioned, or nil.
func BenchError() error {
	_, err := benchVHost()
	return err
}

// VHost is the bench vhost's name ("" when it could not be provisioned).
func VHost() string {
	v, _ := benchVHost()
	return v
}

func vhostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

// TLSListener starts a TLS listener of RabbitMQ's own (amqp/ssl) on a free
// loopback port of the local node, with the server certificate and key
// (DER; the key PKCS #8) and the CA that verifies client certificates, all
// generated by the test: rabbit_networking:start_ssl_listener through
// rabbitmqctl eval, so the broker's configuration files stay as they are.
// Clients without a certificate are accepted (password logins over TLS);
// a client certificate must verify against ca. The listener is stopped at
// cleanup. Returns "127.0.0.1:port".
func TLSListener(t testing.TB, certDER, keyPKCS8DER, caDER []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	b64 := func(b []byte) string { return `base64:decode("` + base64.StdEncoding.EncodeToString(b) + `")` }
	listener := fmt.Sprintf(`{"127.0.0.1", %d}`, port)
	expr := fmt.Sprintf(`rabbit_networking:ensure_ssl(), rabbit_networking:start_ssl_listener(%s, [{cert, %s}, {key, {'PrivateKeyInfo', %s}}, {cacerts, [%s]}, {verify, verify_peer}, {fail_if_no_peer_cert, false}, {versions, ['tlsv1.3', 'tlsv1.2']}], 1).`,
		listener, b64(certDER), b64(keyPKCS8DER), b64(caDER))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := (provision.Rabbitmqctl{}).Run(ctx, nil, "-q", "eval", expr)
	if err != nil || !strings.Contains(string(out), "ok") {
		MissingPeer(t, fmt.Sprintf("a TLS listener of RabbitMQ's own: %v %s", err, out), "bash scripts/broker.sh, and run the tests as root (rabbitmqctl)")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := (provision.Rabbitmqctl{}).Run(ctx, nil, "-q", "eval", fmt.Sprintf(`rabbit_networking:stop_tcp_listener(%s).`, listener)); err != nil {
			t.Logf("stop the TLS listener: %v", err)
		}
	})
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// OnVHostAt is raw (one of URL, AlphaURL, BetaURL) with its scheme, host and
// port replaced: the bench's users and vhost through another listener.
func OnVHostAt(raw, scheme, hostport string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme, u.Host = scheme, hostport
	return u.String()
}
