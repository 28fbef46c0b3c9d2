package main

import (
	"path/filepath"
	"strings"
	"testing"

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

// TestDaemonNotifiesSystemd runs the daemon as systemd would with
// Type=notify and WatchdogSec: READY=1 once the control socket is up,
// WATCHDOG=1 while it runs, STOPPING=1 on SIGTERM.
func TestDaemonNotifiesSystemd(t *testing.T) {
	ch := notifySocket(t, filepath.Join(t.TempDir(), "notify"))
	t.Setenv("WATCHDOG_USEC", "400000")
	t.Setenv("WATCHDOG_PID", "")
	e := newEnv(t, nil)
	e.start()
	if m := next(t, ch); !strings.HasPrefix(m, "READY=1\nSTATUS=control socket ") {
		t.Errorf("first message %q", m)
	}
	if m := next(t, ch); m != "WATCHDOG=1" {
		t.Errorf("second message %q", m)
	}
	if err := e.stop(); err != nil {
		t.Errorf("daemon: %v\n%s", err, e.logs)
	}
	for {
		if m := next(t, ch); m == "STOPPING=1" {
			break
		} else if m != "WATCHDOG=1" {
			t.Fatalf("unexpected %q", m)
		}
	}
}
