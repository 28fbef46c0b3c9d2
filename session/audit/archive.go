package audit

import (
	"bufio"
	"bytes"

	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The anchor: audit_meta/"anchor" holds the last archived entry (its
// position, hash and time) once entries have been moved out of the file
// into archives; the chain in the file starts right after it.
var keyAnchor = []byte("anchor")

// Anchor is the last archived entry: the remaining chain's first entry
// links to Hash.
type Anchor struct {
	Seq  uint64    `json:"seq"`
	Hash [32]byte  `json:"-"`
	At   time.Time `json:"at"`
	// HashHex is Hash in hex (the stored and printed form).
	HashHex string `json:"hash"`
}

func readAnchor(meta *bolt.Bucket) (Anchor, error) {
	var a Anchor
	v := meta.Get(keyAnchor)
	if v == nil {
		return a, nil
	}
	if err := json.Unmarshal(v, &a); err != nil {
		return a, &ChainError{Reason: "anchor undecodable: " + err.Error()}
	}
	h, err := hex.DecodeString(a.HashHex)
	if err != nil || len(h) != 32 {
		return a, &ChainError{Reason: "anchor hash undecodable"}
	}
	copy(a.Hash[:], h)
	return a, nil
}

// AnchorTx returns the anchor in tx (Seq 0: nothing archived).
func AnchorTx(tx *bolt.Tx) (Anchor, error) {
	_, _, meta, err := buckets(tx)
	if err != nil {
		return Anchor{}, err
	}
	return readAnchor(meta)
}

// Anchor returns the log's anchor (Seq 0: nothing archived).
func (l *Log) Anchor() (Anchor, error) {
	var a Anchor
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		a, err = AnchorTx(tx)
		return err
	})
	return a, err
}

// ArchiveLine is one entry in an archive file (JSON Lines): the entry
// whole, with its link and hash, so that the file is checked on its own.
type ArchiveLine struct {
	Seq       uint64 `json:"seq"`
	At        string `json:"at"`    // RFC 3339 with nanoseconds, UTC
	AtNS      int64  `json:"at_ns"` // the hashed time, unix nanoseconds
	SessionID string `json:"session_id"`
	Kind      string `json:"kind"`
	Detail    string `json:"detail"`
	Prev      string `json:"prev"` // hex
	Hash      string `json:"hash"` // hex
}

func lineOf(e Entry) ArchiveLine {
	return ArchiveLine{Seq: e.Seq, At: e.At.UTC().Format(time.RFC3339Nano), AtNS: e.At.UnixNano(), SessionID: e.SessionID,
		Kind: string(e.Kind), Detail: e.Detail, Prev: hex.EncodeToString(e.Prev[:]), Hash: hex.EncodeToString(e.Hash[:])}
}

func (a ArchiveLine) entry() (Entry, error) {
	e := Entry{Seq: a.Seq, At: time.Unix(0, a.AtNS).UTC(), SessionID: a.SessionID, Kind: Kind(a.Kind), Detail: a.Detail}
	p, err1 := hex.DecodeString(a.Prev)
	h, err2 := hex.DecodeString(a.Hash)
	if err1 != nil || err2 != nil || len(p) != 32 || len(h) != 32 {
		return e, errors.New("prev or hash is not 32 bytes of hex")
	}
	copy(e.Prev[:], p)
	copy(e.Hash[:], h)
	return e, nil
}

// ArchiveOpts says what Archive moves out.
type ArchiveOpts struct {
	// Before: entries stamped before it. The archived part is always a
	// prefix of the chain: the first entry at or after Before ends it.
	Before time.Time
	// Keep, when set, ends the prefix at the first entry of a session it
	// keeps (the store: a session whose record is still there, its data
	// retained, keeps every entry in the file).
	Keep func(tx *bolt.Tx, sessionID string) bool
	// Max bounds the entries one call moves (0: 50,000), and so the
	// transaction that deletes them.
	Max int
	// Step, when set, is called after each step of Archive ("selected",
	// "written", "synced", "linked", "committed"): the crash tests kill the
	// process there.
	Step func(step string)
}

