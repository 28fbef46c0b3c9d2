package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func archiveErr(t *testing.T, err error) *ArchiveError {
	t.Helper()
	var ae *ArchiveError
	if !errors.As(err, &ae) || !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("got %v, want an *ArchiveError", err)
	}
	return ae
}

// TestArchive: two archives move prefixes out; the chain verifies from the
// anchor, replay and query still work, and the archives verify and join
// the anchor in any order; a missing, truncated or edited archive is named
// by file, line and position; an existing file is refused.
func TestArchive(t *testing.T) {
	ctx := context.Background()
	_, l := newLog(t)
	all := fill(t, l, 100)
	dir := t.TempDir()
	a1, a2 := filepath.Join(dir, "a1.jsonl"), filepath.Join(dir, "a2.jsonl")
	r, err := l.Archive(ctx, a1, ArchiveOpts{Before: all[40].At})
	if err != nil || r.From != 1 || r.To != 40 || r.Count != 40 || r.Anchor.Seq != 40 || r.Anchor.Hash != all[39].Hash {
		t.Fatalf("archive 1: %+v %v", r, err)
	}
	if _, err := l.Archive(ctx, a1, ArchiveOpts{Before: all[70].At}); !errors.Is(err, ErrExists) {
		t.Fatalf("archive over an existing file: %v", err)
	}
	if r, err = l.Archive(ctx, a2, ArchiveOpts{Before: all[70].At}); err != nil || r.From != 41 || r.To != 70 {
		t.Fatalf("archive 2: %+v %v", r, err)
	}
	if n, err := l.Verify(ctx); err != nil || n != 100 {
		t.Fatalf("verify from the anchor: %d %v", n, err)
	}
	if es, err := l.Replay(ctx, "a"); err != nil || len(es) == 0 || es[0].Seq <= 70 {
		t.Fatalf("replay after archiving: %v %v", seqsOf(es), err)
	}
	if es, err := l.Query(ctx, Query{Since: all[0].At}); err != nil || len(es) != 30 || es[0].Seq != 71 {
		t.Fatalf("query after archiving: %v %v", seqsOf(es), err)
	}
	anchor, err := l.Anchor()
	if err != nil || anchor.Seq != 70 {
		t.Fatalf("anchor %+v %v", anchor, err)
	}
	if spans, err := VerifyArchives(ctx, []string{a2, a1}, anchor); err != nil || len(spans) != 2 || spans[0].File != a1 {
		t.Fatalf("verify archives: %+v %v", spans, err)
	}
	if ae := archiveErr(t, mustErr(VerifyArchives(ctx, []string{a2}, anchor))); !strings.Contains(ae.Reason, "missing") || ae.Seq != 41 {
		t.Fatalf("without the first archive: %v", ae)
	}
	if ae := archiveErr(t, mustErr(VerifyArchives(ctx, []string{a1}, anchor))); ae.Seq != 40 || !strings.Contains(ae.Reason, "anchor") {
		t.Fatalf("without the second archive: %v", ae)
	}
	// Truncated: the last line cut off; edited: one detail changed.
	b, _ := os.ReadFile(a2)
	lines := strings.SplitAfter(string(b), "\n")
	trunc := filepath.Join(dir, "trunc.jsonl")
	_ = os.WriteFile(trunc, []byte(strings.Join(lines[:len(lines)-2], "")+lines[len(lines)-2][:40]), 0o600)
	if ae := archiveErr(t, mustErr(VerifyArchives(ctx, []string{a1, trunc}, anchor))); ae.Line != 30 || ae.File != trunc {
		t.Fatalf("truncated: %v", ae)
	}
	edited := filepath.Join(dir, "edited.jsonl")
	_ = os.WriteFile(edited, bytes.Replace(b, []byte(`{\"i\":45}`), []byte(`{\"i\":99}`), 1), 0o600)
	if ae := archiveErr(t, mustErr(VerifyArchives(ctx, []string{a1, edited}, anchor))); ae.Seq != 46 || ae.Line != 6 || !strings.Contains(ae.Reason, "hash") {
		t.Fatalf("edited: %v", ae)
	}
	// Nothing more to archive before the same time: no file.
	if r, err := l.Archive(ctx, filepath.Join(dir, "a3.jsonl"), ArchiveOpts{Before: all[70].At}); err != nil || r.Count != 0 {
		t.Fatalf("empty archive: %+v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a3.jsonl")); err == nil {
		t.Fatal("an empty archive left a file")
	}
}

func mustErr(_ any, err error) error { return err }

