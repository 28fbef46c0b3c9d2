package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"hcp-edge/session/audit"
	"hcp-edge/session/engine"
	"hcp-edge/session/executor"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// betaClient starts a transport/caller client as harness-beta-002 (its
// own login and caller id, as configs/sim.yaml maps them), deleting its
// event queue before and after.
func (b *brokerEnv) betaClient(t *testing.T) *caller.Client {
	t.Helper()
	conn := amqptest.Dial(t, b.betaURL())
	del := func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(wire.EventQueuePrefix+amqptest.BetaID, false, false, false)
			_ = ch.Close()
		}
	}
	del()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "beta.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := caller.New(db, caller.Opts{URL: b.betaURL(), CallerID: amqptest.BetaID, CalleeID: b.calleeID,
		CalleeUser: amqptest.EdgeUser, ResubmitInterval: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = db.Close(); del() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.Supervisor().WaitConnected(ctx); err != nil {
		t.Fatalf("beta not connected: %v", err)
	}
	return c
}

// names lists the capability names of r, in order.
func names(r *wire.CapabilitiesResponse) []string {
	var out []string
	for _, o := range r.Capabilities {
		out = append(out, o.Capability.Name)
	}
	return out
}

// wantRefused fails unless err is a *caller.RefusedError with code.
func wantRefused(t *testing.T, err error, code string) {
	t.Helper()
	var re *caller.RefusedError
	if !errors.As(err, &re) || re.Code != code || !errors.Is(err, caller.ErrRefused) {
		t.Fatalf("err %v, want a refusal %s", err, code)
	}
	t.Logf("refused as expected: %v", err)
}

