package diskspace

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// fakeFS is a file system of total bytes with free bytes left.
type fakeFS struct {
	mu          sync.Mutex
	free, total uint64
}

func (f *fakeFS) statfs(string) (uint64, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.free, f.total, nil
}

func (f *fakeFS) set(free uint64) { f.mu.Lock(); f.free = free; f.mu.Unlock() }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestWatcher: below the watermark the alarm is raised (once, with one
// change reported), Open closes; a local write failure releases the
// reserve once; space back above the watermark and its margin allocates
// the reserve again and clears the alarm.
func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	fs := &fakeFS{free: 100 << 20, total: 200 << 20}
	var changes []State
	w, err := New(Opts{Dir: dir, Watermark: 10 << 20, Reserve: 1 << 20, Statfs: fs.statfs, Logger: quiet(),
		OnChange: func(s State) { changes = append(changes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if open, _ := w.Open(); !open {
		t.Fatal("closed at start")
	}
	if fi, err := os.Stat(filepath.Join(dir, ReserveFile)); err != nil || fi.Size() != 1<<20 || !w.State().ReserveHeld {
		t.Fatalf("reserve at start: %v %v", fi, err)
	}
	_, changed := w.Open()
	fs.set(5 << 20)
	w.poll()
	w.poll()
	select {
	case <-changed:
	default:
		t.Fatal("Open's channel not closed at the alarm")
	}
	lows := 0
	for _, c := range changes {
		if c.Low {
			lows++
		}
	}
	if st := w.State(); !st.Low || st.Alarms != 1 || lows != 1 {
		t.Fatalf("after two low polls: %+v, %d changes", st, len(changes))
	}
	if open, _ := w.Open(); open {
		t.Fatal("open while low")
	}
	enospc := fmt.Errorf("write state.db: %w", &os.PathError{Op: "write", Path: "state.db", Err: syscall.ENOSPC})
	if !w.Failed(enospc) {
		t.Fatal("first local failure: reserve not released")
	}
	if w.Failed(enospc) {
		t.Fatal("second local failure: released twice")
	}
	if w.Failed(errors.New("bucket not found")) {
		t.Fatal("a non-local error released something")
	}
	if _, err := os.Stat(filepath.Join(dir, ReserveFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reserve file still there: %v", err)
	}
	fs.set(11 << 20) // above the watermark, below watermark + margin + reserve
	w.poll()
	if !w.State().Low {
		t.Fatal("alarm cleared inside the hysteresis")
	}
	fs.set(20 << 20)
	w.poll()
	st := w.State()
	if st.Low || !st.ReserveHeld || st.WriteFailures != 2 {
		t.Fatalf("after space returned: %+v", st)
	}
	if open, _ := w.Open(); !open {
		t.Fatal("still closed")
	}
}

// TestCheckWatermark: 0 and a watermark not below the file system's size
// are refused.
func TestCheckWatermark(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wm, total uint64
		ok        bool
	}{
		{"zero", 0, 1 << 30, false},
		{"equal to the size", 1 << 30, 1 << 30, false},
		{"above the size", 2 << 30, 1 << 30, false},
		{"below", 64 << 20, 1 << 30, true},
	} {
		if err := CheckWatermark(tc.wm, tc.total); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if _, err := New(Opts{Dir: t.TempDir(), Watermark: 0}); !errors.Is(err, ErrBadOpts) {
		t.Errorf("New with watermark 0: %v", err)
	}
}

// TestLocalWriteError: errno values through wrapping, and bbolt's %s
// wrapping of a resize error, are local write failures; others are not.
func TestLocalWriteError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", syscall.ENOSPC), true},
		{fmt.Errorf("x: %w", &os.PathError{Op: "write", Path: "f", Err: syscall.EIO}), true},
		{fmt.Errorf("x: %w", syscall.EDQUOT), true},
		{errors.New("file resize error: no space left on device"), true},
		{errors.New("amqp: channel closed"), false},
		{nil, false},
	} {
		if got := LocalWriteError(tc.err); got != tc.want {
			t.Errorf("%v: %v", tc.err, got)
		}
	}
}
