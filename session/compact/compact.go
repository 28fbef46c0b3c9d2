package compact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"hcp-edge/internal/diskspace"
	"hcp-edge/session/store"
)

// Suffix names the copy beside the original while it is written.
const Suffix = ".compact"

// Opts tunes File.
type Opts struct {
	// Timeout is the wait for the file's lock (default 1s).
	Timeout time.Duration
	// TxMaxSize bounds the bytes copied per transaction (default 16 MiB).
	TxMaxSize int64
	// statfs reads the free space of a directory (diskspace.Statfs; tests
	// replace it).
	statfs func(dir string) (free, total uint64, err error)
}

// Result is what File did.
type Result struct {
	Path   string `json:"path"`
	Before int64  `json:"before_bytes"` // the original's size
	After  int64  `json:"after_bytes"`  // the compacted file's size
}

// File compacts the bbolt state file at path in place (see the package
// comment). On any error the original is untouched and the copy removed.
func File(ctx context.Context, path string, o Opts) (res Result, err error) {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.TxMaxSize <= 0 {
		o.TxMaxSize = 16 << 20
	}
	if o.statfs == nil {
		o.statfs = diskspace.Statfs
	}
	res.Path = path
	fi, err := os.Stat(path)
	if err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return res, fmt.Errorf("compact: %s is not a regular file", path)
	}
	res.Before = fi.Size()
	src, err := bolt.Open(path, 0, &bolt.Options{Timeout: o.Timeout, ReadOnly: true})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return res, fmt.Errorf("compact: %s: %w", path, ErrInUse)
	case err != nil:
		return res, fmt.Errorf("compact: %s: %w: %w", path, ErrDamaged, err)
	}
	defer src.Close()
	var used int64
	err = src.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			return cerr
		}
		st := src.Stats()
		used = tx.Size() - int64(st.FreePageN+st.PendingPageN)*int64(src.Info().PageSize)
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("compact: %s: %w: %w", path, ErrDamaged, err)
	}
	dir := filepath.Dir(path)
	if free, _, err := o.statfs(dir); err == nil && int64(free) < used+used/8+(1<<20) {
		return res, fmt.Errorf("compact: %s: %d bytes free, the copy needs about %d: %w", dir, free, used, ErrNoSpace)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}

	tmp := path + Suffix
	_ = os.Remove(tmp) // a copy left by an interrupted run
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	dst, err := bolt.Open(tmp, fi.Mode().Perm(), &bolt.Options{Timeout: o.Timeout})
	if err != nil {
		return res, fmt.Errorf("compact: %s: %w", tmp, noSpace(err))
	}
	if err := bolt.Compact(dst, src, o.TxMaxSize); err != nil {
		dst.Close()
		return res, fmt.Errorf("compact: copy %s: %w", path, noSpace(err))
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return res, fmt.Errorf("compact: sync %s: %w", tmp, noSpace(err))
	}
	if err := dst.Close(); err != nil {
		return res, fmt.Errorf("compact: close %s: %w", tmp, noSpace(err))
	}
	if err := check(ctx, tmp, o.Timeout); err != nil {
		return res, err
	}
	if err := sameOwner(tmp, fi); err != nil {
		return res, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return res, fmt.Errorf("compact: sync %s: %w", dir, err)
		}
	}
	if nfi, err := os.Stat(path); err == nil {
		res.After = nfi.Size()
	}
	return res, nil
}

// check opens the copy as a state file, read-only, and runs the store's
// check (bbolt's page check, the audit chain, every session).
func check(ctx context.Context, path string, timeout time.Duration) error {
	o := store.DefaultOpts()
	o.ReadOnly, o.Timeout = true, timeout
	st, err := store.Open(path, o)
	if err != nil {
		return fmt.Errorf("compact: the copy: %w: %w", ErrDamaged, err)
	}
	defer st.Close()
	if err := st.Check(ctx); err != nil {
		return fmt.Errorf("compact: the copy fails the state file's check (the original is kept): %w: %w", ErrDamaged, err)
	}
	return nil
}

// sameOwner gives the copy the original's owner and group (the daemon's
// user must still open it when the command ran as root).
func sameOwner(path string, orig os.FileInfo) error {
	st, ok := orig.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	cerr := os.Lchown(path, int(st.Uid), int(st.Gid))
	now, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if n, ok := now.Sys().(*syscall.Stat_t); ok && (n.Uid != st.Uid || n.Gid != st.Gid) {
		return fmt.Errorf("compact: the copy cannot get the original's owner %d:%d (run as that user or root): %w", st.Uid, st.Gid, cerr)
	}
	return nil
}

// noSpace marks a write that failed for want of space with ErrNoSpace.
func noSpace(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}
