package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/control"
	"github.com/hcp-edge/hcp-edge/session/audit"
	"github.com/hcp-edge/hcp-edge/session/engine"
	"github.com/hcp-edge/hcp-edge/session/gate"
	"github.com/hcp-edge/hcp-edge/session/store"
)

// Where an audit command read the log.
const (
	viaDaemon    = "daemon"     // the running daemon, over its control socket
	viaStateFile = "state file" // the state file itself, the daemon being down
)

// offlineLockTimeout bounds the wait for the state file's lock when the
// daemon is thought to be down.
const offlineLockTimeout = 500 * time.Millisecond

// brokenLink is the first broken link of the chain.
type brokenLink struct {
	Seq    uint64 `json:"seq"`
	Reason string `json:"reason"`
}

// auditVerifyResult is the reply to audit_verify and the output of
// audit verify --json.
type auditVerifyResult struct {
	Via       string      `json:"via"`
	StateFile string      `json:"state_file"`
	Intact    bool        `json:"intact"`
	Checked   uint64      `json:"entries_checked"`
	HeadSeq   uint64      `json:"head_seq"`
	HeadHash  string      `json:"head_hash"`
	Broken    *brokenLink `json:"broken,omitempty"`
}

// replayEntry is one audit entry of a session, with what a reader looks
// for pulled out of its detail.
type replayEntry struct {
	Seq      uint64          `json:"seq"`
	At       time.Time       `json:"at"`
	Kind     string          `json:"kind"`
	Decision string          `json:"decision,omitempty"` // the gate's outcome, the transition, the interlock's decision
	Operator string          `json:"operator,omitempty"`
	Summary  string          `json:"summary,omitempty"`
	Detail   json.RawMessage `json:"detail"` // the entry's detail (JSON text, or a JSON string)
	Hash     string          `json:"hash"`
}

// auditReplayResult is the reply to audit_replay and the output of
// audit replay --json.
type auditReplayResult struct {
	Via       string        `json:"via"`
	StateFile string        `json:"state_file"`
	SessionID string        `json:"session_id"`
	State     string        `json:"state,omitempty"`
	DataClass string        `json:"data_classification,omitempty"`
	Entries   []replayEntry `json:"entries"`
	Broken    *brokenLink   `json:"broken,omitempty"`
}

// verifyLog runs Verify on l. A broken chain is a result, not an error.
func verifyLog(ctx context.Context, l *audit.Log, via, path string) (auditVerifyResult, error) {
	r := auditVerifyResult{Via: via, StateFile: path}
	n, err := l.Verify(ctx)
	r.Checked = n
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		r.Broken = &brokenLink{Seq: ce.Seq, Reason: ce.Reason}
	case err != nil:
		return r, err
	}
	seq, h, herr := l.Head()
	if herr != nil && r.Broken == nil {
		if !errors.As(herr, &ce) {
			return r, herr
		}
		r.Broken = &brokenLink{Seq: ce.Seq, Reason: ce.Reason}
	}
	r.HeadSeq, r.HeadHash = seq, hex.EncodeToString(h[:])
	r.Intact = r.Broken == nil
	return r, nil
}

// accessor is who reads a session's data, and how.
type accessor struct {
	Operator string
	Via      string
}

// dataAccess is the detail of a data_access audit entry.
type dataAccess struct {
	Operator  string `json:"operator"`
	Access    string `json:"access"` // artifact_get, audit_replay
	Object    string `json:"object"` // what was read
	Via       string `json:"via"`
	DataClass string `json:"data_classification"`
}

// recordAccess appends a data_access entry when session sid's data is
// classified T2 or above (the gate's AuditedAccess). A session the store
// does not hold has no classified data. The caller must refuse the access
// when this fails.
func recordAccess(ctx context.Context, st *store.Store, sid, access, object string, who accessor) error {
	sess, err := st.Session(ctx, sid)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrBadID) {
		return nil
	}
	if err != nil {
		return err
	}
	if gate.Classification(sess.DataClass).Rank() < gate.T2.Rank() {
		return nil
	}
	if who.Operator == "" {
		who.Operator = "unknown"
	}
	b, err := json.Marshal(dataAccess{Operator: who.Operator, Access: access, Object: object, Via: who.Via, DataClass: sess.DataClass})
	if err != nil {
		return err
	}
	_, err = st.Audit().Append(ctx, audit.Entry{SessionID: sid, Kind: audit.KindDataAccess, Detail: string(b)})
	return err
}

