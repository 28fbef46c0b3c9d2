package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/session/atrest"
	"hcp-edge/session/budget"
	"hcp-edge/session/engine"
	"hcp-edge/transport/wire"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// sessionFlags are the flags every session command shares.
type sessionFlags struct {
	asJSON  *bool
	cfgPath *string
	sock    *string
}

func addSessionFlags(fs *flag.FlagSet) sessionFlags {
	return sessionFlags{asJSON: fs.Bool("json", false, "print JSON"), cfgPath: configFlag(fs), sock: socketFlag(fs)}
}

func (f sessionFlags) socket() string { return socketPath(*f.sock, *f.cfgPath) }

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Submit is `hcp-edge submit FILE`: a task_submit as the local operator,
// through the daemon or, with --broker, over the broker; --watch follows it.
func Submit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("submit"))
		fs.PrintDefaults()
	}
	watch := fs.Bool("watch", false, "follow the session to its end, then print its final message")
	var bo brokerSubmitOpts // brokersubmit.go
	fs.StringVar(&bo.URL, "broker", "", "submit through the HCP broker at this amqp:// or amqps:// URL (the caller's login); a cluster's endpoints comma-separated")
	fs.StringVar(&bo.CalleeID, "callee", defaultCalleeID(), "with --broker: the agent's callee id")
	fs.StringVar(&bo.CalleeUser, "callee-user", "", "with --broker: the agent's broker user; events and results published by anyone else are dropped (default: the callee id)")
	fs.StringVar(&bo.CA, "broker-ca", "", "with an amqps:// --broker: CA file")
	fs.StringVar(&bo.Cert, "broker-cert", "", "with an amqps:// --broker: client certificate file")
	fs.StringVar(&bo.Key, "broker-key", "", "with an amqps:// --broker: client key file")
	fs.StringVar(&bo.State, "broker-state", "", "with --broker: the caller's state file (default: a temporary one)")
	cfgPath := configFlag(fs)
	sock := socketFlag(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "hcp-edge submit: give exactly one FILE (\"-\" for standard input)")
		return ExitUsage
	}
	var data []byte
	if pos[0] == "-" {
		data, err = io.ReadAll(io.LimitReader(os.Stdin, control.MaxRequest))
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge submit: %v\n", err)
		return ExitUsage
	}
	env, err := wire.Decode(data)
	if err != nil || env.Type != wire.TypeTaskSubmit {
		if err == nil {
			err = fmt.Errorf("a %s message, not a task_submit", env.Type)
		}
		fmt.Fprintf(stderr, "hcp-edge submit: %s: %v\n", pos[0], err)
		return ExitUsage
	}
	if bo.URL != "" {
		bo.Watch = *watch
		return brokerSubmit(ctx, env, bo, stdout, stderr)
	}
	raw, _ := wire.Encode(env)
	path := socketPath(*sock, *cfgPath)
	req := control.Request{Op: control.OpSubmit, Task: raw, Watch: *watch}
	if !*watch {
		rep, ok := ask(ctx, "submit", path, req, stderr)
		if !ok {
			return ExitFailure
		}
		var r reply.Submit
		_ = json.Unmarshal(rep.Result, &r)
		printJSON(stdout, r)
		for _, m := range r.Replies {
			if e, err := wire.Decode(m); err == nil && e.Type == wire.TypeTaskRejected {
				return ExitFailure
			}
		}
		if r.ApprovalID != "" {
			fmt.Fprintf(stderr, "session %s waits for approval: hcp-edge approve %s --operator NAME\n", r.SessionID, r.ApprovalID)
		}
		return ExitOK
	}
	pr := newProgress(stderr)
	rep, err := control.Stream(ctx, path, req, 2*time.Second, pr.show)
	pr.clear()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			fmt.Fprintln(stderr, "hcp-edge submit: stopped watching; the session goes on (hcp-edge sessions; hcp-edge abort ID)")
		case errors.Is(err, control.ErrNoDaemon):
			_, _ = ask(ctx, "submit", path, control.Request{Op: control.OpStatus}, stderr) // explains the fix
		default:
			fmt.Fprintf(stderr, "hcp-edge submit: %v\n", err)
		}
		return ExitFailure
	}
	if !rep.OK {
		fmt.Fprintf(stderr, "hcp-edge submit: refused: %s\n", rep.Error)
		return ExitFailure
	}
	var final any
	_ = json.Unmarshal(rep.Result, &final)
	printJSON(stdout, final)
	fin, err := wire.Decode(rep.Result)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge submit: final message: %v\n", err)
		return ExitFailure
	}
	fmt.Fprintf(stderr, "%s\n", summarize(fin))
	if fin.Type == wire.TypeTaskCompleted {
		return ExitOK
	}
	return ExitFailure
}

