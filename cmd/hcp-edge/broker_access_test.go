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

	"hcp-edge/session/engine"
	"hcp-edge/session/executor"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// t4Broker is a broker environment whose daemon admits T4 tasks: the
// at-rest key, harness-alpha-001 allowed T4, access decisions restricted
// to olga, and the uplink on RabbitMQ's TLS listener (mutual TLS, EXTERNAL
// login). It returns the caller client over TLS.
func t4Broker(t *testing.T) (*brokerEnv, *caller.Client) {
	t.Helper()
	b, ca, addr := tlsBroker(t, nil)
	db, err := bolt.Open(filepath.Join(t.TempDir(), "caller-t4.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := caller.New(db, caller.Opts{URL: amqptest.OnVHostAt(b.alphaURL(), "amqps", addr), TLS: tamqp.TLSConfig{CAFile: ca.File},
		CallerID: b.callerID, CalleeID: b.calleeID, ResubmitInterval: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = db.Close() })
	return b, c
}

// tlsBroker starts a broker environment whose daemon admits T3 and T4
// tasks (t4Broker's configuration, then edit's when not nil) on RabbitMQ's
// TLS listener, and returns it with the CA and the listener's address.
func tlsBroker(t *testing.T, edit func(cfg string) string) (*brokerEnv, *amqptest.CA, string) {
	t.Helper()
	b := newBrokerEnv(t)
	keyFile := writeAtRestKey(t, t.TempDir(), "at-rest.key", atRestHexA, 0o600)
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ca := amqptest.NewCA(t, "hcp-edge T4 access test CA "+uuid.NewString()[:8])
	sDER, sKey, _, _ := ca.Issue("broker", x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	addr := amqptest.TLSListener(t, sDER, sKey, ca.DER)
	_, _, edgeCert, edgeKey := ca.Issue(amqptest.EdgeUser, x509.ExtKeyUsageClientAuth, nil, nil)
	s := strings.Replace(string(cfg), "  log_level: info\n", "  log_level: info\n  at_rest_key_file: "+keyFile+
		"\n  access_approvers: [olga]\n  amqp:\n    ca_file: "+ca.File+"\n    cert_file: "+edgeCert+"\n    key_file: "+edgeKey+"\n", 1)
	s = strings.Replace(s, "      max_data_classification: T2\n", "      max_data_classification: T4\n", 1)
	if edit != nil {
		s = edit(s)
	}
	if err := os.WriteFile(b.cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := amqptest.OnVHostAt(b.edgeURL(), "amqps", addr)
	b.extra = append(b.extra, "HCP_AMQP_URL=amqps://"+plain[strings.Index(plain, "@")+1:]+"?auth_mechanism=external")
	b.start()
	b.waitUplink("connected over TLS", func(u *uplinkStatus) bool { return u.Connected && u.TLS })
	return b, ca, addr
}

// submitT4 submits a T4 rig-status through c and reads its messages until
// the session is closed with its results held: the access_pending event
// (no result data in it), then session_closed COMPLETED, and no final
// message. It returns the task, the session id and the access id.
func submitT4(t *testing.T, b *brokerEnv, c *caller.Client) (*caller.Task, string, string) {
	t.Helper()
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.RigStatusName, CapabilityVersion: "1.x",
		Intent: "status snapshot, T4", Inputs: json.RawMessage(`{}`), Constraints: &wire.Constraints{DataClassification: "T4"}})
	if err != nil {
		t.Fatal(err)
	}
	var sid, accID string
	guard := time.After(hangGuard)
	for {
		select {
		case m, ok := <-task.Messages():
			if !ok {
				t.Fatalf("the task ended before its results were held\n%s", b.logs)
			}
			switch m.Type {
			case wire.TypeTaskCompleted, wire.TypeTaskFailed, wire.TypeTaskRejected:
				t.Fatalf("%s before any access decision\n%s", m.Type, b.logs)
			case wire.TypeTaskAccepted:
				sid = m.SessionID.String()
			}
			ev, err := m.Event()
			if err != nil {
				continue
			}
			switch ev.EventType {
			case engine.EventAccessPending:
				var d struct {
					Details struct {
						AccessID string `json:"access_id"`
						Held     string `json:"held"`
					} `json:"details"`
				}
				if err := json.Unmarshal(ev.Data, &d); err != nil || d.Details.AccessID == "" || d.Details.Held != string(wire.TypeTaskCompleted) ||
					strings.Contains(string(ev.Data), `"interlock"`) {
					t.Fatalf("access_pending %s (%v)", ev.Data, err)
				}
				accID = d.Details.AccessID
			case "session_closed":
				if accID == "" || !strings.Contains(string(ev.Data), `"COMPLETED"`) {
					t.Fatalf("session_closed %s after access_pending %q", ev.Data, accID)
				}
				t.Logf("session %s closed, results held in %s", sid, accID)
				return task, sid, accID
			}
		case <-guard:
			t.Fatalf("no session_closed with held results\n%s", b.logs)
		}
	}
}

