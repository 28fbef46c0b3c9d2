package agent

import (
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/agent/notifytest"
)

// notifySocket listens where systemd would and returns its datagrams.
func notifySocket(t *testing.T, name string) <-chan string {
	t.Helper()
	return notifytest.Listen(t, name)
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	return notifytest.Next(t, ch, hangGuard)
}

func TestSDNotify(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, name := range []string{filepath.Join(t.TempDir(), "notify"), "@hcp-edge-test-" + t.Name()} {
		t.Run(name, func(t *testing.T) {
			ch := notifySocket(t, name)
			t.Setenv("WATCHDOG_USEC", "100000") // pings every 50 ms
			t.Setenv("WATCHDOG_PID", "")
			var healthy atomic.Bool
			healthy.Store(true)
			n := startNotifier(quiet, "up", healthy.Load)
			if m := next(t, ch); m != "READY=1\nSTATUS=up" {
				t.Errorf("first message %q", m)
			}
			for range 2 {
				if m := next(t, ch); m != "WATCHDOG=1" {
					t.Errorf("ping %q", m)
				}
			}
			healthy.Store(false)
			// Drain a ping that may have raced the switch, then expect silence.
			time.Sleep(60 * time.Millisecond)
			for len(ch) > 0 {
				<-ch
			}
			select {
			case m := <-ch:
				if m == "WATCHDOG=1" {
					t.Error("pinged while unhealthy")
				}
			case <-time.After(200 * time.Millisecond):
			}
			n.Stopping()
			if m := next(t, ch); m != "STOPPING=1" {
				t.Errorf("last message %q", m)
			}
		})
	}
}

func TestSDNotifyWithoutSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if ok, err := sdNotify("READY=1"); ok || err != nil {
		t.Errorf("sdNotify = %v, %v; want false, nil", ok, err)
	}
	t.Setenv("WATCHDOG_USEC", "1000000")
	t.Setenv("WATCHDOG_PID", "1")
	if d := watchdogInterval(); d != 0 {
		t.Errorf("watchdog for another pid: %v", d)
	}
	n := startNotifier(slog.New(slog.NewTextHandler(io.Discard, nil)), "x", func() bool { return true })
	n.Stopping() // nothing to stop, nothing to wait for
}
