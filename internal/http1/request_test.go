package http1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestWriteRequestAsNetHTTP: for every request of the table, WriteRequest
// writes the bytes Request.Write writes, or refuses with ErrUnsupported
// where it would have to write differently.
func TestWriteRequestAsNetHTTP(t *testing.T) {
	type req struct {
		method, url string
		body        []byte // nil: no body
		header      map[string][]string
		host        string // Request.Host, when set
		close       bool
	}
	cases := []req{
		// drivers/simgpio's requests
		{method: "GET", url: "http://rig-sim/gpio/GPIO17"},
		{method: "GET", url: "http://rig-sim/gpio/estop/edge?level=false&timeout_ms=250"},
		{method: "PUT", url: "http://rig-sim/gpio/heater", body: []byte(`{"level":true}`), header: map[string][]string{"Content-Type": {"application/json"}}},
		{method: "GET", url: "http://rig-sim/gpio/a%20b%2Cc%3Bd"},
		{method: "GET", url: "http://rig-sim/gpio/%C3%A9t%C3%A9"},
		// session/modelrouter's requests
		{method: "POST", url: "https://api.example.com/v1/chat/completions", body: []byte(`{"model":"m","messages":[]}`), close: true,
			header: map[string][]string{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-123"}}},
		{method: "GET", url: "http://127.0.0.1:8080/v1/models", close: true, header: map[string][]string{"Authorization": {"Bearer  k\r\nX-Evil: 1 "}}},
		{method: "GET", url: "http://[::1]:8080/v1/models", close: true},
		{method: "GET", url: "http://[fe80::1%25eth0]:8080/v1/models"},
		// the rest of what WriteRequest claims
		{method: "", url: "http://h/"},
		{method: "PUT", url: "http://h/x", body: []byte{}},
		{method: "DELETE", url: "http://h/x"},
		{method: "HEAD", url: "http://h/x"},
		{method: "POST", url: "http://h/x"},
		{method: "GET", url: "http://h/x", host: "other:81"},
		{method: "GET", url: "http://h/x", host: "bad host"},
		{method: "GET", url: "http://h/x", header: map[string][]string{"User-Agent": {"hcp-edge/1"}, "Accept": {"a", "b"}, "Bad Name": {"x"}}},
		{method: "GET", url: "http://h/x", header: map[string][]string{"User-Agent": {""}}},
		{method: "GET", url: "http://h/x", header: map[string][]string{"Host": {"ignored"}, "Content-Length": {"9"}}},
		{method: "GET", url: "http://h/x?q=%0a"},
	}
	for _, c := range cases {
		mk := func() *http.Request {
			var r *http.Request
			var err error
			if c.body != nil {
				r, err = http.NewRequestWithContext(context.Background(), c.method, c.url, bytes.NewReader(c.body))
			} else {
				r, err = http.NewRequestWithContext(context.Background(), c.method, c.url, nil)
			}
			if err != nil {
				t.Fatalf("%s %s: %v", c.method, c.url, err)
			}
			for k, vs := range c.header {
				r.Header[k] = vs
			}
			if c.host != "" {
				r.Host = c.host
			}
			r.Close = c.close
			return r
		}
		var want, got bytes.Buffer
		wantErr := mk().Write(&want)
		bw := bufio.NewWriter(&got)
		gotErr := WriteRequest(bw, mk())
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s %s: Request.Write error %v, WriteRequest error %v", c.method, c.url, wantErr, gotErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if got.String() != want.String() {
			t.Errorf("%s %s:\nWriteRequest  %q\nRequest.Write %q", c.method, c.url, got.String(), want.String())
		}
	}
}

// TestWriteRequestRefuses: what Request.Write would write differently is
// refused with ErrUnsupported, not written.
func TestWriteRequestRefuses(t *testing.T) {
	idn, _ := http.NewRequest("GET", "http://bücher.example/x", nil)
	connect, _ := http.NewRequest("CONNECT", "http://h:443", nil)
	chunked, _ := http.NewRequest("POST", "http://h/x", strings.NewReader("abc"))
	chunked.ContentLength = -1
	closeConn, _ := http.NewRequest("GET", "http://h/x", nil)
	closeConn.Close = true
	closeConn.Header.Set("Connection", "keep-alive")
	for _, r := range []*http.Request{idn, connect, chunked, closeConn} {
		var b bytes.Buffer
		if err := WriteRequest(bufio.NewWriter(&b), r); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s %s: error %v, want ErrUnsupported", r.Method, r.URL, err)
		}
	}
}
