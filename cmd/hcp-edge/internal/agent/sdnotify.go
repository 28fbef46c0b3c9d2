package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// This file speaks systemd's notify protocol (sd_notify(3)) by hand: one
// datagram per state change on the unix socket named by $NOTIFY_SOCKET
// ("@name" is an abstract socket). Without $NOTIFY_SOCKET everything here
// does nothing, so the daemon runs the same outside systemd.

// sdNotify sends state (e.g. "READY=1") to the service manager. It returns
// false, nil when there is no service manager to tell.
func sdNotify(state string) (bool, error) {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return false, nil
	}
	if name[0] == '@' {
		name = "\x00" + name[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte(state)); err != nil {
		return false, fmt.Errorf("sd_notify: %w", err)
	}
	return true, nil
}

// watchdogInterval is the period systemd expects WATCHDOG=1 within
// ($WATCHDOG_USEC, when $WATCHDOG_PID is unset or this process), or 0.
func watchdogInterval() time.Duration {
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	us, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// notifier tells systemd that the daemon is ready, keeps its watchdog fed
// while alive reports true, and says when it is stopping. Close stops the
// watchdog goroutine and waits for it.
type notifier struct {
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startNotifier sends READY=1 (with a status line) and, if systemd asked for
// a watchdog, starts pinging WATCHDOG=1 at half its interval for as long as
// alive returns true within that half interval. alive must return promptly
// while the daemon is healthy (the monitor's Status does: it takes the
// monitor's lock, so a wedged monitor stops the pings and systemd restarts
// the daemon).
func startNotifier(log *slog.Logger, status string, alive func() bool) *notifier {
	n := &notifier{log: log}
	ok, err := sdNotify("READY=1\nSTATUS=" + status)
	if err != nil {
		log.Warn("systemd notify failed", "err", err)
	}
	every := watchdogInterval() / 2
	if !ok || every <= 0 {
		n.cancel = func() {}
		return n
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.feed(ctx, every, alive)
	}()
	log.Info("systemd watchdog fed", "every", every)
	return n
}

// feed pings the watchdog. Each health check runs in a helper goroutine so
// that a wedged check cannot wedge Close; at most one is in flight, and a
// wedged one is left behind on purpose (systemd restarts the daemon when the
// pings stop, which is the point).
func (n *notifier) feed(ctx context.Context, every time.Duration, alive func() bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	var pending chan bool // the check in flight, if any
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if pending == nil {
			pending = make(chan bool, 1)
			go func(res chan<- bool) { res <- alive() }(pending)
		}
		wait := time.NewTimer(every)
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case ok := <-pending:
			wait.Stop()
			pending = nil
			if !ok {
				n.log.Warn("systemd watchdog not fed: daemon unhealthy")
				continue
			}
		case <-wait.C:
			n.log.Error("systemd watchdog not fed: health check did not answer", "within", every)
			continue
		}
		if _, err := sdNotify("WATCHDOG=1"); err != nil {
			n.log.Warn("systemd watchdog ping failed", "err", err)
		}
	}
}

// Stopping tells systemd that the daemon is shutting down and stops the
// watchdog pings.
func (n *notifier) Stopping() {
	n.Close()
	if _, err := sdNotify("STOPPING=1"); err != nil && !errors.Is(err, net.ErrClosed) {
		n.log.Warn("systemd notify failed", "err", err)
	}
}

// Close stops the watchdog goroutine and waits for it.
func (n *notifier) Close() {
	n.cancel()
	n.wg.Wait()
}