// TestArchiveKeep: the prefix ends at the first entry of a kept session.
func TestArchiveKeep(t *testing.T) {
	_, l := newLog(t)
	all := fill(t, l, 20) // sessions a (1,3,…) and b (2,4,…), rig-wide every fifth
	r, err := l.Archive(context.Background(), filepath.Join(t.TempDir(), "a.jsonl"), ArchiveOpts{Before: all[19].At.Add(time.Second),
		Keep: func(_ *bolt.Tx, sid string) bool { return sid == "b" }})
	if err != nil || r.To != 1 || !strings.Contains(r.Stopped, "session b") {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestArchiveLoopBounded: 1,000 sessions' entries, archived and pruned in
// a loop as the daemon's pruner does: the chain and the archives verify
// after every round, and the file's audit bucket stays bounded.
func TestArchiveLoopBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("11,000 entries")
	}
	ctx := context.Background()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "audit.db"), 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base
	l, err := Open(db, Opts{Clock: func() time.Time { now = now.Add(time.Second); return now }})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	maxKeys := 0
	for s := range 1000 {
		if err := db.Update(func(tx *bolt.Tx) error {
			for i := range 10 {
				if _, err := AppendTx(tx, Entry{At: now.Add(time.Duration(i) * time.Millisecond), SessionID: fmt.Sprintf("s%04d", s), Kind: KindToolCall, Detail: `{"decision":"executed"}`}); err != nil {
					return err
				}
			}
			_, err := AppendTx(tx, Entry{At: now, Kind: KindControl, Detail: `{"op":"arm","outcome":"done"}`})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
		if s%50 != 49 {
			continue
		}
		f := filepath.Join(dir, fmt.Sprintf("audit-%04d.jsonl", s))
		r, err := l.Archive(ctx, f, ArchiveOpts{Before: now.Add(-20 * time.Minute)}) // "retention": the newest 20 sessions stay
		if err != nil || r.Count == 0 {
			t.Fatalf("round %d: %+v %v", s, r, err)
		}
		files = append(files, f)
		if _, err := l.Verify(ctx); err != nil {
			t.Fatalf("round %d: verify: %v", s, err)
		}
		anchor, _ := l.Anchor()
		if _, err := VerifyArchives(ctx, files, anchor); err != nil {
			t.Fatalf("round %d: verify archives: %v", s, err)
		}
		_ = db.View(func(tx *bolt.Tx) error {
			maxKeys = max(maxKeys, tx.Bucket(bucketEntries).Stats().KeyN)
			return nil
		})
	}
	if n, err := l.Verify(ctx); err != nil || n != 11_000 {
		t.Fatalf("verify: %d %v", n, err)
	}
	// 20 sessions retained + up to 50 appended between two rounds, 11 entries each.
	if maxKeys > 70*11 {
		t.Fatalf("the audit bucket held %d entries after a round", maxKeys)
	}
	t.Logf("11,000 entries of 1,000 sessions in %d archives; the audit bucket held at most %d entries after a round", len(files), maxKeys)
}

// The steps of Archive, in order; a kill at each must leave either the
// whole chain or the archive plus the anchor.
var archiveSteps = []string{"selected", "written", "synced", "linked", "committed"}

// TestArchiveKilled kills a process archiving (SIGKILL) at every step of
// Archive and checks what it left: the chain verifies, and either nothing
// was archived (the chain starts at entry 1; a file, if any, is a copy of
// entries still in it) or the anchor is set and the archive file verifies
// and joins it.
func TestArchiveKilled(t *testing.T) {
	if os.Getenv("HCP_AUDIT_KILL_STEP") != "" {
		archiveChild(t)
		return
	}
	for _, step := range archiveSteps {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			dbPath, out := filepath.Join(dir, "audit.db"), filepath.Join(dir, "archive.jsonl")
			db, err := bolt.Open(dbPath, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			l, err := Open(db, Opts{Clock: fakeClock()})
			if err != nil {
				t.Fatal(err)
			}
			all := fill(t, l, 50)
			_ = db.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestArchiveKilled$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HCP_AUDIT_KILL_STEP="+step, "HCP_AUDIT_KILL_DB="+dbPath, "HCP_AUDIT_KILL_OUT="+out,
				"HCP_AUDIT_KILL_BEFORE="+all[30].At.Format(time.RFC3339Nano))
			outb, err := cmd.CombinedOutput()
			var xe *exec.ExitError
			if !errors.As(err, &xe) || xe.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child not killed at %s: %v\n%s", step, err, outb)
			}
			db, err = bolt.Open(dbPath, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			l, _ = Open(db, Opts{})
			n, err := l.Verify(context.Background())
			if err != nil || n != 50 {
				t.Fatalf("after a kill at %s: verify %d %v", step, n, err)
			}
			anchor, err := l.Anchor()
			if err != nil {
				t.Fatal(err)
			}
			_, ferr := os.Stat(out)
			switch {
			case anchor.Seq == 0:
				var first uint64
				_ = db.View(func(tx *bolt.Tx) error {
					k, _ := tx.Bucket(bucketEntries).Cursor().First()
					first = seqOf(k)
					return nil
				})
				if first != 1 {
					t.Fatalf("after a kill at %s: no anchor, and the chain starts at %d", step, first)
				}
				t.Logf("killed at %s: the old chain, whole (archive file present: %v)", step, ferr == nil)
			default:
				if ferr != nil {
					t.Fatalf("after a kill at %s: anchor %d and no archive file: %v", step, anchor.Seq, ferr)
				}
				if _, err := VerifyArchives(context.Background(), []string{out}, anchor); err != nil {
					t.Fatalf("after a kill at %s: %v", step, err)
				}
				t.Logf("killed at %s: the archive (1..%d) and the anchor", step, anchor.Seq)
			}
		})
	}
}

func seqOf(k []byte) uint64 {
	if len(k) != 8 {
		return 0
	}
	return uint64(k[0])<<56 | uint64(k[1])<<48 | uint64(k[2])<<40 | uint64(k[3])<<32 | uint64(k[4])<<24 | uint64(k[5])<<16 | uint64(k[6])<<8 | uint64(k[7])
}

// archiveChild archives and kills itself at HCP_AUDIT_KILL_STEP.
func archiveChild(t *testing.T) {
	db, err := bolt.Open(os.Getenv("HCP_AUDIT_KILL_DB"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(db, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := time.Parse(time.RFC3339Nano, os.Getenv("HCP_AUDIT_KILL_BEFORE"))
	want := os.Getenv("HCP_AUDIT_KILL_STEP")
	_, err = l.Archive(context.Background(), os.Getenv("HCP_AUDIT_KILL_OUT"), ArchiveOpts{Before: before, Step: func(s string) {
		if s == want {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
	}})
	t.Fatalf("archive returned without a kill at %s: %v", want, err)
}