// progress renders the messages of a watched session: in a terminal one
// live line (stage, percent, message) rewritten in place, with other
// events printed above it; otherwise one plain line per message.
type progress struct {
	w    io.Writer
	tty  bool
	live bool // a progress line is on screen
}

func newProgress(w io.Writer) *progress { return &progress{w: w, tty: isTerminal(w)} }

func (p *progress) clear() {
	if p.live {
		fmt.Fprint(p.w, "\r\033[K")
		p.live = false
	}
}

func (p *progress) show(raw json.RawMessage) {
	env, err := wire.Decode(raw)
	if err != nil {
		p.clear()
		fmt.Fprintf(p.w, "(undecodable message: %v)\n", err)
		return
	}
	if ev, err := env.Event(); err == nil && ev.EventType == "progress" {
		var d reply.Progress
		_ = json.Unmarshal(ev.Data, &d)
		pct := "   "
		if d.Percent != nil {
			pct = fmt.Sprintf("%3.0f%%", *d.Percent)
		}
		if p.tty {
			bar := progressBar(d.Percent, 20)
			line := fmt.Sprintf("%s %s %-12s %s", bar, pct, d.Stage, d.Message)
			if len(line) > 100 {
				line = line[:100]
			}
			fmt.Fprintf(p.w, "\r\033[K%s", line)
			p.live = true
			return
		}
		fmt.Fprintf(p.w, "#%d progress %s %s %s\n", ev.Sequence, d.Stage, strings.TrimSpace(pct), d.Message)
		return
	}
	p.clear()
	fmt.Fprintln(p.w, summarize(env))
}