// replayLog records the access (T2 and above) and returns session sid's
// entries.
func replayLog(ctx context.Context, st *store.Store, sid string, who accessor, via, path string) (auditReplayResult, error) {
	r := auditReplayResult{Via: via, StateFile: path, SessionID: sid, Entries: []replayEntry{}}
	if err := recordAccess(ctx, st, sid, "audit_replay", "audit entries of "+sid, who); err != nil {
		return r, fmt.Errorf("the access could not be recorded in the audit log, so it is refused: %w", err)
	}
	if sess, err := st.Session(ctx, sid); err == nil {
		r.State, r.DataClass = string(sess.State), sess.DataClass
	}
	es, err := st.Audit().Replay(ctx, sid)
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		r.Broken = &brokenLink{Seq: ce.Seq, Reason: ce.Reason}
	case err != nil:
		return r, err
	}
	for _, e := range es {
		r.Entries = append(r.Entries, describe(e))
	}
	return r, nil
}

// byOperator finds "by operator NAME" in a transition's reason.
var byOperator = regexp.MustCompile(`by operator ([^\s:;,]+)`)

// describe pulls the decision, the operator and a summary out of e's
// detail.
func describe(e audit.Entry) replayEntry {
	r := replayEntry{Seq: e.Seq, At: e.At, Kind: string(e.Kind), Hash: hex.EncodeToString(e.Hash[:])}
	var d map[string]any
	if json.Unmarshal([]byte(e.Detail), &d) == nil {
		r.Detail = json.RawMessage(e.Detail)
	} else {
		r.Detail, _ = json.Marshal(e.Detail)
		r.Summary = e.Detail
		return r
	}
	str := func(k string) string { s, _ := d[k].(string); return s }
	join := func(parts ...string) string {
		var out []string
		for _, p := range parts {
			if p != "" {
				out = append(out, p)
			}
		}
		return strings.Join(out, " ")
	}
	r.Operator = str("operator")
	switch e.Kind {
	case audit.KindGate:
		r.Decision = join(str("outcome"), str("risk_level"))
		r.Summary = join(str("capability")+"@"+str("version"), "caller="+str("caller_id"), str("reason_code"), str("message"))
		if c := str("data_classification"); c != "" {
			r.Summary = join(r.Summary, "data="+c)
		}
	case audit.KindTransition:
		from := str("from")
		if from == "" {
			from = "∅"
		}
		r.Decision = from + " → " + str("to")
		r.Summary = join(str("trigger"), str("reason"))
		if m := byOperator.FindStringSubmatch(str("reason")); m != nil && r.Operator == "" {
			r.Operator = m[1]
		}
	case audit.KindToolCall, audit.KindInterlock:
		r.Decision = str("decision")
		var act string
		if a, ok := d["action"].(map[string]any); ok {
			b, _ := json.Marshal(a)
			act = string(b)
		}
		r.Summary = join(act, str("rule"), str("trip"), str("reason"))
	case audit.KindDataAccess:
		r.Decision = str("access")
		r.Summary = join(str("object"), "via "+str("via"), str("data_classification"))
	default:
		r.Summary = e.Detail
	}
	return r
}

// auditOp serves audit_verify and audit_replay on the daemon's open log.
func (s *sessions) auditOp(ctx context.Context, req control.Request) (any, error) {
	path := filepath.Join(s.stateDir, stateFile)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	switch req.Op {
	case control.OpAuditVerify:
		return verifyLog(ctx, s.st.Audit(), viaDaemon, path)
	case control.OpAuditReplay:
		if req.ID == "" {
			return nil, errors.New("audit_replay needs a session id")
		}
		r, err := replayLog(ctx, s.st, req.ID, accessor{Operator: req.Operator, Via: "control socket"}, viaDaemon, path)
		if err != nil {
			return nil, err
		}
		s.log.Info("audit replay", "session", req.ID, "operator", req.Operator, "entries", len(r.Entries), "data_classification", r.DataClass)
		return r, nil
	}
	return nil, fmt.Errorf("unknown op %q", req.Op)
}

