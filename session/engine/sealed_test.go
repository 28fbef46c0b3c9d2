package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/session/atrest"
	"hcp-edge/session/executor"
	"hcp-edge/session/gate"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

const (
	keyHexA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	keyHexB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
	// secretMark is in every checkpoint state of secretExec.
	secretMark = "T3-CONFIDENTIAL-RECIPE-STATE"
)

func atRestKey(t testing.TB, h string) *atrest.Key {
	t.Helper()
	k, err := atrest.ParseKey([]byte(h))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// protect makes the harness's gate offer prot and the engine hold key.
func protect(prot gate.Protection, key *atrest.Key) func(*Config) {
	return func(c *Config) {
		g, err := gate.New(gateConfig(), c.Registry, c.Store.Audit(), gate.Opts{Clock: attended, Protection: prot})
		if err != nil {
			panic(err)
		}
		c.Gate, c.AtRest = g, key
	}
}

var fullProtection = gate.Protection{UplinkTLS: true, AtRestKey: true}

// secretExec is slowExec whose checkpoint state carries secretMark.
type secretExec struct{ slowExec }

type secretState struct {
	Done int    `json:"done"`
	Mark string `json:"mark"`
}

func (x *secretExec) Plan(executor.Task) (executor.Recipe, error) {
	return &secretRecipe{slowRecipe{x: &x.slowExec}}, nil
}
func (x *secretExec) Resume(_ executor.Task, st []byte) (executor.Recipe, int, error) {
	var s secretState
	if err := json.Unmarshal(st, &s); err != nil || s.Mark != secretMark {
		return nil, 0, errors.New("not a secretExec state")
	}
	return &secretRecipe{slowRecipe{x: &x.slowExec, done: s.Done}}, s.Done, nil
}

type secretRecipe struct{ slowRecipe }

func (r *secretRecipe) State() ([]byte, error) {
	return json.Marshal(secretState{Done: r.done, Mark: secretMark})
}

// sealedHarnessAt is fakeHarnessAt with secretExec for leak-check.
func sealedHarnessAt(t *testing.T, path string, steps int, d time.Duration, mod func(*Config)) *harness {
	t.Helper()
	execs := []executor.Executor{&secretExec{slowExec{name: "leak-check", steps: steps, d: d}},
		&slowExec{name: "rig-status", steps: steps, d: d}, &slowExec{name: "cvd-material-synthesis", steps: steps, d: d}}
	return newHarness(t, path, &fakeRig{env: testEnvelope(t)}, 1, execs, func(c *Config) {
		c.Trips = func(context.Context) []string { return nil }
		if mod != nil {
			mod(c)
		}
	})
}

func TestNewRefusesKeyPromiseWithoutKey(t *testing.T) {
	dir := t.TempDir()
	h := sealedHarnessAt(t, filepath.Join(dir, "state.db"), 1, time.Millisecond, nil)
	cfg := h.cfg
	protect(fullProtection, nil)(&cfg)
	if _, err := New(cfg); !errors.Is(err, atrest.ErrNoKey) {
		t.Fatalf("New: %v", err)
	}
	// A key without the gate's promise is harmless (T3/T4 stay refused).
	protect(gate.Protection{UplinkTLS: true}, atRestKey(t, keyHexA))(&cfg)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Close()
}

// TestSealedRefusedUnprotected: without the key (or TLS) a T3/T4 task is
// forbidden, naming what is missing; T2 runs as before.
func TestSealedRefusedUnprotected(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prot    gate.Protection
		key     *atrest.Key
		missing string
	}{
		{"TLS, no key", gate.Protection{UplinkTLS: true}, nil, "no at-rest encryption key is configured"},
		{"key, no TLS", gate.Protection{AtRestKey: true}, atRestKey(t, keyHexA), "the broker uplink is not TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := sealedHarnessAt(t, "", 2, time.Millisecond, protect(tc.prot, tc.key))
			for _, class := range []string{"T3", "T4"} {
				res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, `{"data_classification":"`+class+`"}`))
				if res.SessionID != "" || len(res.Replies) != 1 {
					t.Fatalf("%s: %+v", class, res)
				}
				rej, err := res.Replies[0].TaskRejected()
				if err != nil || rej.ReasonCode != "forbidden" || !strings.HasSuffix(rej.ReasonMessage, ": "+tc.missing) {
					t.Fatalf("%s: %+v %v", class, rej, err)
				}
			}
			res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, `{"data_classification":"T2"}`))
			if res.Replies[0].Type != wire.TypeTaskAccepted {
				t.Fatalf("T2: %v", res.Replies[0].Type)
			}
			h.waitState(t, res.SessionID, lifecycle.Completed)
		})
	}
}

