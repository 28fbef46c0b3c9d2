// Package notifytest listens where systemd would for sd_notify(3)
// datagrams, for the tests of the agent's readiness and watchdog
// notifications (cmd/hcp-edge/internal/agent's own, and package main's,
// which run the binary). Only tests import it.
package notifytest

import (
	"net"
	"strings"
	"testing"
	"time"
)

// Listen binds a unixgram socket at name (a leading "@" names an abstract
// socket, as systemd writes it), points NOTIFY_SOCKET at it for the test, and
// returns the datagrams received. The socket and its reader end with the test;
// datagrams that arrive while the channel's 64 places are full are dropped.
func Listen(t testing.TB, name string) <-chan string {
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
	go func() { // the reader: owned by the test, ended by closing conn
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			select {
			case ch <- string(buf[:n]):
			default: // nobody reads (a watchdog left running): never block the reader
			}
		}
	}()
	t.Cleanup(func() { _ = conn.Close(); <-done })
	return ch
}

// Next returns the next datagram, failing the test if none comes within guard.
func Next(t testing.TB, ch <-chan string, guard time.Duration) string {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(guard):
		t.Fatal("no notification")
		return ""
	}
}
