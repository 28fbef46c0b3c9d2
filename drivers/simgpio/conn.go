package simgpio

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"hcp-edge/drivers/nbio"
	"hcp-edge/internal/http1"
)

// The client side of HTTP/1.1 over the simulator's unix socket, without
// net/http's Transport and Client (about 0.4 MB of the armv7 binary for one
// request at a time to one local server; docs/FOOTPRINT.md): each call takes
// an idle connection or dials one, writes the request with Request.Write,
// reads the reply with http.ReadResponse, and keeps the connection for the
// next call when the reply was read whole and the server keeps it open.
// The request is written by http1.WriteRequest: Request.Write's bytes
// without linking Request.Write (docs/FOOTPRINT.md, eighth round).
// The context's deadline reaches the socket, and its cancellation (or
// Close) interrupts the I/O in progress.

// maxIdle bounds the connections kept between calls (the long polls of the
// inputs and the reads of the monitor run at once).
const maxIdle = 8

// conns is the pool of idle connections to one unix socket.
type conns struct {
	sock string

	mu     sync.Mutex
	idle   []*conn
	closed bool
}

// conn is one connection to the simulator with the buffers its calls reuse
// (a request or reply is a few hundred bytes; net/http's own were 4 KiB
// each, allocated per call). Its bytes go through an nbio.FD.
type conn struct {
	c  net.Conn
	fd *nbio.FD
	br *bufio.Reader
	bw *bufio.Writer
}

// Close closes the connection.
func (c *conn) Close() error { return c.c.Close() }

func (p *conns) get(ctx context.Context) (*conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", p.sock)
	if err != nil {
		return nil, err
	}
	fd, err := nbio.New(c.(*net.UnixConn))
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &conn{c: c, fd: fd, br: bufio.NewReaderSize(fd, 1024), bw: bufio.NewWriterSize(fd, 512)}, nil
}

// put keeps c for the next call, or closes it.
func (p *conns) put(c *conn) {
	p.mu.Lock()
	if p.closed || len(p.idle) >= maxIdle {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// close closes the idle connections and refuses to keep any more.
func (p *conns) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.Close()
	}
}

// roundTrip sends req (whose context bounds the call) and returns the
// status and at most maxBody bytes of the body.
func (p *conns) roundTrip(req *http.Request) (status int, statusText string, body []byte, err error) {
	ctx := req.Context()
	c, err := p.get(ctx)
	if err != nil {
		return 0, "", nil, err
	}
	keep := false
	defer func() {
		if keep {
			p.put(c)
		} else {
			_ = c.Close()
		}
	}()
	deadline, _ := ctx.Deadline()
	if err := c.c.SetDeadline(deadline); err != nil {
		return 0, "", nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	// As Request.Write given a *bufio.Writer, WriteRequest writes into it and
	// leaves the flush to the caller.
	if err := http1.WriteRequest(c.bw, req); err != nil {
		c.bw.Reset(c.fd)
		return 0, "", nil, fmt.Errorf("write request: %w", err)
	}
	if err := c.bw.Flush(); err != nil {
		return 0, "", nil, fmt.Errorf("write request: %w", err)
	}
	br := c.br
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return 0, "", nil, fmt.Errorf("read reply: %w", err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, "", nil, fmt.Errorf("read reply body: %w", err)
	}
	// Reusable only if the body was read to its end, nothing more was sent,
	// the server keeps the connection, and the call was not interrupted.
	var one [1]byte
	if n, _ := resp.Body.Read(one[:]); n == 0 && !resp.Close && br.Buffered() == 0 && stop() {
		if c.c.SetDeadline(time.Time{}) == nil {
			keep = true
		}
	}
	return resp.StatusCode, resp.Status, body, nil
}
