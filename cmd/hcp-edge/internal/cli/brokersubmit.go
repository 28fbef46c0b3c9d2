package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/engine"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// brokerAnswerWait bounds, without --watch, the wait for the callee's first
// answer (task_accepted, task_rejected or approval_pending).
const brokerAnswerWait = 60 * time.Second

// brokerSubmitOpts are the flags of submit --broker.
type brokerSubmitOpts struct {
	URL      string // the caller's broker login, amqp:// or amqps://
	CalleeID string // hcp.cmd.{callee_id}
	// CalleeUser is the callee's broker user: only its messages are
	// accepted ("": the callee id).
	CalleeUser string
	CA, Cert   string // amqps:// only
	Key        string
	State      string // the caller's state file ("": a temporary one)
	Watch      bool
}

// defaultCalleeID is $HCP_CALLEE_ID, else rigconfig.DefaultCalleeID.
func defaultCalleeID() string {
	if c := os.Getenv("HCP_CALLEE_ID"); c != "" {
		return c
	}
	return rigconfig.DefaultCalleeID
}

// brokerSubmit is submit --broker: the task goes through the broker as the
// caller its payload names (the URL's login must map to it in the callee's
// gate), with transport/caller (republished with the same message_id
// until answered; events de-duplicated and in sequence order).
func brokerSubmit(ctx context.Context, env *wire.Envelope, o brokerSubmitOpts, stdout, stderr io.Writer) int {
	ts, err := env.TaskSubmit()
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge submit: %v\n", err)
		return ExitUsage
	}
	state := o.State
	if state == "" {
		dir, err := os.MkdirTemp("", "hcp-edge-submit-")
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge submit: %v\n", err)
			return ExitFailure
		}
		defer os.RemoveAll(dir)
		state = filepath.Join(dir, "caller.db")
	}
	db, err := bolt.Open(state, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge submit: caller state %s: %v\n", state, err)
		return ExitFailure
	}
	defer db.Close()
	// approval_pending comes before task_accepted, so the client does not
	// know its session yet and hands it to Unclaimed.
	early := make(chan *wire.Envelope, 64)
	t0 := time.Now()
	// --broker may list a cluster's endpoints, comma-separated.
	urls := strings.Split(o.URL, ",")
	c, err := caller.New(db, caller.Opts{URL: urls[0], URLs: urls[1:], CallerID: ts.CallerID, CalleeID: o.CalleeID,
		CalleeUser: o.CalleeUser,
		TLS:        tlsOf(o),
		// Warnings too: a delivery dropped because someone else published it,
		// and an event queue reused as it is, are for the operator to see.
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Unclaimed: func(e *wire.Envelope) {
			if ev, err := e.Event(); err == nil && ev.EventType == engine.EventApprovalPending && !e.Timestamp.Before(t0.Add(-time.Second)) {
				select {
				case early <- e:
				default:
				}
			}
		}})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge submit: broker: %v\n", err)
		return ExitFailure
	}
	defer c.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = c.Supervisor().WaitConnected(wctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge submit: broker %s does not answer (%s): %v\n", redactURL(o.URL), c.Supervisor().State().LastError, err)
		return ExitFailure
	}
	task, err := c.Submit(ctx, ts)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge submit: %v\n", err)
		return ExitFailure
	}
	if !o.Watch {
		return brokerAnswer(ctx, task, early, stdout, stderr)
	}
	pr := newProgress(stderr)
	for {
		select {
		case <-ctx.Done():
			pr.clear()
			fmt.Fprintln(stderr, "hcp-edge submit: stopped watching; the session goes on")
			return ExitFailure
		case e := <-early:
			pr.show(json.RawMessage(reply.Encode(e)))
			if a := reply.ApprovalID(e); a != "" {
				pr.clear()
				fmt.Fprintf(stderr, "waiting for approval: hcp-edge approve %s --operator NAME (on the agent)\n", a)
			}
		case m, ok := <-task.Messages():
			if !ok {
				pr.clear()
				fin := task.Final()
				if fin == nil {
					fmt.Fprintln(stderr, "hcp-edge submit: the stream ended without a final message")
					return ExitFailure
				}
				var v any
				_ = json.Unmarshal(reply.Encode(fin), &v)
				printJSON(stdout, v)
				fmt.Fprintf(stderr, "%s\n", summarize(fin))
				if fin.Type == wire.TypeTaskCompleted {
					return ExitOK
				}
				return ExitFailure
			}
			if m != task.Final() {
				pr.show(json.RawMessage(reply.Encode(m)))
			}
		}
	}
}

// brokerAnswer waits for the first answer and prints it like submit
// without --watch does.
func brokerAnswer(ctx context.Context, task *caller.Task, early <-chan *wire.Envelope, stdout, stderr io.Writer) int {
	timeout := time.NewTimer(brokerAnswerWait)
	defer timeout.Stop()
	var out reply.Submit
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "hcp-edge submit: interrupted before an answer")
		return ExitFailure
	case <-timeout.C:
		fmt.Fprintf(stderr, "hcp-edge submit: no answer within %v (the task_submit waits in hcp.cmd queue)\n", brokerAnswerWait)
		return ExitFailure
	case e := <-early:
		out.SessionID = e.SessionID.String()
		out.ApprovalID = reply.ApprovalID(e)
		out.Replies = append(out.Replies, json.RawMessage(reply.Encode(e)))
	case m, ok := <-task.Messages():
		if !ok {
			fmt.Fprintln(stderr, "hcp-edge submit: closed before an answer")
			return ExitFailure
		}
		if m.SessionID != nil {
			out.SessionID = m.SessionID.String()
		}
		out.Replies = append(out.Replies, json.RawMessage(reply.Encode(m)))
		if m.Type == wire.TypeTaskRejected {
			printJSON(stdout, out)
			return ExitFailure
		}
	}
	printJSON(stdout, out)
	if out.ApprovalID != "" {
		fmt.Fprintf(stderr, "session %s waits for approval: hcp-edge approve %s --operator NAME\n", out.SessionID, out.ApprovalID)
	}
	return ExitOK
}

func tlsOf(o brokerSubmitOpts) tamqp.TLSConfig {
	return tamqp.TLSConfig{CAFile: o.CA, CertFile: o.Cert, KeyFile: o.Key}
}

// redactURL hides the password of a broker URL (or of each of a
// comma-separated list).
func redactURL(u string) string {
	return rigconfig.AMQP{URLs: strings.Split(u, ",")}.RedactedURL()
}
