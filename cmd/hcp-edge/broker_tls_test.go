package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/executor"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// classified submits rig-status with data classification class through c
// and returns the task's messages.
func classified(t *testing.T, c *caller.Client, class string) []*wire.Envelope {
	t.Helper()
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.RigStatusName, CapabilityVersion: "1.x",
		Intent: "status snapshot, " + class, Inputs: json.RawMessage(`{}`), Constraints: &wire.Constraints{DataClassification: class}})
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, task, hangGuard)
}

// TestT3T4NeedRabbitMQTLS: with the at-rest key configured, a T3 and a T4
// task are refused (forbidden, naming TLS) while the agent's uplink is plain
// AMQP; with the uplink on RabbitMQ's own TLS listener (CA-verified, mutual
// TLS, EXTERNAL login from the agent's certificate) the T3 task completes,
// and the caller accepts it as the callee's.
func TestT3T4NeedRabbitMQTLS(t *testing.T) {
	t.Parallel()
	b := newBrokerEnv(t)
	keyFile := writeAtRestKey(t, t.TempDir(), "at-rest.key", atRestHexA, 0o600)
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(cfg), "  log_level: info\n", "  log_level: info\n  at_rest_key_file: "+keyFile+"\n", 1)
	s = strings.Replace(s, "      max_data_classification: T2\n", "      max_data_classification: T4\n", 1)
	if err := os.WriteFile(b.cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}

	// 1. Plain AMQP.
	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected && !u.TLS })
	c := b.client(nil)
	for _, class := range []string{"T3", "T4"} {
		msgs := classified(t, c, class)
		tr, err := msgs[len(msgs)-1].TaskRejected()
		if err != nil || tr.ReasonCode != wire.ReasonForbidden || !strings.Contains(tr.ReasonMessage, "TLS") {
			t.Fatalf("%s over plain AMQP: %s %+v (%v)", class, msgs[len(msgs)-1].Type, tr, err)
		}
		t.Logf("%s over plain AMQP refused: %s: %s", class, tr.ReasonCode, tr.ReasonMessage)
	}
	_ = c.Close() // one consumer on the caller's queue at a time
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}

	// 2. RabbitMQ's TLS listener; the agent logs in with its certificate.
	ca := amqptest.NewCA(t, "hcp-edge T3 test CA "+uuid.NewString()[:8])
	sDER, sKey, _, _ := ca.Issue("broker", x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	addr := amqptest.TLSListener(t, sDER, sKey, ca.DER)
	_, _, edgeCert, edgeKey := ca.Issue(amqptest.EdgeUser, x509.ExtKeyUsageClientAuth, nil, nil)
	s = strings.Replace(s, "  log_level: info\n", "  log_level: info\n  amqp:\n    ca_file: "+ca.File+"\n    cert_file: "+edgeCert+"\n    key_file: "+edgeKey+"\n", 1)
	if err := os.WriteFile(b.cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := amqptest.OnVHostAt(b.edgeURL(), "amqps", addr)
	external := "amqps://" + plain[strings.Index(plain, "@")+1:] + "?auth_mechanism=external"
	b.extra = append(b.extra, "HCP_AMQP_URL="+external)
	b.start()
	up := b.waitUplink("connected over TLS", func(u *uplinkStatus) bool { return u.Connected && u.TLS })
	t.Logf("uplink %s, TLS %v", up.Broker, up.TLS)

	db, err := bolt.Open(filepath.Join(t.TempDir(), "caller-tls.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := caller.New(db, caller.Opts{URL: amqptest.OnVHostAt(b.alphaURL(), "amqps", addr), TLS: tamqp.TLSConfig{CAFile: ca.File},
		CallerID: b.callerID, CalleeID: b.calleeID, ResubmitInterval: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tc.Close(); _ = db.Close() }()
	task, err := tc.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.RigStatusName, CapabilityVersion: "1.x",
		Intent: "status snapshot, T3", Inputs: json.RawMessage(`{}`), Constraints: &wire.Constraints{DataClassification: "T3"}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*wire.Envelope
	guard := time.After(hangGuard)
read:
	for {
		select {
		case m, ok := <-task.Messages():
			if !ok {
				break read
			}
			msgs = append(msgs, m)
		case <-guard:
			var types []string
			for _, m := range msgs {
				types = append(types, string(m.Type))
				if ev, err := m.Event(); err == nil {
					types = append(types, ev.EventType+string(ev.Data))
				}
			}
			st := b.cli("sessions", "--all", "--json")
			t.Fatalf("T3 over TLS not finished: %v\nsessions: %s\nstats %+v\n%s", types, st.stdout, tc.Stats(), b.logs)
		}
	}
	fin := msgs[len(msgs)-1]
	if fin.Type != wire.TypeTaskCompleted {
		t.Fatalf("T3 over TLS: %s\n%s", fin.Type, b.logs)
	}
	if st := tc.Stats(); st.Forged != 0 {
		t.Fatalf("caller stats %+v", st)
	}
	t.Logf("T3 over RabbitMQ's TLS listener (agent: mTLS EXTERNAL as %s): completed, %d messages", amqptest.EdgeUser, len(msgs))
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}