// ArchiveResult says what Archive moved.
type ArchiveResult struct {
	From, To uint64 // the archived positions (0, 0: none)
	Count    int
	Anchor   Anchor // the new anchor
	Stopped  string // why the prefix ended where it did
}

// ErrExists is an archive file that exists already: Archive never
// replaces one.
var ErrExists = errors.New("audit: archive file exists")

// Archive moves a prefix of the chain out of the file into path, a new
// JSON Lines file of ArchiveLine (refused with ErrExists when path
// exists), and records the anchor. In order: the entries are selected in a
// read transaction; written to a temporary file beside path, synced; the
// temporary file is linked to path and the directory synced; then one
// write transaction checks that the chain still starts where it did and
// still holds the last archived entry unchanged, deletes the entries and
// their index keys, and puts the anchor. A crash before that commit leaves
// the chain whole (and perhaps the file, a copy of entries still in the
// chain); after it, the file and the anchor. Nothing is dropped unarchived.
// Nothing to archive is Count 0 and no file.
func (l *Log) Archive(ctx context.Context, path string, o ArchiveOpts) (ArchiveResult, error) {
	step := o.Step
	if step == nil {
		step = func(string) {}
	}
	if o.Max <= 0 {
		o.Max = 50_000
	}
	var r ArchiveResult
	if _, err := os.Lstat(path); err == nil {
		return r, fmt.Errorf("%s: %w", path, ErrExists)
	}
	var sel []Entry
	var from Anchor
	err := l.db.View(func(tx *bolt.Tx) error {
		entries, _, meta, err := buckets(tx)
		if err != nil {
			return err
		}
		if from, err = readAnchor(meta); err != nil {
			return err
		}
		c := entries.Cursor()
		r.Stopped = "the end of the chain"
		for k, v := c.Seek(seqKey(from.Seq + 1)); k != nil; k, v = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, err := decode(k, v)
			if err != nil {
				return &ChainError{Seq: from.Seq + uint64(len(sel)) + 1, Reason: err.Error()}
			}
			switch {
			case !e.At.Before(o.Before):
				r.Stopped = fmt.Sprintf("entry %d is at %s, not before %s", e.Seq, e.At.Format(time.RFC3339), o.Before.UTC().Format(time.RFC3339))
			case e.SessionID != "" && o.Keep != nil && o.Keep(tx, e.SessionID):
				r.Stopped = fmt.Sprintf("entry %d belongs to session %s, whose record is kept", e.Seq, e.SessionID)
			case len(sel) == o.Max:
				r.Stopped = fmt.Sprintf("%d entries in one archive", o.Max)
			default:
				prev := from.Hash
				if len(sel) > 0 {
					prev = sel[len(sel)-1].Hash
				}
				if e.Seq != from.Seq+uint64(len(sel))+1 || e.Prev != prev || Sum(e) != e.Hash {
					return &ChainError{Seq: e.Seq, Reason: "broken before archiving (audit verify names it)"}
				}
				sel = append(sel, e)
				continue
			}
			break
		}
		return nil
	})
	if err != nil || len(sel) == 0 {
		return r, err
	}
	step("selected")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range sel {
		if err := enc.Encode(lineOf(e)); err != nil {
			return r, err
		}
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".audit-archive-*.tmp")
	if err != nil {
		return r, fmt.Errorf("audit: archive: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(buf.Bytes())
	step("written")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o640)
	}
	if err != nil {
		return r, fmt.Errorf("audit: archive %s: %w", path, err)
	}
	step("synced")
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return r, fmt.Errorf("%s: %w", path, ErrExists)
		}
		return r, fmt.Errorf("audit: archive %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		_ = os.Remove(path)
		return r, fmt.Errorf("audit: archive %s: %w", path, err)
	}
	step("linked")
	last := sel[len(sel)-1]
	anchor := Anchor{Seq: last.Seq, Hash: last.Hash, At: last.At, HashHex: hex.EncodeToString(last.Hash[:])}
	err = l.db.Update(func(tx *bolt.Tx) error {
		entries, sessions, meta, err := buckets(tx)
		if err != nil {
			return err
		}
		now, err := readAnchor(meta)
		if err != nil {
			return err
		}
		if now.Seq != from.Seq {
			return fmt.Errorf("audit: archive: another archive moved the anchor from %d to %d meanwhile", from.Seq, now.Seq)
		}
		v := entries.Get(seqKey(last.Seq))
		if v == nil || !prevMatches(v, last.Hash) {
			return &ChainError{Seq: last.Seq, Reason: "changed while it was archived"}
		}
		tb := tx.Bucket(bucketTime)
		for _, e := range sel {
			if err := entries.Delete(seqKey(e.Seq)); err != nil {
				return err
			}
			if tb != nil {
				if err := tb.Delete(timeKey(e.At, e.Seq)); err != nil {
					return err
				}
			}
			if e.SessionID == "" {
				continue
			}
			if sb := sessions.Bucket([]byte(e.SessionID)); sb != nil {
				if err := sb.Delete(seqKey(e.Seq)); err != nil {
					return err
				}
				if k, _ := sb.Cursor().First(); k == nil {
					if err := sessions.DeleteBucket([]byte(e.SessionID)); err != nil {
						return err
					}
				}
			}
		}
		b, err := json.Marshal(anchor)
		if err != nil {
			return err
		}
		if err := meta.Put(keyAnchor, b); err != nil {
			return err
		}
		if readTimeHead(meta) < anchor.Seq {
			return meta.Put(keyTimeHead, seqKey(anchor.Seq))
		}
		return nil
	})
	if err != nil {
		_ = os.Remove(path) // the chain still holds every entry: the copy goes
		return r, fmt.Errorf("audit: archive: %w", err)
	}
	step("committed")
	r.From, r.To, r.Count, r.Anchor = sel[0].Seq, last.Seq, len(sel), anchor
	return r, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ArchiveError is the first bad entry VerifyArchives found: its file, line
