package diskspace

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReserveFile is the name of the reserve file in the watched directory.
const ReserveFile = "disk-reserve"

// DefaultEvery is Opts.Every's default.
const DefaultEvery = time.Second

// ErrBadOpts is wrapped by New's errors about its options.
var ErrBadOpts = errors.New("diskspace: bad options")

// Opts configures a Watcher.
type Opts struct {
	// Dir is the directory watched (the state directory); it must exist.
	Dir string
	// Watermark is the free space, in bytes, below which the Watcher
	// reports Low. Must be positive and below the file system's size.
	Watermark uint64
	// Reserve is the size in bytes of the reserve file kept in Dir for
	// the terminal steps of running sessions (0: no reserve).
	Reserve uint64
	// Every is the polling period (default 1 s).
	Every time.Duration
	// OnChange, when set, is called with the new State each time Low
	// changes after New, outside the Watcher's lock, from the goroutine
	// that saw the change (New's own first reading reports nothing: read
	// State).
	OnChange func(State)
	Logger   *slog.Logger
	// Statfs replaces statfs(2) (tests): free (available to this user)
	// and total bytes of the file system holding dir.
	Statfs func(dir string) (free, total uint64, err error)
}

// State is a snapshot of the Watcher.
type State struct {
	// Low is the alarm: free space is below the watermark, or a write of
	// the state file failed for want of space and free space has not come
	// back above the watermark and its margin since.
	Low       bool   `json:"low"`
	Free      uint64 `json:"free_bytes"`
	Total     uint64 `json:"total_bytes"`
	Watermark uint64 `json:"watermark_bytes"`
	Reserve   uint64 `json:"reserve_bytes"`
	// ReserveHeld is true while the reserve file is allocated.
	ReserveHeld bool `json:"reserve_held"`
	// Since is when the alarm began (zero when not Low).
	Since time.Time `json:"since,omitempty"`
	// Reason says why the alarm is on.
	Reason string `json:"reason,omitempty"`
	// WriteFailures counts the local write failures reported (Failed).
	WriteFailures uint64 `json:"write_failures"`
	// Alarms counts the alarms raised since start.
	Alarms uint64 `json:"alarms"`
}

// Watcher watches a directory's free space; see the package documentation.
type Watcher struct {
	opts Opts
	log  *slog.Logger

	mu      sync.Mutex
	st      State
	changed chan struct{} // closed and replaced at every change of Low
	stop    chan struct{}
	done    chan struct{}
	started bool
	closed  bool
	// started0 is set once New's first reading is done: OnChange reports
	// from then on.
	started0 bool
}

// New checks opts, takes a first reading, allocates the reserve when there
// is room for it, and returns a Watcher that Start runs.
func New(opts Opts) (*Watcher, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("%w: no directory", ErrBadOpts)
	}
	if opts.Every <= 0 {
		opts.Every = DefaultEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Statfs == nil {
		opts.Statfs = Statfs
	}
	free, total, err := opts.Statfs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("diskspace: %s: %w", opts.Dir, err)
	}
	if err := CheckWatermark(opts.Watermark, total); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadOpts, opts.Dir, err)
	}
	w := &Watcher{opts: opts, log: opts.Logger, changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	w.st = State{Free: free, Total: total, Watermark: opts.Watermark, Reserve: opts.Reserve}
	if opts.Reserve > 0 {
		if fi, err := os.Stat(w.reservePath()); err == nil && uint64(fi.Size()) >= opts.Reserve {
			w.st.ReserveHeld = true // left by the last run
		}
	}
	w.poll()
	w.mu.Lock()
	w.started0 = true
	w.mu.Unlock()
	return w, nil
}

// CheckWatermark says what is wrong with a watermark of wm bytes on a file
// system of total bytes (nil when nothing).
func CheckWatermark(wm, total uint64) error {
	switch {
	case wm == 0:
		return errors.New("the watermark is 0: intake would never pause before the disk is full")
	case total > 0 && wm >= total:
		return fmt.Errorf("the watermark %s is not below the file system's size %s", Bytes(wm), Bytes(total))
	}
	return nil
}

// Statfs returns the space available to this user and the size of the file
// system holding dir, from statfs(2).
func Statfs(dir string) (free, total uint64, err error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return 0, 0, err
	}
	return s.Bavail * uint64(s.Bsize), s.Blocks * uint64(s.Bsize), nil
}

// Start runs the polling goroutine, which Close stops.
func (w *Watcher) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.closed {
		return
	}
	w.started = true
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.opts.Every)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.poll()
			}
		}
	}()
}

// Close stops the polling goroutine and waits for it. The reserve file
// stays for the next start. Safe to call more than once.
func (w *Watcher) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	started := w.started
	close(w.stop)
	w.mu.Unlock()
	if started {
		<-w.done
	}
}

// State returns a snapshot.
func (w *Watcher) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

