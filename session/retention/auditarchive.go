package retention

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"hcp-edge/session/audit"
	"hcp-edge/session/store"
)

// AuditArchived is what a pass moved out of the audit chain
// (Opts.AuditArchiveDir).
type AuditArchived struct {
	File     string `json:"file"`
	From, To uint64
	Count    int    `json:"count"`
	Stopped  string `json:"stopped"`
}

// Longest is the longest retention of the policy: its default or a
// class's. An audit entry older than it outlived the data of every class.
func (p Policy) Longest() time.Duration {
	l := p.Default
	for _, d := range p.Classes {
		l = max(l, d)
	}
	return l
}

// archiveFile is the name of the archive whose first entry is from.
func archiveFile(from uint64) string { return fmt.Sprintf("audit-%012d.jsonl", from) }

// archiveAudit moves the audit entries older than the policy's longest
// retention, up to the first entry of a session whose record is still
// kept, into Opts.AuditArchiveDir/audit-{first position}.jsonl and anchors
// the chain (audit.Log.Archive: a crash leaves the chain whole or the
// archive plus the anchor). It first removes what a crashed pass left
// there: temporary files, and archives starting after the anchor (copies
// of entries the chain still holds). Nothing is archived without a
// directory.
func (p *Pruner) archiveAudit(ctx context.Context, now time.Time, r *Report) error {
	dir := p.o.AuditArchiveDir
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("retention: audit archive: %w", err)
	}
	log := p.st.Audit()
	anchor, err := log.Anchor()
	if err != nil {
		return fmt.Errorf("retention: audit archive: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("retention: audit archive: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		orphan := strings.HasPrefix(name, ".audit-archive-") && strings.HasSuffix(name, ".tmp")
		if n, ok := strings.CutPrefix(name, "audit-"); ok {
			if from, err := strconv.ParseUint(strings.TrimSuffix(n, ".jsonl"), 10, 64); err == nil && from > anchor.Seq {
				orphan = true
			}
		}
		if orphan {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("retention: audit archive: %w", err)
			}
			p.log.Warn("audit archive: removed what an interrupted pass left (its entries are still in the chain)", "file", name)
		}
	}
	path := filepath.Join(dir, archiveFile(anchor.Seq+1))
	res, err := log.Archive(ctx, path, audit.ArchiveOpts{Before: now.Add(-p.o.Policy.Longest()), Keep: store.KeepsAuditOf})
	if err != nil {
		return fmt.Errorf("retention: audit archive: %w", err)
	}
	if res.Count > 0 {
		r.AuditArchived = &AuditArchived{File: path, From: res.From, To: res.To, Count: res.Count, Stopped: res.Stopped}
		p.log.Info("audit entries archived", "file", path, "from", res.From, "to", res.To, "count", res.Count, "stopped", res.Stopped)
	}
	return nil
}
