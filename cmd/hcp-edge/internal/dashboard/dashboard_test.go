package dashboard_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/dashboard"
)

type fakeSource struct{ plots map[string]string }

func (f fakeSource) Snapshot(context.Context) (any, error) {
	return map[string]any{"status": map[string]any{"latched": false}}, nil
}

func (f fakeSource) Plot(_ context.Context, sid, file, viewer string) ([]byte, error) {
	if p, ok := f.plots[sid+"/"+file]; ok {
		return []byte(p), nil
	}
	return nil, fmt.Errorf("%w: %s/%s", dashboard.ErrNoPlot, sid, file)
}

func serve(t *testing.T) string {
	t.Helper()
	s, err := dashboard.Serve("127.0.0.1:0", fakeSource{plots: map[string]string{"s1/a.svg": "<svg/>"}},
		dashboard.Opts{Every: 10 * time.Millisecond, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return "http://" + s.Addr().String()
}

// TestRoutes: the page and its assets, the state, the plots, and nothing
// but GET and HEAD.
func TestRoutes(t *testing.T) {
	base := serve(t)
	tests := []struct {
		name, method, path string
		code               int
		ctype, body        string
	}{
		{"page", "GET", "/", 200, "text/html", "hcp-edge"},
		{"script", "GET", "/static/app.js", 200, "javascript", "EventSource"},
		{"style", "GET", "/static/style.css", 200, "text/css", ".banner"},
		{"head", "HEAD", "/static/app.js", 200, "javascript", ""},
		{"no directory listing", "GET", "/static/", 404, "", ""},
		{"unknown file", "GET", "/static/x.js", 404, "", ""},
		{"no other file of the binary", "GET", "/static/..%2fdashboard.go", 404, "", ""},
		{"state", "GET", "/api/state", 200, "application/json", `"latched":false`},
		{"plot", "GET", "/plots/s1/a.svg", 200, "image/svg+xml", "<svg/>"},
		{"unknown plot", "GET", "/plots/s1/b.svg", 404, "", ""},
		{"not an svg", "GET", "/plots/s1/growth_log.csv", 404, "", ""},
		{"unknown path", "GET", "/api/reset", 404, "", ""},
		{"post", "POST", "/api/state", 405, "", "read-only"},
		{"put", "PUT", "/", 405, "", ""},
		{"delete", "DELETE", "/plots/s1/a.svg", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader("x"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.code || !strings.Contains(resp.Header.Get("Content-Type"), tt.ctype) || !strings.Contains(string(b), tt.body) {
				t.Fatalf("%s %s: %s %q %.80q", tt.method, tt.path, resp.Status, resp.Header.Get("Content-Type"), b)
			}
			if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Fatalf("no CSP: %v", resp.Header)
			}
		})
	}
}

// TestEvents: the stream sends snapshots; a second stream beyond
// MaxStreams is refused; Shutdown ends the open stream.
func TestEvents(t *testing.T) {
	s, err := dashboard.Serve("127.0.0.1:0", fakeSource{}, dashboard.Opts{Every: 10 * time.Millisecond, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr().String()
	resp, err := http.Get(base + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	got := ""
	for strings.Count(got, "data: ") < 2 {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("stream: %v after %q", err, got)
		}
		got += string(buf[:n])
	}
	r2, err := http.Get(base + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	_ = r2.Body.Close()
	if r2.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second stream: %s, want 429", r2.Status)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown with an open stream: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("stream ended: %v", err)
	}
}

// TestLoopbackOnly: an address beyond loopback is refused without AllowLAN.
func TestLoopbackOnly(t *testing.T) {
	if _, err := dashboard.Serve("0.0.0.0:0", fakeSource{}, dashboard.Opts{}); !errors.Is(err, dashboard.ErrNotLoopback) {
		t.Fatalf("0.0.0.0 without AllowLAN: %v", err)
	}
}

// TestStaticETag: a page file carries an ETag; asked again with it, the
// answer is 304 without a body.
func TestStaticETag(t *testing.T) {
	base := serve(t)
	resp, err := http.Get(base + "/static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req, _ := http.NewRequest("GET", base+"/static/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified || len(b) != 0 {
		t.Fatalf("with If-None-Match: %s, %d bytes", resp.Status, len(b))
	}
}

// TestStaticGzCurrent: each embedded static/NAME.gz opens to static/NAME,
// byte for byte, so an edited page file without `make schemas-gz` fails
// here; and every page file has its .gz.
func TestStaticGzCurrent(t *testing.T) {
	plain, err := filepath.Glob("static/*.*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range plain {
		if strings.HasSuffix(p, ".gz") {
			continue
		}
		n++
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p + ".gz")
		if err != nil {
			t.Fatalf("%s has no .gz: run make schemas-gz (%v)", p, err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s.gz: %v", p, err)
		}
		got, err := io.ReadAll(zr)
		_ = f.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("the embedded %s.gz is not %s (%v): run make schemas-gz", p, p, err)
		}
	}
	if n != 3 {
		t.Fatalf("%d page files, want 3 (index.html, app.js, style.css)", n)
	}
}

// TestStaticWithoutGzip: a client that does not accept gzip gets the plain
// file, its own length and another ETag; one that does gets the gzipped
// bytes with Content-Encoding: gzip; both vary on Accept-Encoding.
func TestStaticWithoutGzip(t *testing.T) {
	base := serve(t)
	want, err := os.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	get := func(enc string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", base+"/static/app.js", nil)
		req.Header.Set("Accept-Encoding", enc)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	plain, pb := get("identity")
	if plain.StatusCode != 200 || !bytes.Equal(pb, want) || plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Content-Length") != strconv.Itoa(len(want)) {
		t.Fatalf("identity: %s %v, %d bytes", plain.Status, plain.Header, len(pb))
	}
	zipped, zb := get("gzip, deflate")
	if zipped.Header.Get("Content-Encoding") != "gzip" || len(zb) >= len(want) || zipped.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip: %v, %d bytes", zipped.Header, len(zb))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zb))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(zr); !bytes.Equal(got, want) {
		t.Fatal("the gzipped app.js does not open to static/app.js")
	}
	if plain.Header.Get("ETag") == zipped.Header.Get("ETag") {
		t.Fatalf("one ETag %s for two representations", plain.Header.Get("ETag"))
	}
}
