package amqptest

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/rabbitmq/amqp091-go"
)

// ClosedPort returns a loopback host:port nothing listens on (a listener
// just closed): a broker address that refuses connections until a Proxy
// starts on it.
func ClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// Port is the port of a host:port address.
func Port(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := fmt.Sscan(p, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Proxy forwards TCP connections accepted on its address to a target (the
// broker), byte for byte: a test starts one where an agent expects its
// broker to appear, and closes it to cut every connection at once. Its
// goroutines (the accept loop, two copies per connection) end at Close,
// which the test's cleanup also calls.
type Proxy struct {
	l     net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
	once  sync.Once
}

// StartProxy listens on addr and forwards to target until Close.
func StartProxy(t testing.TB, addr, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(u, c); _ = u.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, u); _ = c.Close() }()
		}
	}()
	t.Cleanup(p.Close)
	return p
}

// Close stops listening, closes every forwarded connection and waits for
// the proxy's goroutines. It may be called more than once.
func (p *Proxy) Close() {
	p.once.Do(func() {
		_ = p.l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
}

// DeleteQueues deletes the callee's command and dead-letter queues (with
// the callee's login edge, the only one allowed to) and the caller's event
// queue (with the caller's login): a test starts and ends with none of
// them, as the broker's users allow. Errors are ignored (a queue may not
// exist).
func DeleteQueues(edge, caller *amqp091.Connection, calleeID, callerID string) {
	for _, d := range []struct {
		conn *amqp091.Connection
		q    string
	}{{edge, "hcp.cmd." + calleeID}, {edge, "hcp.dlq." + calleeID}, {caller, "hcp.evt." + callerID}} {
		if ch, err := d.conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(d.q, false, false, false)
			_ = ch.Close()
		}
	}
}
