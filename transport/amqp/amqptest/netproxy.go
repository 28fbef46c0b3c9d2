package amqptest

import (
	"fmt"
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
// broker, or one cluster node), byte for byte: a test starts one where an
// agent expects its broker to appear, and closes it to cut every connection
// at once. Blackhole partitions it instead: nothing is read or written any
// more in either direction and nothing is closed (new connections are
// accepted and stall too), as when a network path dies; Heal lets the bytes
// flow again. Its goroutines (the accept loop, two copies per connection)
// end at Close, which the test's cleanup also calls.
type Proxy struct {
	l  net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	open  chan struct{} // closed while bytes flow; replaced by Blackhole
	done  chan struct{} // closed by Close
	conns map[net.Conn]bool
}

// StartProxy listens on addr ("127.0.0.1:0" for any port) and forwards to
// target until Close.
func StartProxy(t testing.TB, addr, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, open: make(chan struct{}), done: make(chan struct{}), conns: map[net.Conn]bool{}}
	close(p.open)
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
			p.conns[c], p.conns[u] = true, true
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(u, c)
			go p.pipe(c, u)
		}
	}()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// gate waits while the proxy is blackholed; false once it is closed.
func (p *Proxy) gate() bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
		return true
	case <-p.done:
		return false
	}
}

// pipe copies src to dst through the gate, then closes both.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer func() {
		_ = src.Close()
		_ = dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for p.gate() {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Blackhole partitions every connection through the proxy, present and new.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

// Heal lets bytes flow again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// Close stops listening, closes every forwarded connection and waits for
// the proxy's goroutines. It may be called more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	close(p.done)
	_ = p.l.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
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
