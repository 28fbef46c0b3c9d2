package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/store"
)

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
		st, _, err := auditaccess.OpenOffline(dir, false)
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
		a, errA := os.Stat(filepath.Join(dir, rigconfig.StateFile))
		b, errB := os.Stat(r.StateFile)
		if rep.OK && (errA != nil || errB != nil || !os.SameFile(a, b)) {
			return target{}, fmt.Errorf("%s is locked, and the daemon on %s serves another state file (%s)", filepath.Join(dir, rigconfig.StateFile), f.socket(), r.StateFile)
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

// Audit is `hcp-edge audit verify|replay`: through the daemon, or on the
// state file read-only when it is down.
func Audit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "log" {
		return auditLog(ctx, args[1:], stdout, stderr) // auditlog.go
	}
	if len(args) > 0 && args[0] == "report" {
		return auditReport(ctx, args[1:], stdout, stderr) // auditreport.go
	}
	if len(args) > 0 && args[0] == "archive" {
		return auditArchive(ctx, args[1:], stdout, stderr) // auditarchive.go
	}
	if len(args) == 0 || (args[0] != "verify" && args[0] != "replay") {
		return groupUsage(args, "usage: hcp-edge audit verify [--json] [--state-dir DIR]\n       hcp-edge audit replay SESSION_ID [--json] [--operator NAME]\n       hcp-edge audit archive --before DATE --out FILE\n       hcp-edge audit log [--since T] [--until T] [--kind K] [--session ID] [--uid N] [--outcome refused|done|failed] [--json] [--follow]\n       hcp-edge audit report [--since 7d] [--until T] [--period day|week] [--format text|json|html]\n\nRun \"hcp-edge audit verify -h\", \"hcp-edge audit replay -h\", \"hcp-edge audit log -h\" or \"hcp-edge audit report -h\" for the flags.\n", stdout, stderr)
	}
	fs := flag.NewFlagSet("audit "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := auditFlags{sessionFlags: addSessionFlags(fs),
		stateDir: fs.String("state-dir", "", "read DIR/state.db directly (default: ask the daemon; when it is down, the configuration's state directory)")}
	if args[0] == "verify" {
		archive := fs.Bool("archive", false, "also check the archive FILEs given as arguments (or directories of *.jsonl) and their join with the anchor")
		fs.Usage = func() {
			fmt.Fprint(fs.Output(), usageText("audit-verify"))
			fs.PrintDefaults()
		}
		pos, err := parseArgs(fs, args[1:], stdout)
		if err != nil {
			return usageExit(err)
		}
		if (len(pos) > 0) != *archive {
			fmt.Fprintln(stderr, "hcp-edge audit verify: archive files only with --archive, and --archive needs FILE or DIR arguments")
			return ExitUsage
		}
		var files []string
		if *archive {
			if files, err = archiveFiles(pos); err != nil {
				fmt.Fprintf(stderr, "hcp-edge audit verify: --archive: %v\n", err)
				return ExitFailure
			}
		}
		return auditVerify(ctx, af, files, stdout, stderr)
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("audit-replay"))
		fs.PrintDefaults()
	}
	operator := fs.String("operator", operatorDefault(), "who reads (recorded for T2+ sessions)")
	pos, err := parseArgs(fs, args[1:], stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 || pos[0] == "" || len(pos[0]) > store.MaxIDLen {
		fmt.Fprintln(stderr, "hcp-edge audit replay: give exactly one SESSION_ID")
		return ExitUsage
	}
	return auditReplay(ctx, af, pos[0], *operator, stdout, stderr)
}

func auditVerify(ctx context.Context, af auditFlags, archives []string, stdout, stderr io.Writer) int {
	t, err := af.reach(ctx, control.Request{Op: control.OpAuditVerify})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit verify: %v\n", err)
		return ExitFailure
	}
	var r auditaccess.VerifyResult
	switch {
	case t.rep != nil:
		if !t.rep.OK {
			fmt.Fprintf(stderr, "hcp-edge audit verify: the daemon refused: %s\n", t.rep.Error)
			return ExitFailure
		}
		if err := json.Unmarshal(t.rep.Result, &r); err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit verify: bad reply: %v\n", err)
			return ExitFailure
		}
	default:
		st, path, err := auditaccess.OpenOffline(t.dir, false)
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit verify: %v\n", err)
			return ExitFailure
		}
		r, err = auditaccess.Verify(ctx, st.Audit(), auditaccess.ViaStateFile, path)
		_ = st.Close()
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit verify: %s: %v\n", path, err)
			return ExitFailure
		}
	}
	if len(archives) > 0 {
		if err := verifyArchives(ctx, &r, archives); err != nil { // auditarchive.go
			fmt.Fprintf(stderr, "hcp-edge audit verify: --archive: %v\n", err)
			return ExitFailure
		}
	}
	if *af.asJSON {
		printJSON(stdout, r)
	} else {
		how := "asked the running daemon, which holds it"
		if r.Via == auditaccess.ViaStateFile {
			how = "opened read-only; " + t.note
		}
		fmt.Fprintf(stdout, "audit log: %s (%s)\n", r.StateFile, how)
		if a := r.Anchor; a != nil {
			fmt.Fprintf(stdout, "entries checked: %d (from the anchor: #%d..#%d)\n", r.Checked-min(r.Checked, a.Seq), a.Seq+1, r.Checked)
		} else {
			fmt.Fprintf(stdout, "entries checked: %d\n", r.Checked)
		}
		fmt.Fprintf(stdout, "head (as stored): #%d %s\n", r.HeadSeq, r.HeadHash)
		if a := r.Anchor; a != nil {
			fmt.Fprintf(stdout, "anchor (entries up to it archived): #%d %s at %s\n", a.Seq, a.HashHex, a.At.Format(time.RFC3339))
		}
		printArchives(stdout, r)
		if r.Broken == nil && r.ArchiveBroken != nil {
			fmt.Fprintln(stdout, "chain in the state file: intact")
		} else if r.Intact {
			fmt.Fprintln(stdout, "chain: intact")
		} else {
			fmt.Fprintf(stdout, "chain: BROKEN at entry %d: %s\n", r.Broken.Seq, r.Broken.Reason)
		}
	}
	if !r.Intact {
		return ExitFailure
	}
	return ExitOK
}

func auditReplay(ctx context.Context, af auditFlags, sid, operator string, stdout, stderr io.Writer) int {
	t, err := af.reach(ctx, control.Request{Op: control.OpAuditReplay, ID: sid, Operator: operator})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit replay: %v\n", err)
		return ExitFailure
	}
	var r auditaccess.ReplayResult
	switch {
	case t.rep != nil:
		if !t.rep.OK {
			fmt.Fprintf(stderr, "hcp-edge audit replay: the daemon refused: %s\n", t.rep.Error)
			return ExitFailure
		}
		if err := json.Unmarshal(t.rep.Result, &r); err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit replay: bad reply: %v\n", err)
			return ExitFailure
		}
	default:
		r, err = auditaccess.ReplayOffline(ctx, t.dir, sid, operator)
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit replay: %v\n", err)
			return ExitFailure
		}
	}
	code := ExitOK
	if r.Broken != nil || len(r.Entries) == 0 {
		code = ExitFailure
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

func printReplay(w io.Writer, r auditaccess.ReplayResult) {
	how := "from the running daemon"
	if r.Via == auditaccess.ViaStateFile {
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
