package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"hcp-edge/device/devicetest"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// pikaResult is what testdata/pika/caller.py prints.
type pikaResult struct {
	Login           string          `json:"login"`
	Queue           string          `json:"queue"`
	SubmitMessageID string          `json:"submit_message_id"`
	Answer          string          `json:"answer"`
	InReplyTo       *string         `json:"in_reply_to"`
	SessionID       string          `json:"session_id"`
	Sequences       []uint64        `json:"sequences"`
	EventTypes      []string        `json:"event_types"`
	Messages        int             `json:"messages"`
	Deliveries      int             `json:"deliveries"`
	Redelivered     int             `json:"redelivered"`
	Duplicates      int             `json:"duplicates"`
	Violations      []string        `json:"violations"`
	PublisherUsers  []string        `json:"publisher_user_ids"`
	Final           json.RawMessage `json:"final"`
	Error           string          `json:"error"`
}

// TestPikaCallerHarness: a caller harness written with pika from the L1
// text alone (testdata/pika/caller.py) submits rig-status through the
// broker as harness-alpha-001 to the daemon, follows its queue to the end
// and prints what it saw: L1's properties and routing keys hold on every
// message, the answer names the submit, the events are numbered from 1
// without a gap, and the final task_completed decodes strictly here.
func TestPikaCallerHarness(t *testing.T) {
	t.Parallel()
	py := devicetest.PythonImport(t, "pika", "python3-pika")
	b := newBrokerEnv(t)
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "pika", "caller.py"),
		"--url", b.alphaURL(), "--callee", b.calleeID, "--caller", b.callerID,
		"--capability", "rig-status", "--inputs", `{"include":["furnace","interlock"]}`, "--timeout", "60")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	runErr := cmd.Run()
	t.Logf("pika caller: %v after %v", runErr, time.Since(t0).Round(time.Millisecond))
	var res pikaResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("pika caller output: %v (run: %v)\nstdout:\n%s\nstderr:\n%s", err, runErr, out.String(), errb.String())
	}
	if runErr != nil || res.Error != "" {
		t.Fatalf("pika caller: %v %s\n%s\nstderr:\n%s", runErr, res.Error, out.String(), errb.String())
	}
	if len(res.Violations) > 0 {
		t.Fatalf("L1 deviations seen by the pika caller: %q", res.Violations)
	}
	if res.Login != amqptest.AlphaUser || res.Queue != "hcp.evt."+b.callerID {
		t.Fatalf("login %q queue %q", res.Login, res.Queue)
	}
	if res.Answer != string(wire.TypeTaskAccepted) || res.InReplyTo == nil || *res.InReplyTo != res.SubmitMessageID {
		t.Fatalf("answer %s in reply to %v, want task_accepted for %s", res.Answer, res.InReplyTo, res.SubmitMessageID)
	}
	if len(res.PublisherUsers) != 1 || res.PublisherUsers[0] != amqptest.EdgeUser {
		t.Fatalf("publisher user_ids %q, want the callee's login only", res.PublisherUsers)
	}
	if len(res.Sequences) == 0 {
		t.Fatal("no events")
	}
	for i, s := range res.Sequences {
		if s != uint64(i+1) {
			t.Fatalf("sequences %v: not contiguous from 1", res.Sequences)
		}
	}
	// The final message, decoded strictly by our side.
	fin, err := wire.Decode(res.Final)
	if err != nil {
		t.Fatalf("final message: %v\n%s", err, res.Final)
	}
	tc, err := fin.TaskCompleted()
	if err != nil {
		t.Fatalf("final %s: %v\n%s", fin.Type, err, res.Final)
	}
	var outputs map[string]any
	if err := json.Unmarshal(tc.Outputs, &outputs); err != nil || outputs["taken_at"] == nil {
		t.Fatalf("outputs %s: %v", tc.Outputs, err)
	}
	if fin.SessionID == nil || fin.SessionID.String() != res.SessionID {
		t.Fatalf("final of session %v, answer named %s", fin.SessionID, res.SessionID)
	}
	t.Logf("pika caller: %d messages, events %v (%v), %d deliveries, %d redelivered, %d duplicates",
		res.Messages, res.Sequences, res.EventTypes, res.Deliveries, res.Redelivered, res.Duplicates)
	// The daemon's view: one completed session of the caller, by its login.
	done := b.waitSession("completed", func(s sessionView) bool { return s.ID == res.SessionID && s.State == "COMPLETED" })
	if done.Caller != b.callerID || done.Capability != "rig-status" {
		t.Fatalf("session %+v", done)
	}
	b.waitUplink("drained", func(u *uplinkStatus) bool { return u.Backlog == 0 })
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
}
