package modelrouter

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOneShotHTTPAndTLS: the production client posts to a plain and a TLS
// server (its certificate checked against the test's CA) and reads the
// whole reply; the body's Close closes the connection.
func TestOneShotHTTPAndTLS(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"path":"`+r.URL.Path+`","auth":"`+r.Header.Get("Authorization")+`","body":`+string(b)+`}`)
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	secure := httptest.NewTLSServer(h)
	defer secure.Close()
	roots := secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	for _, c := range []struct {
		url string
		d   Doer
	}{{plain.URL, NewHTTPClient()}, {secure.URL, oneShot{roots: roots}}} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/v1/chat/completions", strings.NewReader(`{"x":1}`))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := c.d.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", c.url, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != 200 || string(b) != `{"path":"/v1/chat/completions","auth":"Bearer k","body":{"x":1}}` {
			t.Fatalf("%s: %d %q %v", c.url, resp.StatusCode, b, err)
		}
	}
	// Without the test's CA the TLS server's certificate is refused.
	req, _ := http.NewRequest(http.MethodGet, secure.URL+"/models", nil)
	if _, err := NewHTTPClient().Do(req); err == nil {
		t.Fatal("a certificate of an unknown CA was accepted")
	}
}

// TestOneShotDeadline: a server that accepts and never answers is left at
// the context's deadline, as a deadline error.
func TestOneShotDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // owned by the listener: Accept fails once l is closed
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+l.Addr().String()+"/models", nil)
	t0 := time.Now()
	_, err = NewHTTPClient().Do(req)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("err %v, want the deadline", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("returned after %v", d)
	}
}

// TestOneShotRefusesOtherSchemes: only http and https are dialled.
func TestOneShotRefusesOtherSchemes(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "ftp://example.org/models", nil)
	if _, err := NewHTTPClient().Do(req); err == nil || !strings.Contains(err.Error(), "unsupported scheme") {
		t.Fatalf("err %v", err)
	}
}
