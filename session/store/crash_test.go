package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"hcp-edge/session/lifecycle"
)

const (
	envCrashFile = "HCP_STORE_CRASH_FILE"
	envCrashSeed = "HCP_STORE_CRASH_SEED"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envCrashFile); path != "" {
		seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
		if err := crashChild(path, seed); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// step drives session id one random step forward.
func step(ctx context.Context, s *Store, r *rand.Rand, sess Session) error {
	id := sess.ID
	to := func(st lifecycle.State, reason string) error {
		_, _, err := s.Transition(ctx, id, Change{To: st, Reason: reason})
		return err
	}
	switch sess.State {
	case lifecycle.Pending:
		if r.IntN(10) == 0 {
			return to(lifecycle.Rejected, "risk_too_high")
		}
		_, _, err := s.Transition(ctx, id, Change{To: lifecycle.Running, Reason: "approved",
			After:  []Emit{{lifecycle.EventSessionCreated, map[string]any{"state": "RUNNING", "risk_level": "R4"}}},
			Update: func(x *Session) { x.Token, x.RiskLevel = "tok-"+id, "R4" }})
		return err
	case lifecycle.Running:
		switch n := r.IntN(20); {
		case n < 8:
			_, err := s.Append(ctx, id, Emit{lifecycle.EventProgress, map[string]any{"stage": "grow", "percent": r.IntN(100)}})
			return err
		case n < 14:
			payload := make([]byte, 64+r.IntN(256))
			_, _, err := s.Checkpoint(ctx, id, NewCheckpoint{Description: "step", Resumable: true, Step: "grow", Payload: payload})
			return err
		case n < 16:
			return to(lifecycle.Paused, "operator")
		case n < 17:
			return to(lifecycle.Aborting, "abort")
		case n < 18:
			_, _, err := s.Transition(ctx, id, Change{To: lifecycle.Failed, Reason: "execution_error",
				Before: []Emit{{lifecycle.EventError, map[string]any{"code": "execution_error", "recoverable": false}}}})
			return err
		default:
			return to(lifecycle.Completed, "done")
		}
	case lifecycle.Paused:
		if r.IntN(4) == 0 {
			return to(lifecycle.Aborting, "abort while paused")
		}
		_, _, err := s.Transition(ctx, id, Change{To: lifecycle.Running, Reason: "resume", Checkpoint: &NewCheckpoint{Resumable: true}})
		return err
	case lifecycle.Aborting:
		return to(lifecycle.Aborted, "cleanup done")
	}
	return fmt.Errorf("step in %s", sess.State)
}

// crashChild works on the file until it is killed: it recovers the active
// sessions left by its predecessor, then runs up to four sessions at a time
// through random paths.
func crashChild(path string, seed uint64) error {
	ctx := context.Background()
	opts := DefaultOpts()
	opts.Timeout = 5 * time.Second
	s, err := Open(path, opts)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	active, err := s.Sessions(ctx, true)
	if err != nil {
		return err
	}
	for _, sess := range active {
		if sess.State == lifecycle.Running || sess.State == lifecycle.Paused {
			if _, _, err := s.Recovered(ctx, sess.ID); err != nil {
				return err
			}
		}
	}
	ids := make([]string, 0, len(active)+4)
	for _, sess := range active {
		ids = append(ids, sess.ID)
	}
	ready := false
	for n := 0; ; n++ {
		if len(ids) < 4 {
			id := fmt.Sprintf("run%d-%d", seed, n)
			if _, _, err := s.Create(ctx, Session{ID: id, Capability: "cvd-material-synthesis", CapabilityVersion: "1.0.0"}); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		i := r.IntN(len(ids))
		sess, err := s.Session(ctx, ids[i])
		if err != nil {
			return err
		}
		if err := step(ctx, s, r, sess); err != nil {
			return err
		}
		if sess, err = s.Session(ctx, ids[i]); err != nil {
			return err
		}
		if sess.State.Terminal() {
			ids = append(ids[:i], ids[i+1:]...)
		}
		if !ready {
			fmt.Println("ready")
			ready = true
		}
	}
}

func TestCrashRecovery(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 5
	}
	path := filepath.Join(t.TempDir(), "state.db")
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	committed := map[string]uint64{} // LastSeq seen after each run: never goes back
	for run := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envCrashFile+"="+path, fmt.Sprintf("%s=%d", envCrashSeed, run))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		readyc := make(chan error, 1)
		go func() {
			line, err := bufio.NewReader(out).ReadString('\n')
			if err == nil && line != "ready\n" {
				err = fmt.Errorf("child said %q", line)
			}
			readyc <- err
		}()
		select {
		case err := <-readyc:
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("run %d: child: %v", run, err)
			}
		case <-time.After(30 * time.Second): // hang guard only
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run %d: child never ready", run)
		}
		d := time.Duration(r.IntN(60_000)) * time.Microsecond
		time.Sleep(d)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("run %d: kill: %v", run, err)
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: child ended by itself: %v", run, err)
		}
		t.Logf("run %d: SIGKILL %v after ready", run, d)

		opts := DefaultOpts()
		s, err := Open(path, opts)
		if err != nil {
			t.Fatalf("run %d: reopen after SIGKILL: %v", run, err)
		}
		if err := s.Check(context.Background()); err != nil {
			s.Close()
			t.Fatalf("run %d: %v", run, err)
		}
		all, err := s.Sessions(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		for _, sess := range all {
			if sess.LastSeq < committed[sess.ID] {
				t.Fatalf("run %d: session %s went back from %d to %d", run, sess.ID, committed[sess.ID], sess.LastSeq)
			}
			committed[sess.ID] = sess.LastSeq
		}
		n, err := s.Audit().Verify(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("run %d: killed after %v: %d sessions, %d audit entries, consistent", run, d, len(all), n)
	}
}
