package modelrouter

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"hcp-edge/internal/http1"
)

// Doer sends one HTTP request and returns its response; *http.Client is
// one (tests pass their own), and NewHTTPClient the production one.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Timeouts of the production client: the TCP dial, the TLS handshake and
// the wait for the response's header; the deadline of each attempt comes
// from its context and bounds the whole exchange.
const (
	dialTimeout           = 5 * time.Second
	tlsHandshakeTimeout   = 5 * time.Second
	responseHeaderTimeout = 60 * time.Second
)

// NewHTTPClient returns the production client of the remote tier: HTTP/1.1
// over one new connection a request (TCP, or TLS for https with the
// system's roots), written as net/http's Request.Write writes it
// (http1.WriteRequest: the same bytes, without linking Request.Write; a host
// name beyond ASCII, which Request.Write would write as punycode, is
// refused) and read with net/http's http.ReadResponse, without its
// Transport and Client. The remote
// tier makes a chat completion once a session and a health check every few
// seconds, so a pool of idle connections buys nothing, and the Transport
// with its pool, proxies and transparent gzip is ~0.2 MB of the armv7
// binary (docs/FOOTPRINT.md, issue 41's round). No proxy is used: an
// instance is reached directly (docs/ANALYSIS.md).
func NewHTTPClient() Doer { return oneShot{} }

// oneShot is the production Doer. roots, when set, replaces the system's
// certificate roots (a test's own CA).
type oneShot struct{ roots *x509.CertPool }

// Do dials req's host, sends req and returns the response, whose Body
// closes the connection. The context's deadline reaches the socket, and
// its cancellation interrupts the I/O in progress.
func (o oneShot) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	addr, secure, err := hostPort(req)
	if err != nil {
		return nil, err
	}
	conn, err := dial(ctx, addr, secure, req.URL.Hostname(), o.roots)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if hd := time.Now().Add(responseHeaderTimeout); !ok || hd.Before(deadline) {
		deadline = hd
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return fail(err)
	}
	req.Close = true // one request a connection: the server closes it after the reply
	bw := bufio.NewWriterSize(conn, 4096)
	if err := http1.WriteRequest(bw, req); err != nil {
		return fail(fmt.Errorf("write request: %w", err))
	}
	if err := bw.Flush(); err != nil {
		return fail(fmt.Errorf("write request: %w", err))
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), req)
	if err != nil {
		return fail(fmt.Errorf("read response: %w", err))
	}
	ctxDeadline, _ := ctx.Deadline() // the body within the attempt's own deadline (zero: none)
	if err := conn.SetDeadline(ctxDeadline); err != nil {
		_ = resp.Body.Close()
		return fail(err)
	}
	resp.Body = &connBody{ReadCloser: resp.Body, conn: conn, stop: stop}
	return resp, nil
}

// hostPort is the address req is sent to and whether it is TLS.
func hostPort(req *http.Request) (addr string, secure bool, err error) {
	u := req.URL
	switch u.Scheme {
	case "http":
	case "https":
		secure = true
	default:
		return "", false, fmt.Errorf("modelrouter: unsupported scheme %q in %s (http or https)", u.Scheme, u.Redacted())
	}
	port := u.Port()
	if port == "" {
		port = map[bool]string{false: "80", true: "443"}[secure]
	}
	if u.Hostname() == "" {
		return "", false, errors.New("modelrouter: no host in " + u.Redacted())
	}
	return net.JoinHostPort(u.Hostname(), port), secure, nil
}

// dial opens a TCP connection to addr, with TLS on it when secure (the
// server's name checked against serverName).
func dial(ctx context.Context, addr string, secure bool, serverName string, roots *x509.CertPool) (net.Conn, error) {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	if !secure {
		return d.DialContext(ctx, "tcp", addr)
	}
	hctx, cancel := context.WithTimeout(ctx, dialTimeout+tlsHandshakeTimeout)
	defer cancel()
	td := &tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: serverName, RootCAs: roots, MinVersion: tls.VersionTLS12}}
	return td.DialContext(hctx, "tcp", addr)
}

// connBody is a response body that closes its connection when closed.
type connBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
}

// Close closes the body and the connection.
func (b *connBody) Close() error {
	b.stop()
	err := b.ReadCloser.Close()
	if cerr := b.conn.Close(); err == nil {
		err = cerr
	}
	return err
}
