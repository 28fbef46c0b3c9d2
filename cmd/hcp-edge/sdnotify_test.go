package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// notifySocket listens where systemd would and returns its datagrams.
func notifySocket(t *testing.T, name string) <-chan string {
	t.Helper()
	addr := name
	if strings.HasPrefix(name, "@") {
		addr = "\x00" + name[1:]
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOTIFY_SOCKET", name)
	ch := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			ch <- string(buf[:n])
		}
	}()
	t.Cleanup(func() { _ = conn.Close(); <-done })
	return ch
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(hangGuard):
		t.Fatal("no notification")
		return ""
	}
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