// Open reports whether commands may be taken (not Low) and returns a
// channel closed at the next change. A nil Watcher is always open.
func (w *Watcher) Open() (bool, <-chan struct{}) {
	if w == nil {
		return true, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.st.Low, w.changed
}

// Failed is told of a failed write of the state file. For a local write
// error (LocalWriteError) it raises the alarm at once and releases the
// reserve; it returns true when the reserve was released just now, so the
// caller's write is worth one more try. A nil Watcher returns false.
func (w *Watcher) Failed(err error) bool {
	if w == nil || !LocalWriteError(err) {
		return false
	}
	w.mu.Lock()
	w.st.WriteFailures++
	raised := w.raiseLocked("a write of the state file failed: " + err.Error())
	released := false
	if w.st.ReserveHeld {
		if rerr := os.Remove(w.reservePath()); rerr == nil || errors.Is(rerr, os.ErrNotExist) {
			w.st.ReserveHeld, released = false, true
		} else {
			w.log.Error("cannot release the disk reserve", "path", w.reservePath(), "err", rerr)
		}
	}
	st := w.st
	w.mu.Unlock()
	if released {
		w.log.Warn("disk reserve released for the terminal steps of running sessions", "path", w.reservePath(),
			"bytes", w.opts.Reserve)
	}
	w.report(raised, st)
	return released
}

// poll reads the free space and moves the alarm.
func (w *Watcher) poll() {
	free, total, err := w.opts.Statfs(w.opts.Dir)
	w.mu.Lock()
	if err != nil {
		w.mu.Unlock()
		w.log.Warn("diskspace: statfs", "dir", w.opts.Dir, "err", err)
		return
	}
	w.st.Free, w.st.Total = free, total
	changed := false
	switch {
	case !w.st.Low && free < w.opts.Watermark:
		changed = w.raiseLocked(fmt.Sprintf("free space %s is below the watermark %s", Bytes(free), Bytes(w.opts.Watermark)))
	case !w.st.Low && !w.st.ReserveHeld && w.opts.Reserve > 0 && free >= w.opts.Watermark+w.opts.Reserve:
		w.allocLocked() // not a change of the alarm
	case w.st.Low && free >= w.opts.Watermark+w.margin()+w.missingReserve():
		if w.missingReserve() > 0 && !w.allocLocked() {
			break // no reserve, no intake
		}
		w.st.Low, w.st.Reason = false, ""
		since := w.st.Since
		w.st.Since = time.Time{}
		close(w.changed)
		w.changed = make(chan struct{})
		changed = true
		w.log.Info("state directory has space again: command intake resumes", "dir", w.opts.Dir, "free", Bytes(free),
			"watermark", Bytes(w.opts.Watermark), "alarm_for", time.Since(since).Round(time.Millisecond))
	}
	st := w.st
	changed = changed && w.started0
	w.mu.Unlock()
	w.report(changed, st)
}

// raiseLocked raises the alarm (once: logged once per alarm) and reports
// whether it was not on already.
func (w *Watcher) raiseLocked(reason string) bool {
	if w.st.Low {
		return false
	}
	w.st.Low, w.st.Reason, w.st.Since = true, reason, time.Now()
	w.st.Alarms++
	close(w.changed)
	w.changed = make(chan struct{})
	w.log.Error("state directory short of space: command intake paused (commands wait in their queue; interlock, trip monitor, e-stop and running sessions go on)",
		"dir", w.opts.Dir, "reason", reason, "free", Bytes(w.st.Free), "watermark", Bytes(w.opts.Watermark))
	return true
}

// margin is the hysteresis above the watermark before the alarm ends.
func (w *Watcher) margin() uint64 { return max(w.opts.Watermark/8, 256<<10) }

// missingReserve is the reserve to allocate again before the alarm ends.
func (w *Watcher) missingReserve() uint64 {
	if w.st.ReserveHeld {
		return 0
	}
	return w.opts.Reserve
}

// allocLocked allocates the reserve file and reports success.
func (w *Watcher) allocLocked() bool {
	if w.opts.Reserve == 0 {
		return true
	}
	if err := allocate(w.reservePath(), int64(w.opts.Reserve)); err != nil {
		w.log.Warn("cannot allocate the disk reserve", "path", w.reservePath(), "bytes", w.opts.Reserve, "err", err)
		return false
	}
	w.st.ReserveHeld = true
	return true
}

func (w *Watcher) report(changed bool, st State) {
	if changed && w.opts.OnChange != nil {
		w.opts.OnChange(st)
	}
}

func (w *Watcher) reservePath() string { return filepath.Join(w.opts.Dir, ReserveFile) }

// allocate makes path a file of n allocated bytes (fallocate, else zeros),
// fsynced; on failure nothing is left behind.
func allocate(path string, n int64) (err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return err
		}
		buf := make([]byte, 64<<10)
		for off := int64(0); off < n; off += int64(len(buf)) {
			if _, err = f.WriteAt(buf[:min(int64(len(buf)), n-off)], off); err != nil {
				return err
			}
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LocalWriteError reports whether err is a local write failure of a file
// (no space, quota, I/O error, read-only or too large file system), also
// when a library wrapped it with %s and only its words are left.
func LocalWriteError(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS, syscall.EFBIG} {
		if errors.Is(err, e) {
			return true
		}
	}
	s := err.Error()
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS, syscall.EFBIG} {
		if strings.Contains(s, e.Error()) {
			return true
		}
	}
	return false
}

// Bytes formats n as KiB, MiB or GiB.
func Bytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