func progressBar(pct *float64, width int) string {
	n := 0
	if pct != nil {
		n = int(*pct / 100 * float64(width))
	}
	n = max(0, min(n, width))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// summarize is one plain line about a message.
func summarize(env *wire.Envelope) string {
	switch env.Type {
	case wire.TypeEvent:
		ev, err := env.Event()
		if err != nil {
			return "event (undecodable)"
		}
		var d map[string]any
		_ = json.Unmarshal(ev.Data, &d)
		var parts []string
		for _, k := range []string{"from_state", "to_state", "state", "final_state", "reason", "code", "message", "checkpoint_id", "stage", "risk_level", "result_type"} {
			if v, ok := d[k]; ok {
				parts = append(parts, fmt.Sprintf("%s=%v", k, v))
			}
		}
		if ev.EventType == "approval_pending" {
			if det, ok := d["details"].(map[string]any); ok {
				parts = append(parts, fmt.Sprintf("approval_id=%v (hcp-edge approve %v --operator NAME)", det["approval_id"], det["approval_id"]))
			}
		}
		if ev.EventType == engine.EventAccessPending {
			if det, ok := d["details"].(map[string]any); ok {
				parts = append(parts, fmt.Sprintf("access_id=%v (hcp-edge access approve %v --operator NAME)", det["access_id"], det["access_id"]))
			}
		}
		return fmt.Sprintf("#%d %s %s", ev.Sequence, ev.EventType, strings.Join(parts, " "))
	case wire.TypeTaskAccepted:
		a, _ := env.TaskAccepted()
		if a != nil {
			return fmt.Sprintf("task_accepted: session %s, risk %s, data %s", env.SessionID, a.RiskLevel, a.DataClassification)
		}
	case wire.TypeTaskRejected:
		r, _ := env.TaskRejected()
		if r != nil {
			return fmt.Sprintf("task_rejected: %s: %s", r.ReasonCode, r.ReasonMessage)
		}
	case wire.TypeTaskCompleted:
		tc, _ := env.TaskCompleted()
		if tc == nil {
			break
		}
		var out map[string]any
		_ = json.Unmarshal(tc.Outputs, &out)
		var parts []string
		for _, k := range sortedKeys(out) {
			switch v := out[k].(type) {
			case string, float64, bool:
				parts = append(parts, fmt.Sprintf("%s=%v", k, v))
			}
		}
		return fmt.Sprintf("task_completed: session %s: %s; %d artifact(s)", env.SessionID, strings.Join(parts, " "), len(tc.Artifacts))
	case wire.TypeTaskFailed:
		f, _ := env.TaskFailed()
		if f != nil {
			return fmt.Sprintf("task_failed: %s: %s", f.ErrorCode, f.ErrorMessage)
		}
	}
	return string(env.Type)
}

// SessionOp is approve, deny, abort, pause and resume.
func SessionOp(ctx context.Context, op string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	type help struct{ usage, what, example string }
	h := map[string]help{
		control.OpApprove: {"approve ID --operator NAME", "Approves a session that waits for a human approval (ID: its approval id, apr-..., or its\nsession id). The session starts at once; the operator is recorded in the audited transition.", "hcp-edge approve apr-1a2b3c4d --operator olga"},
		control.OpDeny:    {"deny ID --operator NAME --reason TEXT", "Refuses a session that waits for approval: it is REJECTED (forbidden) and the caller gets\ntask_rejected with the reason. Operator and reason are recorded.", "hcp-edge deny apr-1a2b3c4d --operator olga --reason \"furnace booked for maintenance\""},
		control.OpAbort:   {"abort ID [--operator NAME] [--reason TEXT]", "Aborts a running or paused session: ABORTING, the recipe's cleanup drives the rig safe\n(bounded by the capability's abort_timeout, then the e-stop procedure), ABORTED. A session\nstill waiting for approval is rejected instead.", "hcp-edge abort 0b6f...e1 --reason \"wrong substrate loaded\""},
		control.OpPause:   {"pause ID --operator NAME", "Pauses a running session at its next step boundary: PAUSED, the rig holds as the last step\nleft it, until hcp-edge resume.", "hcp-edge pause 0b6f...e1 --operator olga"},
		control.OpResume:  {"resume ID --operator NAME", "Resumes a paused session (or cancels a pause not yet taken).", "hcp-edge resume 0b6f...e1 --operator olga"},
	}[op]
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hcp-edge %s [--json] [--socket PATH] [--config FILE]\n\n%s\n\nexit codes: 0 done; 1 refused (no such session, wrong state) or the daemon is down; 2 usage.\n\nexample:\n  %s\n\nflags:\n", h.usage, h.what, h.example)
		fs.PrintDefaults()
	}
	defOperator := ""
	if op == control.OpAbort {
		defOperator = operatorDefault()
	}
	operator := fs.String("operator", defOperator, "who does it (recorded)")
	reason := fs.String("reason", "", "why (deny: required; abort: optional)")
	sf := addSessionFlags(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "hcp-edge %s: give exactly one session or approval ID\n", op)
		return ExitUsage
	}
	if *operator == "" {
		fmt.Fprintf(stderr, "hcp-edge %s: --operator NAME is required\n", op)
		return ExitUsage
	}
	if op == control.OpDeny && *reason == "" {
		fmt.Fprintf(stderr, "hcp-edge deny: --reason TEXT is required (the caller reads it)\n")
		return ExitUsage
	}
	rep, ok := ask(ctx, op, sf.socket(), control.Request{Op: op, ID: pos[0], Operator: *operator, Reason: *reason}, stderr)
	if *sf.asJSON {
		printJSON(stdout, rep)
	} else if ok {
		var r reply.Op
		_ = json.Unmarshal(rep.Result, &r)
		fmt.Fprintln(stdout, r.Message)
	}
	if !ok {
		return ExitFailure
	}
	return ExitOK
}