// TestCallersSeeAndFetch proves the extensions of docs/PROTOCOL-NOTES.md
// ("Discovery and artifact fetch") through the real broker, the daemon
// and the simulator, with configs/sim.yaml's gate as shipped:
// harness-alpha-001 discovers the three capabilities its ACL names and
// harness-beta-002 only rig-status, each with schemas and (physical ones)
// the safety envelope; alpha's leak-check gets a task_accepted carrying
// that same safety envelope; alpha fetches the session's SVG plot in 1 KiB
// chunks and verifies it against task_completed's checksum, while beta is
// refused forbidden and an unknown artifact or session not_found; after a
// restart with beta's login mapped to no caller, beta's discovery gets no
// answer.
func TestCallersSeeAndFetch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end through the real binary and broker")
	}
	b := newBrokerEnv(t)
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	alpha := b.client(nil)
	beta := b.betaClient(t)
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), hangGuard)
		t.Cleanup(cancel)
		return c
	}

	var discovered *wire.CapabilitiesResponse
	t.Run("discovery", func(t *testing.T) {
		t0 := time.Now()
		r, err := alpha.Capabilities(ctx(), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("alpha's discovery answered in %v", time.Since(t0).Round(time.Millisecond))
		discovered = r
		// sim.yaml's harness-alpha-001: the shipped recipes (MoS2, the H2/Ar
		// anneal, WS2 at R4) and the built-in capabilities.
		if got := strings.Join(names(r), ","); got != "cvd-material-synthesis,h2-anneal,leak-check,rig-status,ws2-sulfurization" {
			t.Fatalf("alpha discovers %s", got)
		}
		if r.CallerID != amqptest.AlphaID || r.CalleeID != b.calleeID || r.MaxRiskLevel != "R4" || r.MaxDataClassification != "T2" {
			t.Fatalf("alpha's answer: %+v", r)
		}
		for _, o := range r.Capabilities {
			d := o.Capability
			if d.Version != "1.0.0" || len(d.InputSchema) < 20 || len(d.OutputSchema) < 20 || !bytes.Contains(d.Safety, []byte(`"risk_ceiling"`)) {
				t.Fatalf("%s: declaration %s", d.Name, mustJSON(d))
			}
			physical := d.Name != executor.RigStatusName
			if (o.SafetyEnvelope != nil) != physical {
				t.Fatalf("%s: safety envelope %v", d.Name, o.SafetyEnvelope)
			}
		}
		se := r.Capabilities[0].SafetyEnvelope
		if sp := se.Parameters["furnace.setpoint"]; sp.Max == nil || *sp.Max != 1000 || sp.Unit != "celsius" || !sp.HardLimit {
			t.Fatalf("furnace.setpoint %+v", sp)
		}
		if se.EmergencyProcedures["estop"] != "safe_state" || se.EmergencyProcedures["over_temperature"] != "immediate_shutdown" {
			t.Fatalf("emergency_procedures %v", se.EmergencyProcedures)
		}

		rb, err := beta.Capabilities(ctx(), "")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(names(rb), ","); got != "rig-status" || rb.CallerID != amqptest.BetaID || rb.MaxRiskLevel != "R1" {
			t.Fatalf("beta discovers %s (%+v)", got, rb)
		}
		_, err = beta.Capabilities(ctx(), "cvd-material-synthesis")
		wantRefused(t, err, wire.ReasonNotFound)

		// The local verb prints the same from the configuration.
		out := b.mustCLI("capabilities", "--config", b.cfg, "--as", amqptest.AlphaUser, "--json").stdout
		var local wire.CapabilitiesResponse
		if err := json.Unmarshal([]byte(out), &local); err != nil {
			t.Fatalf("capabilities --json: %v\n%s", err, out)
		}
		if strings.Join(names(&local), ",") != strings.Join(names(r), ",") ||
			mustJSON(local.Capabilities[1].SafetyEnvelope) != mustJSON(r.Capabilities[1].SafetyEnvelope) {
			t.Fatalf("hcp-edge capabilities differs from discovery:\n%s", out)
		}
	})

	b.arm()
	var completed *wire.TaskCompleted
	var sid string
	t.Run("safety_envelope in task_accepted", func(t *testing.T) {
		task, err := alpha.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.LeakCheckName, CallerID: b.callerID,
			Intent: "leak check for the wire test", Inputs: json.RawMessage(`{"max_rate_of_rise_pa_per_min":10,"hold_seconds":30}`)})
		if err != nil {
			t.Fatal(err)
		}
		msgs := collect(t, task, brokerLongGuard)
		acc, err := msgs[0].TaskAccepted()
		if err != nil {
			t.Fatalf("first message %s: %v", msgs[0].Type, err)
		}
		sid = msgs[0].SessionID.String()
		if acc.SafetyEnvelope == nil || len(acc.SafetyEnvelope.Parameters) == 0 || len(acc.SafetyEnvelope.ProhibitedActions) == 0 {
			t.Fatalf("task_accepted without a safety envelope: %s", mustEncode(msgs[0]))
		}
		var leakOffer *wire.CapabilityOffer
		if discovered != nil {
			for i, o := range discovered.Capabilities {
				if o.Capability.Name == executor.LeakCheckName {
					leakOffer = &discovered.Capabilities[i]
				}
			}
		}
		if leakOffer != nil && mustJSON(acc.SafetyEnvelope) != mustJSON(leakOffer.SafetyEnvelope) {
			t.Fatalf("task_accepted's safety_envelope differs from the one discovered for leak-check:\n%s", mustEncode(msgs[0]))
		}
		if completed, err = msgs[len(msgs)-1].TaskCompleted(); err != nil {
			t.Fatalf("final %s: %v", msgs[len(msgs)-1].Type, err)
		}
	})
	if completed == nil || len(completed.Artifacts) == 0 {
		t.Fatalf("no artifacts to fetch: %+v", completed)
	}

	t.Run("artifact fetch", func(t *testing.T) {
		a := completed.Artifacts[0]
		var buf bytes.Buffer
		t0 := time.Now()
		got, err := alpha.FetchArtifactWith(ctx(), a.URI, &buf, caller.FetchOpts{ChunkSize: 1024, Checksum: a.Checksum})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(t0)
		onDisk, err := os.ReadFile(filepath.Join(b.dir, "artifacts", sid, strings.TrimPrefix(a.URI, "hcp://"+sid+"/artifacts/")))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), onDisk) || got.SizeBytes != a.SizeBytes || got.Checksum != a.Checksum || got.Chunks < 2 {
			t.Fatalf("fetched %+v (%d bytes), task_completed lists %+v", got, buf.Len(), a)
		}
		t.Logf("fetched %s: %d bytes in %d chunks of 1 KiB in %v (%.1f ms a chunk), sha256 verified", a.Name, got.SizeBytes, got.Chunks,
			took.Round(time.Millisecond), float64(took.Microseconds())/1000/float64(got.Chunks))
		buf.Reset()
		if got, err = alpha.FetchArtifact(ctx(), a.URI, &buf); err != nil || got.Chunks != 1 || !bytes.Equal(buf.Bytes(), onDisk) {
			t.Fatalf("default chunks: %+v %v", got, err)
		}

		_, err = beta.FetchArtifact(ctx(), a.URI, io.Discard)
		wantRefused(t, err, wire.ReasonForbidden)
		_, err = alpha.FetchArtifact(ctx(), "hcp://"+sid+"/artifacts/no-such.svg", io.Discard)
		wantRefused(t, err, wire.ReasonNotFound)
		_, err = alpha.FetchArtifact(ctx(), "hcp://"+uuid.NewString()+"/artifacts/leak_check.svg", io.Discard)
		wantRefused(t, err, wire.ReasonNotFound)
		// The refusal of another's fetch is in the session's audit trail.
		if rep := b.mustCLI("audit", "replay", sid, "--json", "--operator", "olga").stdout; !strings.Contains(rep, "artifact_fetch") ||
			!strings.Contains(rep, "refused") || !strings.Contains(rep, amqptest.BetaID) {
			t.Fatalf("audit replay lacks beta's refused fetch:\n%s", rep)
		}
	})

	t.Run("unknown harness", func(t *testing.T) {
		if err := b.stop(); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, b.logs)
		}
		cfg, err := os.ReadFile(b.cfg)
		if err != nil {
			t.Fatal(err)
		}
		mapping := fmt.Sprintf("    %s: %s\n", amqptest.BetaUser, amqptest.BetaID)
		if !strings.Contains(string(cfg), mapping) {
			t.Fatal("fixture: sim.yaml does not map " + amqptest.BetaUser)
		}
		if err := os.WriteFile(b.cfg, []byte(strings.Replace(string(cfg), mapping, "", 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		e2 := *b.env // a daemon of its own for the cleanup to stop
		e2.stopped = false
		e2.start()
		e2.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
		qctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		r, err := beta.Capabilities(qctx, "")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("an unmapped login got %+v, %v; want no answer", r, err)
		}
		if _, err := alpha.Capabilities(ctx(), executor.RigStatusName); err != nil {
			t.Fatalf("alpha after the restart: %v", err)
		}
		if err := e2.stop(); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, e2.logs)
		}
		if !strings.Contains(e2.logs.String(), "capabilities_request of a broker user mapped to no caller") {
			t.Fatalf("the daemon did not log the unmapped request:\n%s", e2.logs)
		}
		// Beta's refused discovery (not_found, in the discovery subtest) is
		// in the audit log, with the caller the broker login maps to.
		found := false
		for _, e := range e2.auditTail(500) {
			if e.Kind == audit.KindDiscovery && strings.Contains(e.Detail, `"caller":"`+amqptest.BetaID+`"`) &&
				strings.Contains(e.Detail, `"refused":"`+wire.ReasonNotFound+`"`) && strings.Contains(e.Detail, `"capability":"cvd-material-synthesis"`) {
				found = true
			}
		}
		if !found {
			t.Fatal("beta's refused capabilities_request is not in the audit log")
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestT4ArtifactFetchThroughBroker: a T4 leak-check through RabbitMQ's TLS
// listener (t4Broker: at-rest key, alpha allowed T4) holds its results;
// fetching its plot over the broker is refused access_required until an
// operator approves access, then the caller fetches the plaintext of the
// sealed file in chunks, verified against task_completed's checksum, and
// the read is audited with the approval.
func TestT4ArtifactFetchThroughBroker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end through the real binary and broker")
	}
	b, c := t4Broker(t)
	b.arm()
	task, sid, accID := heldT4LeakCheck(t, b, c)
	cctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	uri := "hcp://" + sid + "/artifacts/leak_check.svg"
	_, err := c.FetchArtifact(cctx, uri, io.Discard)
	wantRefused(t, err, wire.ReasonAccessRequired)
	checkT4Export(t, b.env, sid, false) // export_test.go: refused before the release

	b.mustCLI("access", "approve", accID, "--operator", "olga", "--for", "1h")
	checkT4Export(t, b.env, sid, true)
	tc, err := final(t, b, task).TaskCompleted()
	if err != nil || len(tc.Artifacts) == 0 || tc.Artifacts[0].URI != uri {
		t.Fatalf("after approval: %+v %v", tc, err)
	}
	a := tc.Artifacts[0]
	var buf bytes.Buffer
	got, err := c.FetchArtifactWith(cctx, a.URI, &buf, caller.FetchOpts{ChunkSize: 1024, Checksum: a.Checksum})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := os.ReadFile(filepath.Join(b.dir, "artifacts", sid, "leak_check.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if got.SizeBytes != a.SizeBytes || got.Chunks < 2 || !bytes.Contains(buf.Bytes(), []byte("<svg")) || bytes.Contains(sealed, []byte("<svg")) {
		t.Fatalf("fetched %+v: %.40q; sealed file %.40q", got, buf.Bytes(), sealed)
	}
	t.Logf("fetched the sealed %s of a T4 session as plaintext: %d bytes in %d chunks, sha256 verified", a.Name, got.SizeBytes, got.Chunks)
	rep := b.mustCLI("audit", "replay", sid, "--json", "--operator", "olga").stdout
	if !strings.Contains(rep, "artifact_fetch") || !strings.Contains(rep, "caller "+b.callerID) || !strings.Contains(rep, accID) {
		t.Fatalf("audit replay lacks the fetch with its approval:\n%s", rep)
	}
}

