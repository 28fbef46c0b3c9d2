// Package http1 writes an HTTP/1.1 request as net/http's Request.Write
// writes it, byte for byte, for the requests of hcp-edge's three small HTTP
// clients: the simulator's GPIO over its unix socket (drivers/simgpio), the
// model router's remote tier (session/modelrouter) and the alerts' webhook
// receiver (transport/alert). Request.Write
// converts a host name beyond ASCII to punycode, which links x/net's IDNA
// code and tables, and runs its own transfer machinery: 32,768 bytes of the
// armv7 binary, 24,576 net of this package (docs/FOOTPRINT.md, eighth
// round). WriteRequest refuses the requests it would have to write
// differently (ErrUnsupported) instead.
package http1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
)

// ErrUnsupported is a request WriteRequest does not write: a host name
// beyond ASCII (Request.Write writes its punycode), the CONNECT method, a
// Transfer-Encoding or trailers, a body of unknown length, or a Connection
// header field together with Close.
var ErrUnsupported = errors.New("http1: request not supported")

// headerNewlineToSpace is net/http's: a header value's line breaks become spaces.
var headerNewlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

// WriteRequest writes req into w as req.Write(w) would, and leaves the flush
// to the caller as Request.Write does with a *bufio.Writer. It reads req's
// body to its end and closes it. The bytes are Request.Write's
// (TestWriteRequestAsNetHTTP): the request line with the URL's RequestURI;
// Host (the request's Host or the URL's, empty if not a valid Host value,
// without an IPv6 zone); User-Agent (Go's default unless the header sets
// one; none if set empty); Connection: close for Close; Content-Length for
// a body, and for POST, PUT and PATCH without one; the other header fields
// sorted by name, each value's line breaks as spaces and trimmed; the body.
func WriteRequest(w *bufio.Writer, req *http.Request) (err error) {
	if req.Body != nil {
		defer func() {
			if cerr := req.Body.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	host := req.Host
	if host == "" {
		if req.URL == nil {
			return errors.New("http: Request.Write on Request with no Host or URL set")
		}
		host = req.URL.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	switch {
	case !ascii(host):
		return fmt.Errorf("%w: host %q is not ASCII", ErrUnsupported, host)
	case method == http.MethodConnect:
		return fmt.Errorf("%w: CONNECT", ErrUnsupported)
	case len(req.TransferEncoding) > 0 || len(req.Trailer) > 0:
		return fmt.Errorf("%w: Transfer-Encoding or trailers", ErrUnsupported)
	case req.Close && req.Header.Get("Connection") != "":
		return fmt.Errorf("%w: a Connection header field with Close", ErrUnsupported)
	case req.ContentLength < 0 || req.ContentLength == 0 && req.Body != nil && req.Body != http.NoBody:
		return fmt.Errorf("%w: a body of unknown length", ErrUnsupported)
	case req.ContentLength > 0 && req.Body == nil:
		return fmt.Errorf("http: Request.ContentLength=%d with nil Body", req.ContentLength)
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		if int64(len(b)) != req.ContentLength {
			return fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, len(b))
		}
		body = b
	}
	for i := 0; i < len(host); i++ {
		if !validHostByte(host[i]) {
			host = "" // as Request.Write does when not writing to a proxy
			break
		}
	}
	host = removeZone(host)
	ruri := req.URL.RequestURI()
	for i := 0; i < len(ruri); i++ {
		if b := ruri[i]; b < ' ' || b == 0x7f {
			return errors.New("net/http: can't write control character in Request.URL")
		}
	}

	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(ruri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	userAgent := "Go-http-client/1.1"
	if _, ok := req.Header["User-Agent"]; ok {
		userAgent = req.Header.Get("User-Agent")
	}
	if userAgent != "" {
		field(w, "User-Agent", userAgent)
	}
	if req.Close {
		w.WriteString("Connection: close\r\n")
	}
	if len(body) > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		w.WriteString("Content-Length: ")
		w.WriteString(strconv.Itoa(len(body)))
		w.WriteString("\r\n")
	}
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if token(k) { // Request.Write drops a field whose name is not a token
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			field(w, k, v)
		}
	}
	w.WriteString("\r\n")
	_, err = w.Write(body)
	return err
}

// field writes one header field, its value as Request.Write cleans it.
func field(w *bufio.Writer, name, value string) {
	w.WriteString(name)
	w.WriteString(": ")
	w.WriteString(textproto.TrimString(headerNewlineToSpace.Replace(value)))
	w.WriteString("\r\n")
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// validHostByte is x/net/http/httpguts' table of the bytes a Host value may hold.
func validHostByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		strings.IndexByte("!$%&'()*+,-.:;=[]_~", b) >= 0
}

// token reports whether s is an HTTP token (a valid header field name).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0) {
			return false
		}
	}
	return true
}

// removeZone removes an IPv6 zone from a bracketed host, as Request.Write does.
func removeZone(host string) string {
	if !strings.HasPrefix(host, "[") {
		return host
	}
	i := strings.LastIndex(host, "]")
	if i < 0 {
		return host
	}
	j := strings.LastIndex(host[:i], "%")
	if j < 0 {
		return host
	}
	return host[:j] + host[i:]
}