// final waits for the task's final message.
func final(t *testing.T, b *brokerEnv, task *caller.Task) *wire.Envelope {
	t.Helper()
	msgs := collect(t, task, hangGuard)
	if len(msgs) == 0 {
		t.Fatalf("no final message\n%s", b.logs)
	}
	return msgs[len(msgs)-1]
}

// TestT4AccessApprovalThroughBroker is the T4 flow end to end: a caller
// submits a T4 task through RabbitMQ's TLS listener; the session ends and
// its results are held (access_pending, no task_completed); local reads
// are refused naming the command; bad input changes nothing; the agent is
// SIGKILLed while holding them, and after the restart an operator's
// approval through the CLI releases task_completed with the outputs to the
// caller, once. A second T4 task is denied: the caller gets task_failed
// access_denied with none of the data. Each decision and read is audited.
func TestT4AccessApprovalThroughBroker(t *testing.T) {
	t.Parallel()
	b, c := t4Broker(t)
	task, sid, accID := submitT4(t, b, c)

	list := b.mustCLI("access", "list", "--json")
	var pending []accessView
	if err := json.Unmarshal([]byte(list.stdout), &pending); err != nil || len(pending) != 1 || pending[0].ID != accID ||
		pending[0].SessionID != sid || pending[0].State != "pending" {
		t.Fatalf("access list: %s (%v)", list.stdout, err)
	}

	// Refusals: exit 1 (or 2 for usage), nothing changed.
	uri := "hcp://" + sid + "/artifacts/readings.json"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"artifact", "get", uri, "--operator", "olga", "-o", "-"}, exitFailure, "hcp-edge access approve " + accID},
		{[]string{"access", "approve", "acc-00000000", "--operator", "olga"}, exitFailure, "no such access request"},
		{[]string{"access", "approve", accID, "--operator", "mallory"}, exitFailure, "not one of agent.access_approvers"},
		{[]string{"access", "approve", accID}, exitUsage, "--operator NAME is required"},
		{[]string{"access", "deny", accID, "--operator", "olga"}, exitUsage, "--reason TEXT is required"},
		{[]string{"access", "approve", accID, "--operator", "olga", "--for", "-1h"}, exitUsage, "positive duration"},
	} {
		r := b.cli(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Fatalf("hcp-edge %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.want)
		}
	}
	if after := b.mustCLI("access", "list", "--json"); after.stdout != list.stdout {
		t.Fatalf("a refusal changed the request:\n%s\n%s", list.stdout, after.stdout)
	}

	// Killed while holding: the held results survive in the state file.
	b.kill()
	b.env = restartEnv(b.env)
	b.waitUplink("connected over TLS after the restart", func(u *uplinkStatus) bool { return u.Connected && u.TLS })
	if again := b.mustCLI("access", "list", "--json"); again.stdout != list.stdout {
		t.Fatalf("after the restart:\n%s\nbefore:\n%s", again.stdout, list.stdout)
	}

	ok := b.mustCLI("access", "approve", accID, "--operator", "olga", "--for", "1h")
	t.Logf("approve: %s", strings.TrimSpace(ok.stdout))
	fin := final(t, b, task)
	tc, err := fin.TaskCompleted()
	if err != nil || fin.SessionID.String() != sid || !strings.Contains(string(tc.Outputs), `"interlock"`) {
		t.Fatalf("after approval: %s %v\n%s", fin.Type, err, b.logs)
	}
	t.Logf("caller received task_completed of %s after the approval (%d bytes of outputs)", sid, len(tc.Outputs))

	// With the approval the access check passes: the read now fails only
	// because rig-status writes no artifact (and nothing is audited).
	if r := b.cli("artifact", "get", uri, "--operator", "olga", "-o", "-"); r.code != exitFailure || strings.Contains(r.stderr, "access approve") ||
		!strings.Contains(r.stderr, "has no artifact") {
		t.Fatalf("artifact get after approval: %d %q", r.code, r.stderr)
	}
	if r := b.cli("access", "deny", accID, "--operator", "olga", "--reason", "late"); r.code != exitFailure || !strings.Contains(r.stderr, "already decided") {
		t.Fatalf("deny after approve: %d %q", r.code, r.stderr)
	}

	// A withdrawal ends the release early: the reason is required, local
	// reads are refused from then on (audited), a second withdrawal is
	// refused.
	if r := b.cli("access", "withdraw", accID, "--operator", "olga"); r.code != exitUsage || !strings.Contains(r.stderr, "--reason TEXT is required") {
		t.Fatalf("withdraw without a reason: %d %q", r.code, r.stderr)
	}
	if r := b.mustCLI("access", "withdraw", accID, "--operator", "olga", "--reason", "released to the wrong project"); !strings.Contains(r.stdout, "withdrawn by olga") {
		t.Fatalf("withdraw: %q", r.stdout)
	}
	if r := b.cli("artifact", "get", uri, "--operator", "olga", "-o", "-"); r.code != exitFailure || !strings.Contains(r.stderr, "withdrawn by olga") {
		t.Fatalf("artifact get after the withdrawal: %d %q", r.code, r.stderr)
	}
	if r := b.cli("access", "withdraw", accID, "--operator", "olga", "--reason", "again"); r.code != exitFailure || !strings.Contains(r.stderr, "not an open release") {
		t.Fatalf("second withdrawal: %d %q", r.code, r.stderr)
	}

	// The deny case.
	task2, sid2, acc2 := submitT4(t, b, c)
	b.mustCLI("access", "deny", acc2, "--operator", "olga", "--reason", "export-controlled")
	fin2 := final(t, b, task2)
	tf, err := fin2.TaskFailed()
	if err != nil || fin2.SessionID.String() != sid2 || tf.ErrorCode != engine.ErrorAccessDenied || !strings.Contains(tf.ErrorMessage, "export-controlled") ||
		string(tf.PartialOutputs) != "{}" || len(tf.Artifacts) != 0 {
		t.Fatalf("after deny: %s %+v %v", fin2.Type, tf, err)
	}
	if r := b.cli("access", "approve", acc2, "--operator", "olga"); r.code != exitFailure || !strings.Contains(r.stderr, "already decided") {
		t.Fatalf("approve after deny: %d %q", r.code, r.stderr)
	}
	t.Logf("caller received task_failed %s: %s", tf.ErrorCode, tf.ErrorMessage)

	// The audit trail of both sessions.
	for _, x := range []struct{ sid, want string }{{sid, "access_approved"}, {sid, "access_withdrawn"}, {sid, "artifact_get refused"}, {sid2, "access_denied"}} {
		rep := b.mustCLI("audit", "replay", x.sid, "--json", "--operator", "olga")
		if !strings.Contains(rep.stdout, "access_requested") || !strings.Contains(rep.stdout, x.want) {
			t.Fatalf("audit replay of %s lacks the access decisions:\n%s", x.sid, rep.stdout)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}