// noPlaintext checks, on h's closed state file, that session sid's newest
// checkpoint is sealed, opens with key to a payload holding secretMark,
// and that neither that payload nor the mark is anywhere in the file.
func noPlaintext(t *testing.T, h *harness, sid string, key *atrest.Key) {
	t.Helper()
	st := reopen(t, h.path)
	cp, ok, err := st.LastCheckpoint(context.Background(), sid)
	if err != nil || !ok || !cp.Sealed {
		t.Fatalf("last checkpoint %+v %v %v", cp, ok, err)
	}
	plain, err := cp.Open(sid, key)
	if err != nil {
		t.Fatal(err)
	}
	var p ckptPayload
	if err := json.Unmarshal(plain, &p); err != nil || !bytes.Contains(p.State, []byte(secretMark)) {
		t.Fatalf("payload %s: %v", plain, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	disk, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(disk, plain) || bytes.Contains(disk, []byte(secretMark)) {
		t.Fatal("the state file holds a T3 checkpoint payload in the clear")
	}
}

func reopen(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(path, store.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSealedCheckpointRecovery: a T3 session checkpoints sealed (the state
// file never holds the payload in the clear), and a restart with the key
// resumes it from its checkpoint to completion; without the key, or with
// another one, recovery fails it, naming the key problem.
func TestSealedCheckpointRecovery(t *testing.T) {
	ctx := context.Background()
	key := atRestKey(t, keyHexA)
	start := func(t *testing.T) (*harness, string) {
		h := sealedHarnessAt(t, "", 20, 10*time.Millisecond, protect(fullProtection, key))
		res := h.submit(t, "alpha", submitEnv(t, "leak-check", leakInputs, `{"data_classification":"T3"}`))
		acc, err := res.Replies[0].TaskAccepted()
		if err != nil || acc.DataClassification != "T3" {
			t.Fatalf("replies %+v %v", res.Replies, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if cp, ok, _ := h.st.LastCheckpoint(ctx, res.SessionID); ok && cp.Seq > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no checkpoint")
			}
			time.Sleep(5 * time.Millisecond)
		}
		h.close()
		noPlaintext(t, h, res.SessionID, key)
		return h, res.SessionID
	}
	failedWith := func(t *testing.T, h *harness, sid, want string) {
		t.Helper()
		h.waitState(t, sid, lifecycle.Failed)
		msgs := h.out.of(sid, nil)
		tf, err := msgs[len(msgs)-1].TaskFailed()
		if err != nil || tf.ErrorCode != string(executor.CodeInternal) || !strings.Contains(tf.ErrorMessage, want) {
			t.Fatalf("task_failed %+v %v, want %q", tf, err, want)
		}
	}

	t.Run("resumes with the key", func(t *testing.T) {
		h, sid := start(t)
		h2 := sealedHarnessAt(t, h.path, 20, 2*time.Millisecond, protect(fullProtection, key))
		recs, err := h2.e.Recover(ctx)
		if err != nil || len(recs) != 1 || recs[0].Decision.Action != ActResume || recs[0].Err != nil {
			t.Fatalf("recoveries %+v %v", recs, err)
		}
		h2.waitState(t, sid, lifecycle.Completed)
		msgs := h2.out.of(sid, nil)
		tc, err := msgs[len(msgs)-1].TaskCompleted()
		if err != nil {
			t.Fatalf("ended with %s", msgs[len(msgs)-1].Type)
		}
		var out struct{ Steps int }
		if json.Unmarshal(tc.Outputs, &out) != nil || out.Steps != 20 {
			t.Fatalf("outputs %s", tc.Outputs)
		}
		h2.close()
		noPlaintext(t, h2, sid, key)
	})
	t.Run("fails without a key", func(t *testing.T) {
		h, sid := start(t)
		h2 := sealedHarnessAt(t, h.path, 20, time.Millisecond, protect(gate.Protection{UplinkTLS: true}, nil))
		recs, err := h2.e.Recover(ctx)
		if err != nil || len(recs) != 1 || recs[0].Decision.Action != ActFail {
			t.Fatalf("recoveries %+v %v", recs, err)
		}
		failedWith(t, h2, sid, "no at-rest key is configured")
	})
	t.Run("fails with another key", func(t *testing.T) {
		h, sid := start(t)
		other := atRestKey(t, keyHexB)
		h2 := sealedHarnessAt(t, h.path, 20, time.Millisecond, protect(fullProtection, other))
		if _, err := h2.e.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		failedWith(t, h2, sid, "sealed under key "+key.ID()+", the key at hand is "+other.ID())
	})
}

// TestSimSealedEndToEnd: a T3 MoS2 synthesis on the simulated rig, with a
// TLS uplink and an at-rest key, completes; its artifacts on disk are
// sealed, open to bytes matching the size and sha256 task_completed
// reports, and its checkpoints are sealed. With AtRestKey false the same
// task is refused.
func TestSimSealedEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end against the simulator")
	}
	t.Parallel() // its own rig and state: runs beside the other whole-recipe tests
	key := atRestKey(t, keyHexA)
	h, b := simHarness(t, protect(fullProtection, key))
	ctx := context.Background()
	env := submitEnv(t, "cvd-material-synthesis", cvdInputs, strings.Replace(seedConstraints, `"T2"`, `"T3"`, 1))
	res := h.submit(t, "alpha", env)
	ev, err := res.Replies[0].Event()
	if err != nil || ev.EventType != EventApprovalPending {
		t.Fatalf("replies %+v %v", res.Replies, err)
	}
	if err := h.e.Approve(ctx, res.SessionID, "olga"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, res.SessionID, lifecycle.Completed)
	msgs := h.out.of(res.SessionID, res.Replies)
	tc, err := msgs[len(msgs)-1].TaskCompleted()
	if err != nil {
		t.Fatalf("last message %s: %v", msgs[len(msgs)-1].Type, err)
	}
	if len(tc.Artifacts) != 5 { // spectrum (JSON and JCAMP-DX), growth log and their two SVG plots
		t.Fatalf("artifacts %+v", tc.Artifacts)
	}
	for _, a := range tc.Artifacts {
		name := strings.TrimPrefix(a.URI, "hcp://"+res.SessionID+"/artifacts/")
		disk, err := os.ReadFile(filepath.Join(h.cfg.StateDir, "artifacts", res.SessionID, name))
		if err != nil {
			t.Fatal(err)
		}
		if !atrest.IsSealed(disk) {
			t.Fatalf("%s is not sealed", name)
		}
		plain, err := key.Open(disk, atrest.ArtifactBinding(res.SessionID, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sum := sha256.Sum256(plain)
		if a.SizeBytes != int64(len(plain)) || a.Checksum != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("artifact %+v does not describe its plaintext (%d bytes)", a, len(plain))
		}
		// The plaintext is what the run produced; none of it is on disk.
		head := map[string]string{"raman_raw.json": `{"acquired_at"`, "raman_spectrum.jdx": "##TITLE=", "growth_log.csv": "elapsed_seconds,stage,",
			"raman_spectrum.svg": "<?xml", "process_profile.svg": "<?xml"}[name]
		if head == "" || !bytes.HasPrefix(plain, []byte(head)) || bytes.Contains(disk, []byte(head)) {
			t.Fatalf("%s: plaintext %.40q", name, plain)
		}
		if _, err := key.Open(disk, atrest.ArtifactBinding("another-session", name)); !errors.Is(err, atrest.ErrTampered) {
			t.Fatalf("%s opened for another session: %v", name, err)
		}
	}
	if n := b.Audit.Count(envelope.Decision("refused")); n != 0 {
		t.Fatalf("%d refused actions", n)
	}
	// The checkpoints are sealed: the newest payload opens, and is nowhere
	// in the state file in the clear.
	cp, ok, err := h.st.LastCheckpoint(ctx, res.SessionID)
	if err != nil || !ok || !cp.Sealed {
		t.Fatalf("last checkpoint %+v %v %v", cp, ok, err)
	}
	plain, err := cp.Open(res.SessionID, key)
	if err != nil || len(plain) < 32 {
		t.Fatalf("checkpoint payload %q: %v", plain, err)
	}
	h.close()
	if disk, err := os.ReadFile(h.path); err != nil || bytes.Contains(disk, plain) {
		t.Fatalf("the state file holds the checkpoint payload in the clear (%v)", err)
	}

	// Without the at-rest key the same task is refused.
	h2, _ := fakeHarness(t, 1, time.Millisecond, protect(gate.Protection{UplinkTLS: true}, nil))
	rej, err := h2.submit(t, "alpha", env).Replies[0].TaskRejected()
	if err != nil || rej.ReasonCode != "forbidden" || !strings.Contains(rej.ReasonMessage, "no at-rest encryption key") {
		t.Fatalf("without the key: %+v %v", rej, err)
	}
}