// Sessions is `hcp-edge sessions`: state, capability, caller and progress.
func Sessions(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("sessions"))
		fs.PrintDefaults()
	}
	all := fs.Bool("all", false, "closed sessions too")
	sf := addSessionFlags(fs)
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge sessions: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	rep, ok := ask(ctx, "sessions", sf.socket(), control.Request{Op: control.OpSessions, All: *all}, stderr)
	if !ok {
		return ExitFailure
	}
	var list []reply.Session
	if err := json.Unmarshal(rep.Result, &list); err != nil {
		fmt.Fprintf(stderr, "hcp-edge sessions: bad reply: %v\n", err)
		return ExitFailure
	}
	if *sf.asJSON {
		if list == nil {
			list = []reply.Session{}
		}
		printJSON(stdout, list)
		return ExitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no sessions")
		return ExitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATE\tCAPABILITY\tCALLER\tRISK\tPROGRESS\tBUDGET\tAPPROVAL\tUPDATED")
	for _, s := range list {
		prog := "-"
		if p := s.Progress; p != nil {
			prog = p.Stage
			if p.Percent != nil {
				prog = fmt.Sprintf("%s %.0f%%", p.Stage, *p.Percent)
			}
		}
		apr := "-"
		if s.ApprovalID != "" {
			apr = s.ApprovalID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s@%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.State, s.Capability, s.Version, s.Caller, s.Risk,
			prog, budgetCell(s.Budgets), apr, s.UpdatedAt.Local().Format(time.DateTime))
	}
	_ = tw.Flush()
	for _, s := range list {
		if q := s.Question; q != nil {
			fmt.Fprintf(stdout, "\n%s asks at %s: %s\n  answer %s by %s (then the session aborts to a safe state):\n  hcp-edge answer %s %s VALUE\n",
				s.ID, q.CheckpointID, q.Question, q.Answer, q.Deadline.Local().Format(time.DateTime), s.ID, q.CheckpointID)
		}
	}
	return ExitOK
}

// budgetCell is the sessions column of a session's budgets: the budget
// nearest its limit and the share used ("gas_volume.H2 12%"); "-" without
// a live report or a limit.
func budgetCell(r *budget.Report) string {
	if r == nil {
		return "-"
	}
	if r.Exceeded != nil {
		return "EXCEEDED " + string(r.Exceeded.Budget) + " " + r.Exceeded.Gas
	}
	best, share := "", -1.0
	for _, l := range r.Lines {
		if l.Limit == nil || *l.Limit <= 0 || l.Budget == budget.WallTime {
			continue // the wall time is max_duration: the deadline enforces it
		}
		if f := l.Used / *l.Limit; f > share {
			best, share = string(l.Budget), f
			if l.Gas != "" {
				best += "." + l.Gas
			}
		}
	}
	if share < 0 {
		return "-"
	}
	return fmt.Sprintf("%s %.0f%%", best, 100*share)
}

// Artifact is `hcp-edge artifact get URI`: a copy verified against the
// recorded sha256 (opened with the at-rest key when sealed).
func Artifact(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "get" {
		return groupUsage(args, "usage: hcp-edge artifact get URI [-o FILE] [--json] [--key FILE]\n\nRun \"hcp-edge artifact get -h\" for the flags.\n", stdout, stderr)
	}
	fs := flag.NewFlagSet("artifact get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("artifact-get"))
		fs.PrintDefaults()
	}
	out := fs.String("o", "", "where to write it (default: its name in the current directory; - for standard output)")
	operator := fs.String("operator", operatorDefault(), "who reads it (recorded in the audit log for T2+ sessions)")
	keyFile := fs.String("key", "", "at-rest key file to decrypt a T3/T4 session's artifact (default: the daemon's agent.at_rest_key_file)")
	sf := addSessionFlags(fs)
	pos, err := parseArgs(fs, args[1:], stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "hcp-edge artifact get: give exactly one URI")
		return ExitUsage
	}
	if _, _, err := reply.ParseArtifactURI(pos[0]); err != nil {
		fmt.Fprintf(stderr, "hcp-edge artifact get: %v\n", err)
		return ExitUsage
	}
	rep, ok := ask(ctx, "artifact get", sf.socket(), control.Request{Op: control.OpArtifact, URI: pos[0], Operator: *operator}, stderr)
	if !ok {
		return ExitFailure
	}
	var a reply.Artifact
	if err := json.Unmarshal(rep.Result, &a); err != nil {
		fmt.Fprintf(stderr, "hcp-edge artifact get: bad reply: %v\n", err)
		return ExitFailure
	}
	dst := *out
	if dst == "" {
		dst = a.Name
	}
	n, sum, err := copyVerified(a, dst, stdout, *keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge artifact get: %v\n", err)
		return ExitFailure
	}
	if *sf.asJSON {
		printJSON(stdout, map[string]any{"uri": a.URI, "file": dst, "size_bytes": n, "checksum": sum, "verified": true})
	} else if dst != "-" {
		fmt.Fprintf(stdout, "%s: %d bytes, %s (verified)\n", dst, n, sum)
	}
	return ExitOK
}