// heldT4LeakCheck submits a T4 leak check through c on b's armed rig and
// waits for its results to be held: the task, its session id and the
// access request's id from access_pending.
func heldT4LeakCheck(t *testing.T, b *brokerEnv, c *caller.Client) (*caller.Task, string, string) {
	t.Helper()
	task, err := c.Submit(context.Background(), &wire.TaskSubmit{Capability: executor.LeakCheckName, Intent: "leak check, T4",
		Inputs: json.RawMessage(`{"max_rate_of_rise_pa_per_min":10,"hold_seconds":30}`), Constraints: &wire.Constraints{DataClassification: "T4"}})
	if err != nil {
		t.Fatal(err)
	}
	var sid, accID string
	guard := time.After(brokerLongGuard)
	for sid == "" || accID == "" {
		select {
		case m, ok := <-task.Messages():
			if !ok {
				t.Fatalf("the task ended before its results were held\n%s", b.logs)
			}
			if m.Type == wire.TypeTaskAccepted {
				sid = m.SessionID.String()
			}
			if ev, err := m.Event(); err == nil && ev.EventType == engine.EventAccessPending {
				var d struct {
					Details struct {
						AccessID string `json:"access_id"`
					} `json:"details"`
				}
				_ = json.Unmarshal(ev.Data, &d)
				accID = d.Details.AccessID
			}
		case <-guard:
			t.Fatalf("no access_pending\n%s", b.logs)
		}
	}
	return task, sid, accID
}