// and position.
type ArchiveError struct {
	File   string
	Line   int
	Seq    uint64
	Reason string
}

func (e *ArchiveError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("audit archive %s: %s: %v", e.File, e.Reason, ErrBrokenChain)
	}
	return fmt.Sprintf("audit archive %s:%d: entry %d: %s: %v", e.File, e.Line, e.Seq, e.Reason, ErrBrokenChain)
}

// Is makes errors.Is(err, ErrBrokenChain) true.
func (e *ArchiveError) Is(target error) bool { return target == ErrBrokenChain }

// ArchiveSpan is one archive file as VerifyArchives read it.
type ArchiveSpan struct {
	File     string `json:"file"`
	From, To uint64
	Entries  int `json:"entries"`
}

// VerifyArchives checks archive files and their join with the anchor:
// every line decodes, matches its own hash and links to the entry before
// it (across files, taken in the order of their first position); the
// first file starts at entry 1 and the last ends at the anchor, with its
// hash. The first bad entry is an *ArchiveError naming its file, line and
// position.
func VerifyArchives(ctx context.Context, files []string, anchor Anchor) ([]ArchiveSpan, error) {
	type loaded struct {
		span    ArchiveSpan
		entries []Entry
		lines   []int
	}
	var all []loaded
	for _, f := range files {
		ld := loaded{span: ArchiveSpan{File: f}}
		fh, err := os.Open(f)
		if err != nil {
			return nil, &ArchiveError{File: f, Reason: err.Error()}
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		n := 0
		for sc.Scan() {
			n++
			if err := ctx.Err(); err != nil {
				fh.Close()
				return nil, err
			}
			var a ArchiveLine
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&a); err != nil {
				fh.Close()
				return nil, &ArchiveError{File: f, Line: n, Seq: ld.span.To + 1, Reason: "undecodable: " + err.Error()}
			}
			e, err := a.entry()
			if err != nil {
				fh.Close()
				return nil, &ArchiveError{File: f, Line: n, Seq: a.Seq, Reason: err.Error()}
			}
			if Sum(e) != e.Hash {
				fh.Close()
				return nil, &ArchiveError{File: f, Line: n, Seq: e.Seq, Reason: "content does not match its hash"}
			}
			if len(ld.entries) > 0 {
				p := ld.entries[len(ld.entries)-1]
				if e.Seq != p.Seq+1 || e.Prev != p.Hash {
					fh.Close()
					return nil, &ArchiveError{File: f, Line: n, Seq: e.Seq, Reason: fmt.Sprintf("does not follow entry %d (missing, reordered or edited)", p.Seq)}
				}
			}
			ld.entries = append(ld.entries, e)
			ld.lines = append(ld.lines, n)
		}
		err = sc.Err()
		fh.Close()
		if err != nil {
			return nil, &ArchiveError{File: f, Line: n + 1, Reason: err.Error()}
		}
		if len(ld.entries) == 0 {
			return nil, &ArchiveError{File: f, Reason: "no entries"}
		}
		ld.span.From, ld.span.To, ld.span.Entries = ld.entries[0].Seq, ld.entries[len(ld.entries)-1].Seq, len(ld.entries)
		all = append(all, ld)
	}
	if len(all) == 0 {
		return nil, errors.New("audit: no archive files")
	}
	sort.Slice(all, func(i, j int) bool { return all[i].span.From < all[j].span.From })
	var prev Entry // the last entry of the file before
	for i, ld := range all {
		first := ld.entries[0]
		switch {
		case i == 0 && (first.Seq != 1 || first.Prev != [32]byte{}):
			return nil, &ArchiveError{File: ld.span.File, Line: ld.lines[0], Seq: first.Seq, Reason: "the first archive does not start at entry 1 (an archive file is missing)"}
		case i > 0 && (first.Seq != prev.Seq+1 || first.Prev != prev.Hash):
			return nil, &ArchiveError{File: ld.span.File, Line: ld.lines[0], Seq: first.Seq,
				Reason: fmt.Sprintf("does not join the archive before it, which ends at entry %d (a file missing, overlapping or edited)", prev.Seq)}
		}
		prev = ld.entries[len(ld.entries)-1]
	}
	last := all[len(all)-1]
	switch {
	case prev.Seq < anchor.Seq:
		return nil, &ArchiveError{File: last.span.File, Line: last.lines[len(last.lines)-1], Seq: prev.Seq,
			Reason: fmt.Sprintf("the archives end at entry %d, the anchor is entry %d (an archive file is missing)", prev.Seq, anchor.Seq)}
	case prev.Seq > anchor.Seq:
		for _, ld := range all {
			if i := int(anchor.Seq + 1 - ld.span.From); anchor.Seq+1 >= ld.span.From && i < len(ld.lines) {
				return nil, &ArchiveError{File: ld.span.File, Line: ld.lines[i], Seq: anchor.Seq + 1,
					Reason: fmt.Sprintf("entries after the anchor (entry %d): a file written by an archive that did not commit (the chain still holds them)", anchor.Seq)}
			}
		}
		return nil, &ArchiveError{File: last.span.File, Seq: anchor.Seq + 1, Reason: "entries after the anchor"}
	case prev.Hash != anchor.Hash:
		return nil, &ArchiveError{File: last.span.File, Line: last.lines[len(last.lines)-1], Seq: prev.Seq, Reason: "its hash is not the anchor's"}
	}
	spans := make([]ArchiveSpan, len(all))
	for i, ld := range all {
		spans[i] = ld.span
	}
	return spans, nil
}
