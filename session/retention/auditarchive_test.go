package retention

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hcp-edge/session/audit"
	"hcp-edge/session/lifecycle"
)

// TestRetentionArchivesAudit: a pass archives the audit entries older than
// the longest retention into Opts.AuditArchiveDir — never an entry of a
// session still stored — after removing what an interrupted pass left
// there; the store checks, the chain verifies from the anchor, and the
// archives join it.
func TestRetentionArchivesAudit(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.session("jan-1", "T1", lifecycle.Completed)
	r.session("jan-2", "T2", lifecycle.Completed)
	r.clock.Advance(100 * day)
	r.session("apr-1", "T1", lifecycle.Completed) // within retention: its entries stay
	r.clock.Advance(day)
	dir := filepath.Join(r.dir, "audit-archive")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	// What a pass killed before its commit leaves: a temporary file and an
	// archive starting after the anchor (a copy of entries the chain holds).
	for _, f := range []string{".audit-archive-123.tmp", archiveFile(1)} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	pol := Policy{Default: 90 * day, Classes: map[string]time.Duration{"T3": 95 * day}}
	p, err := New(r.st, Opts{Policy: pol, ArtifactsDir: r.arts, ResultsDir: r.res, Clock: r.clock.Now, PerTx: 2, Pause: time.Microsecond, AuditArchiveDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Once(ctx)
	if err != nil || len(rep.Pruned) != 2 || rep.AuditArchived == nil || rep.AuditArchived.From != 1 {
		t.Fatalf("pass: %+v %v", rep, err)
	}
	r.verify()
	anchor, err := r.st.Audit().Anchor()
	if err != nil || anchor.Seq != rep.AuditArchived.To {
		t.Fatalf("anchor %+v %v, archived %+v", anchor, err, rep.AuditArchived)
	}
	if es, _ := r.st.Audit().Replay(ctx, "apr-1"); len(es) == 0 || es[0].Seq <= anchor.Seq {
		t.Fatalf("the stored session's entries: %v", es)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != archiveFile(1) {
		t.Fatalf("archive directory: %v", ents)
	}
	if _, err := audit.VerifyArchives(ctx, []string{filepath.Join(dir, archiveFile(1))}, anchor); err != nil {
		t.Fatal(err)
	}
	t.Logf("archived entries 1..%d (%s)", anchor.Seq, rep.AuditArchived.Stopped)
	// A second pass with nothing older: no new file.
	if rep, err = p.Once(ctx); err != nil || rep.AuditArchived != nil {
		t.Fatalf("second pass: %+v %v", rep, err)
	}
}
