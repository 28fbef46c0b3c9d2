package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/session/audit"
	"hcp-edge/session/store"
)

// auditArchive is `hcp-edge audit archive --before DATE --out FILE`: the
// entries before DATE moved out of the state file into FILE, the chain
// anchored. Offline only: the daemon's own pruner archives into
// state_dir/audit-archive while it runs.
func auditArchive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit archive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := auditFlags{sessionFlags: addSessionFlags(fs),
		stateDir: fs.String("state-dir", "", "the state directory (default: the configuration's agent.state_dir)")}
	before := fs.String("before", "", "archive the entries stamped before `DATE`")
	out := fs.String("out", "", "write them to `FILE` (JSON Lines; an existing file is refused)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("audit-archive"))
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) > 0 || *before == "" || *out == "" {
		fmt.Fprintln(stderr, "hcp-edge audit archive: give --before DATE and --out FILE, and no arguments")
		return ExitUsage
	}
	t, err := parseWhen(*before, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit archive: --before: %v\n", err)
		return ExitUsage
	}
	dir := *af.stateDir
	if dir == "" {
		cfg, err := loadConfig(*af.cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "hcp-edge audit archive: %v\n", err)
			return ExitUsage
		}
		dir = cfg.Agent.StateDir
	}
	st, path, err := auditaccess.OpenOffline(dir, true)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit archive: %v\n", err)
		return ExitFailure
	}
	defer st.Close()
	r, err := st.Audit().Archive(ctx, *out, audit.ArchiveOpts{Before: t, Keep: store.KeepsAuditOf})
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge audit archive: %s: %v\n", path, err)
		return ExitFailure
	}
	if *af.asJSON {
		printJSON(stdout, map[string]any{"state_file": path, "file": *out, "from": r.From, "to": r.To, "count": r.Count, "anchor": r.Anchor, "stopped": r.Stopped})
		return ExitOK
	}
	if r.Count == 0 {
		fmt.Fprintf(stdout, "nothing to archive before %s in %s (%s); no file written\n", t.Format(time.RFC3339), path, r.Stopped)
		return ExitOK
	}
	fmt.Fprintf(stdout, "archived entries %d..%d (%d) of %s to %s; stopped at %s\nanchor: #%d %s\n",
		r.From, r.To, r.Count, path, *out, r.Stopped, r.Anchor.Seq, r.Anchor.HashHex)
	return ExitOK
}

// archiveFiles expands the arguments of audit verify --archive: files, and
// directories (their *.jsonl).
func archiveFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(filepath.Join(a, "*.jsonl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	if len(out) == 0 {
		return nil, errors.New("no archive files (FILE... or a directory of *.jsonl)")
	}
	return out, nil
}

// verifyArchives checks files against r's anchor into r.
func verifyArchives(ctx context.Context, r *auditaccess.VerifyResult, files []string) error {
	var anchor audit.Anchor
	if r.Anchor != nil {
		anchor = *r.Anchor
		h, err := hex.DecodeString(anchor.HashHex)
		if err != nil || len(h) != 32 {
			return fmt.Errorf("the anchor's hash %q is not 32 bytes of hex", anchor.HashHex)
		}
		copy(anchor.Hash[:], h)
	}
	spans, err := audit.VerifyArchives(ctx, files, anchor)
	var ae *audit.ArchiveError
	switch {
	case errors.As(err, &ae):
		r.ArchiveBroken = &auditaccess.ArchiveBroken{File: ae.File, Line: ae.Line, Seq: ae.Seq, Reason: ae.Reason}
		r.Intact = false
	case err != nil:
		return err
	}
	r.Archives = spans
	return nil
}

func printArchives(w io.Writer, r auditaccess.VerifyResult) {
	for _, s := range r.Archives {
		fmt.Fprintf(w, "archive %s: entries %d..%d (%d), intact\n", s.File, s.From, s.To, s.Entries)
	}
	if b := r.ArchiveBroken; b != nil {
		where := b.File
		if b.Line > 0 {
			where = fmt.Sprintf("%s line %d, entry %d", b.File, b.Line, b.Seq)
		}
		fmt.Fprintf(w, "archives: BROKEN at %s: %s\n", where, b.Reason)
	} else if len(r.Archives) > 0 {
		fmt.Fprintf(w, "archives: joined from entry 1 to the anchor #%d\n", r.Anchor.Seq)
	}
}
