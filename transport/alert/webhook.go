package alert

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"hcp-edge/internal/http1"
)

// webhookReceiver POSTs each alert as one JSON object (Body) to a URL:
// a generic webhook, which Slack-, Teams-, ntfy- or Alertmanager-style
// relays take. HTTP/1.1, one connection a request, written with
// internal/http1.WriteRequest (Request.Write's bytes without its IDNA
// tables; a host name beyond ASCII is refused) and read with
// http.ReadResponse: net/http's
// client Transport (~0.2 MB of the armv7 binary) is not linked for an
// alert now and then (session/modelrouter's NewHTTPClient does the same).
type webhookReceiver struct {
	nm     string
	u      *url.URL
	addr   string
	secure bool
	// tlsConfig, when set, replaces the default TLS configuration (tests).
	tlsConfig *tls.Config
}

// Body is the JSON body of a webhook's POST (docs/ALERTS.md). The same id
// is in the Idempotency-Key header: a receiver that de-duplicates sees each
// alert once, however many times it was retried.
type Body struct {
	Alert
	// Source is always "hcp-edge".
	Source string `json:"source"`
	// Host is the agent's host name.
	Host string `json:"host"`
}

func newWebhook(name string, u *url.URL) (*webhookReceiver, error) {
	r := &webhookReceiver{nm: name, u: u, secure: u.Scheme == "https"}
	port := u.Port()
	if port == "" {
		port = map[bool]string{false: "80", true: "443"}[r.secure]
	}
	r.addr = net.JoinHostPort(u.Hostname(), port)
	return r, nil
}

func (r *webhookReceiver) name() string { return r.nm }

// send POSTs a and reads the status: 2xx delivers, anything else is
// ErrRejected with the status and the start of the answer.
func (r *webhookReceiver) send(ctx context.Context, a Alert) error {
	body, err := json.Marshal(Body{Alert: a, Source: "hcp-edge", Host: helloName()})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadURL, r.nm, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", a.ID)
	req.Header.Set("User-Agent", "hcp-edge-alert/1")
	if u := r.u.User; u != nil { // https://user:token@host/...: basic authentication
		pw, _ := u.Password()
		req.SetBasicAuth(u.Username(), pw)
	}
	req.Close = true
	conn, err := dialContext(ctx, r.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return err
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if r.secure {
		tc := r.tlsConfig
		if tc == nil {
			tc = &tls.Config{ServerName: r.u.Hostname(), MinVersion: tls.VersionTLS12}
		}
		tconn := tls.Client(conn, tc)
		if err := tconn.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("TLS: %w", err)
		}
		conn = tconn
	}
	bw := bufio.NewWriterSize(conn, 4096)
	if err := http1.WriteRequest(bw, req); err != nil {
		return fmt.Errorf("write request: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), req)
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("%w: HTTP %s: %q", ErrRejected, resp.Status, head)
	}
	return nil
}