// artifactAudited is artifact with the access recorded for a T2+ session.
//
// A T4 session's artifact needs an unexpired access approval (hcp-edge
// access approve): checked first, so that a refusal names what to run, and
// again in the transaction that audits the read.
func (s *sessions) artifactAudited(ctx context.Context, req control.Request) (any, error) {
	if sid, _, err := parseArtifactURI(req.URI); err == nil {
		if sess, err := s.st.Session(ctx, sid); err == nil && engine.NeedsAccessApproval(sess.DataClass) {
			if s.eng == nil {
				return nil, fmt.Errorf("session %s is %s and no session engine runs to check its access approval", sid, sess.DataClass)
			}
			if err := s.eng.CheckRead(ctx, sid, req.Operator, req.URI); err != nil {
				return nil, err
			}
		}
	}
	a, err := s.artifact(req.URI)
	if err != nil {
		return nil, err
	}
	if engine.NeedsAccessApproval(a.DataClass) {
		if s.eng == nil {
			return nil, fmt.Errorf("session %s is %s and no session engine runs to check its access approval", a.SessionID, a.DataClass)
		}
		if err := s.eng.ReadAccess(ctx, a.SessionID, req.Operator, "artifact_get", a.URI, "control socket"); err != nil {
			return nil, err
		}
		return a, nil
	}
	if err := recordAccess(ctx, s.st, a.SessionID, "artifact_get", a.URI, accessor{Operator: req.Operator, Via: "control socket"}); err != nil {
		return nil, fmt.Errorf("the access could not be recorded in the audit log, so it is refused: %w", err)
	}
	return a, nil
}

// openOffline opens the state file in dir without the daemon, read-only
// unless write (to record a data access).
func openOffline(dir string, write bool) (*store.Store, string, error) {
	path := filepath.Join(dir, stateFile)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if _, err := os.Stat(path); err != nil {
		return nil, path, fmt.Errorf("no state file: %w", err)
	}
	opts := store.DefaultOpts()
	opts.Timeout, opts.ReadOnly = offlineLockTimeout, !write
	st, err := store.Open(path, opts)
	if errors.Is(err, bolterrors.ErrTimeout) {
		err = fmt.Errorf("%s is locked by a running daemon (ask it: leave out --state-dir, or give --socket PATH): %w", path, err)
	}
	return st, path, err
}

// auditFlags are the flags of audit verify and audit replay.
type auditFlags struct {
	sessionFlags
	stateDir *string
}

// target says where to read the log: the daemon (rep set) or the state file
// (dir set, the daemon being down or the state directory given).
type target struct {
	rep  *control.Reply
	dir  string
	note string // why the state file is read directly
}

// reach asks the daemon for req unless --state-dir names a state file that
// is not locked; a daemon that is down means the state file of the
// configuration. A daemon answering for another state file than
// --state-dir is an error.
func (f auditFlags) reach(ctx context.Context, req control.Request) (target, error) {
	ask := func() (control.Reply, error) {
		ctx, cancel := context.WithTimeout(ctx, clientTimeout)
		defer cancel()
		return control.Do(ctx, f.socket(), req, 2*time.Second)
	}
	if dir := *f.stateDir; dir != "" {
		st, _, err := openOffline(dir, false)
		if err == nil {
			_ = st.Close()
			return target{dir: dir, note: "--state-dir, no daemon holds it"}, nil
		}
		if !errors.Is(err, bolterrors.ErrTimeout) {
			return target{}, err
		}
		rep, derr := ask()
		if derr != nil {
			return target{}, fmt.Errorf("%w; and the daemon on %s: %w", err, f.socket(), derr)
		}
		var r struct {
			StateFile string `json:"state_file"`
		}
		_ = json.Unmarshal(rep.Result, &r)
		a, errA := os.Stat(filepath.Join(dir, stateFile))
		b, errB := os.Stat(r.StateFile)
		if rep.OK && (errA != nil || errB != nil || !os.SameFile(a, b)) {
			return target{}, fmt.Errorf("%s is locked, and the daemon on %s serves another state file (%s)", filepath.Join(dir, stateFile), f.socket(), r.StateFile)
		}
		return target{rep: &rep}, nil
	}
	rep, err := ask()
	if err == nil {
		return target{rep: &rep}, nil
	}
	if !errors.Is(err, control.ErrNoDaemon) {
		return target{}, err
	}
	cfg, cerr := loadConfig(*f.cfgPath)
	if cerr != nil {
		return target{}, fmt.Errorf("no daemon on %s, and the configuration does not name a state directory: %w", f.socket(), cerr)
	}
	return target{dir: cfg.Agent.StateDir, note: "no daemon on " + f.socket()}, nil
}

func auditCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "verify" && args[0] != "replay") {
		return groupUsage(args, "usage: hcp-edge audit verify [--json] [--state-dir DIR]\n       hcp-edge audit replay SESSION_ID [--json] [--operator NAME]\n\nRun \"hcp-edge audit verify -h\" or \"hcp-edge audit replay -h\" for the flags.\n", stdout, stderr)
	}
	fs := flag.NewFlagSet("audit "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := auditFlags{sessionFlags: addSessionFlags(fs),
		stateDir: fs.String("state-dir", "", "read DIR/state.db directly (default: ask the daemon; when it is down, the configuration's state directory)")}
	if args[0] == "verify" {
		fs.Usage = func() {
			fmt.Fprint(fs.Output(), `usage: hcp-edge audit verify [--json] [--state-dir DIR] [--socket PATH] [--config FILE]

Checks the hash chain of the audit log from its first entry: each entry's hash over its content
and its link to the one before, no gap in the sequence, and the stored head naming the last
entry. Prints how many entries were checked, the head (sequence and hash: write it down or ship
it elsewhere to anchor the chain) and the first broken link with its sequence number and reason.

The running daemon holds the state file: it is asked over the control socket. When it is down,
the state file is opened read-only (agent.state_dir of the configuration, or --state-dir DIR).
The output says which path was taken.

exit codes: 0 intact; 1 broken, or the log could not be read; 2 usage.

examples:
  hcp-edge audit verify
  hcp-edge audit verify --state-dir /var/lib/hcp-edge --json | jq .head_hash

flags:
`)
			fs.PrintDefaults()
		}
		if pos, err := parseArgs(fs, args[1:], stdout); err != nil || len(pos) > 0 {
			if err == nil {
				fmt.Fprintln(stderr, "hcp-edge audit verify: takes no arguments")
			}
			return usageExit(err)
		}
		return auditVerify(ctx, af, stdout, stderr)
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: hcp-edge audit replay SESSION_ID [--json] [--operator NAME] [--state-dir DIR] [--socket PATH] [--config FILE]

Rebuilds one session's lifecycle from the audit log: the gate's decision, every state
transition (with the operator who approved, denied, paused or resumed it), every tool call and
interlock decision, and every recorded access to its data, in order, each checked against its
hash and its link to the entry before. A table of time, sequence, kind, decision or transition,
operator and detail; --json prints the entries with their full detail.

The session's data classification T2 and above makes this read itself an access to its data: it
is recorded (kind data_access) with the operator (--operator, default the login name). Without
the daemon that needs the state file writable.

exit codes: 0 shown; 1 no entries for the session, a broken link, or the log could not be read;
2 usage.

examples:
  hcp-edge audit replay 0b6f...e1
  hcp-edge audit replay 0b6f...e1 --json | jq '.entries[] | select(.kind=="transition")'

flags:
`)
		fs.PrintDefaults()
	}
	operator := fs.String("operator", operatorDefault(), "who reads (recorded for T2+ sessions)")
	pos, err := parseArgs(fs, args[1:], stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 || pos[0] == "" || len(pos[0]) > store.MaxIDLen {
		fmt.Fprintln(stderr, "hcp-edge audit replay: give exactly one SESSION_ID")
		return exitUsage
	}
	return auditReplay(ctx, af, pos[0], *operator, stdout, stderr)
}

func auditVerify(ctx context.Context, af auditFlags, stdout, stderr io.Writer) int {
	t, err := af.reach(ctx, control.Request{Op: control.OpAuditVerify})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit verify: %v\n", err)
		return exitFailure
	}
	var r auditVerifyResult
	switch {
	case t.rep != nil:
		if !t.rep.OK {
			fmt.Fprintf(stderr, "hcp-edge audit verify: the daemon refused: %s\n", t.rep.Error)
			return exitFailure
		}
		if err := json.Unmarshal(t.rep.Result, &r); err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit verify: bad reply: %v\n", err)
			return exitFailure
		}
	default:
		st, path, err := openOffline(t.dir, false)
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit verify: %v\n", err)
			return exitFailure
		}
		r, err = verifyLog(ctx, st.Audit(), viaStateFile, path)
		_ = st.Close()
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit verify: %s: %v\n", path, err)
			return exitFailure
		}
	}
	if *af.asJSON {
		printJSON(stdout, r)
	} else {
		how := "asked the running daemon, which holds it"
		if r.Via == viaStateFile {
			how = "opened read-only; " + t.note
		}
		fmt.Fprintf(stdout, "audit log: %s (%s)\n", r.StateFile, how)
		fmt.Fprintf(stdout, "entries checked: %d\n", r.Checked)
		fmt.Fprintf(stdout, "head (as stored): #%d %s\n", r.HeadSeq, r.HeadHash)
		if r.Intact {
			fmt.Fprintln(stdout, "chain: intact")
		} else {
			fmt.Fprintf(stdout, "chain: BROKEN at entry %d: %s\n", r.Broken.Seq, r.Broken.Reason)
		}
	}
	if !r.Intact {
		return exitFailure
	}
	return exitOK
}

func auditReplay(ctx context.Context, af auditFlags, sid, operator string, stdout, stderr io.Writer) int {
	t, err := af.reach(ctx, control.Request{Op: control.OpAuditReplay, ID: sid, Operator: operator})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit replay: %v\n", err)
		return exitFailure
	}
	var r auditReplayResult
	switch {
	case t.rep != nil:
		if !t.rep.OK {
			fmt.Fprintf(stderr, "hcp-edge audit replay: the daemon refused: %s\n", t.rep.Error)
			return exitFailure
		}
		if err := json.Unmarshal(t.rep.Result, &r); err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit replay: bad reply: %v\n", err)
			return exitFailure
		}
	default:
		r, err = replayOffline(ctx, t.dir, sid, operator)
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit replay: %v\n", err)
			return exitFailure
		}
	}
	code := exitOK
	if r.Broken != nil || len(r.Entries) == 0 {
		code = exitFailure
	}
	if *af.asJSON {
		printJSON(stdout, r)
	} else {
		printReplay(stdout, r)
	}
	switch {
	case r.Broken != nil:
		fmt.Fprintf(stderr, "hcp-edge audit replay: the chain is broken at entry %d: %s (hcp-edge audit verify)\n", r.Broken.Seq, r.Broken.Reason)
	case len(r.Entries) == 0:
		fmt.Fprintf(stderr, "hcp-edge audit replay: no audit entries for session %s in %s\n", sid, r.StateFile)
	}
	return code
}

// replayOffline replays from the state file in dir, the daemon being down.
// A T2+ session's replay is recorded, which needs the file writable.
func replayOffline(ctx context.Context, dir, sid, operator string) (auditReplayResult, error) {
	st, path, err := openOffline(dir, false)
	if err != nil {
		return auditReplayResult{}, err
	}
	sess, serr := st.Session(ctx, sid)
	if serr == nil && gate.Classification(sess.DataClass).Rank() >= gate.T2.Rank() {
		_ = st.Close()
		if st, _, err = openOffline(dir, true); err != nil {
			return auditReplayResult{}, fmt.Errorf("session %s is %s: reading it is recorded in the audit log, and %s cannot be opened to record it: %w",
				sid, sess.DataClass, path, err)
		}
	}
	defer st.Close()
	return replayLog(ctx, st, sid, accessor{Operator: operator, Via: "state file"}, viaStateFile, path)
}

func printReplay(w io.Writer, r auditReplayResult) {
	how := "from the running daemon"
	if r.Via == viaStateFile {
		how = "from the state file (daemon down)"
	}
	fmt.Fprintf(w, "session %s", r.SessionID)
	if r.State != "" {
		fmt.Fprintf(w, ": %s, data %s", r.State, r.DataClass)
	}
	fmt.Fprintf(w, "; %d audit entries %s, %s\n\n", len(r.Entries), how, r.StateFile)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSEQ\tKIND\tDECISION/TRANSITION\tOPERATOR\tDETAIL")
	for _, e := range r.Entries {
		op := e.Operator
		if op == "" {
			op = "-"
		}
		det := e.Summary
		if rs := []rune(det); len(rs) > 120 {
			det = string(rs[:117]) + "..."
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", e.At.Local().Format("2006-01-02 15:04:05.000"), e.Seq, e.Kind, e.Decision, op, det)
	}
	_ = tw.Flush()
}