// copyVerified copies the artifact to dst ("-": w), hashing it, and checks
// size and checksum against what the session recorded; a copy that does
// not match is removed. A sealed artifact is opened first, with the key of
// keyFile or else the daemon's (see openSealed).
func copyVerified(a reply.Artifact, dst string, w io.Writer, keyFile string) (int64, string, error) {
	if a.Sealed {
		return copySealed(a, dst, w, keyFile)
	}
	src, err := os.Open(a.Path)
	if err != nil {
		return 0, "", err
	}
	defer src.Close()
	h := sha256.New()
	var n int64
	if dst == "-" {
		// Verify before writing anything to standard output.
		data, err := io.ReadAll(io.TeeReader(src, h))
		if err != nil {
			return 0, "", err
		}
		n = int64(len(data))
		sum := "sha256:" + hex.EncodeToString(h.Sum(nil))
		if err := matches(a, n, sum); err != nil {
			return n, sum, err
		}
		_, err = w.Write(data)
		return n, sum, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".artifact-*")
	if err != nil {
		return 0, "", err
	}
	defer os.Remove(tmp.Name())
	n, err = io.Copy(io.MultiWriter(tmp, h), src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, "", err
	}
	sum := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if err := matches(a, n, sum); err != nil {
		return n, sum, err
	}
	return n, sum, os.Rename(tmp.Name(), dst)
}

// copySealed opens the sealed artifact a, verifies its plaintext against
// the record and writes it to dst ("-": w).
func copySealed(a reply.Artifact, dst string, w io.Writer, keyFile string) (int64, string, error) {
	plain, err := openSealed(a, keyFile)
	if err != nil {
		return 0, "", err
	}
	h := sha256.Sum256(plain)
	n, sum := int64(len(plain)), "sha256:"+hex.EncodeToString(h[:])
	if err := matches(a, n, sum); err != nil {
		return n, sum, err
	}
	if dst == "-" {
		_, err = w.Write(plain)
		return n, sum, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".artifact-*") // mode 0600
	if err != nil {
		return n, sum, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(plain)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, sum, err
	}
	return n, sum, os.Rename(tmp.Name(), dst)
}

// openSealed decrypts the sealed artifact a with the key of keyFile, else
// of the daemon's key file, naming the key problem when it cannot.
func openSealed(a reply.Artifact, keyFile string) ([]byte, error) {
	src := "--key"
	if keyFile == "" {
		keyFile, src = a.KeyFile, "the daemon's agent.at_rest_key_file"
	}
	what := fmt.Sprintf("%s belongs to a session classified %s and is encrypted at rest", a.URI, a.DataClass)
	if keyFile == "" {
		return nil, fmt.Errorf("%s, and the daemon has no at-rest key configured (agent.at_rest_key_file): give the key file with --key FILE: %w",
			what, atrest.ErrNoKey)
	}
	k, err := atrest.LoadKey(keyFile)
	if err != nil {
		hint := ""
		if errors.Is(err, fs.ErrPermission) {
			hint = " (run as the daemon's user, or give a copy of the key readable by you only with --key FILE)"
		}
		return nil, fmt.Errorf("%s, and the at-rest key (%s) cannot be loaded%s: %w", what, src, hint, err)
	}
	plain, err := k.ReadFile(a.Path, atrest.ArtifactBinding(a.SessionID, a.Name))
	var wk *atrest.WrongKeyError
	switch {
	case errors.As(err, &wk):
		return nil, fmt.Errorf("%s under at-rest key %s, and the key in %s (%s) is key %s: %w", what, wk.Want, keyFile, src, wk.Have, atrest.ErrWrongKey)
	case err != nil:
		return nil, fmt.Errorf("%s, and its file does not open with the at-rest key %s (copy refused): %w", what, k.ID(), err)
	}
	return plain, nil
}

func matches(a reply.Artifact, n int64, sum string) error {
	if n != a.SizeBytes || !strings.EqualFold(sum, a.Checksum) {
		return fmt.Errorf("%s does not match its record: %d bytes %s, recorded %d bytes %s (copy discarded)",
			a.URI, n, sum, a.SizeBytes, a.Checksum)
	}
	return nil
}
