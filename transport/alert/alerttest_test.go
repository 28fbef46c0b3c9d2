package alert

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/device/devicetest"
)

// openDB opens a fresh bbolt file in t's temp directory.
func openDB(t testing.TB) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// waitFor polls cond until it holds, failing t after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hook is a real HTTP webhook receiver: it answers fail for the first
// failFirst requests, then 200, and keeps the bodies it accepted.
type hook struct {
	mu        sync.Mutex
	failFirst int
	requests  int
	got       []Body
	keys      []string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests++
	if h.requests <= h.failFirst {
		http.Error(w, "down for maintenance", http.StatusInternalServerError)
		return
	}
	var body Body
	if err := json.Unmarshal(b, &body); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	h.got = append(h.got, body)
	h.keys = append(h.keys, r.Header.Get("Idempotency-Key"))
}

func (h *hook) bodies() []Body {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Body(nil), h.got...)
}

// deliveries collects OnDelivery's reports.
type deliveries struct {
	mu sync.Mutex
	ds []Delivery
}

func (d *deliveries) add(x Delivery) {
	d.mu.Lock()
	d.ds = append(d.ds, x)
	d.mu.Unlock()
}

func (d *deliveries) all() []Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Delivery(nil), d.ds...)
}

// freePort returns a loopback port nothing listens on (for now).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// startSMTP runs Debian's aiosmtpd (a real SMTP server) on port, storing
// what it accepts in a Maildir, whose new/ directory it returns. It skips
// t loudly without python3-aiosmtpd.
func startSMTP(t *testing.T, port int) string {
	t.Helper()
	py := devicetest.PythonImport(t, "aiosmtpd", "python3-aiosmtpd")
	dir := filepath.Join(t.TempDir(), "maildir")
	cmd := exec.Command(py, "-m", "aiosmtpd", "-n", "-l", "127.0.0.1:"+strconv.Itoa(port), "-c", "aiosmtpd.handlers.Mailbox", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return filepath.Join(dir, "new")
}

// mails returns the messages in a Maildir's new/.
func mails(dir string) []string {
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// dropServer accepts SMTP connections, greets, and drops them: the
// server that accepts and then drops the connection. It returns the
// number of connections it dropped so far.
func dropServer(t *testing.T, port int) (dropped func() int, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("220 drop.invalid ESMTP\r\n"))
			_ = c.Close()
			mu.Lock()
			n++
			mu.Unlock()
		}
	}()
	stop = func() { _ = l.Close(); <-done }
	t.Cleanup(stop)
	return func() int { mu.Lock(); defer mu.Unlock(); return n }, stop
}

func testConfig(urls ...string) Config {
	c := Config{RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond}
	for i, u := range urls {
		c.Receivers = append(c.Receivers, ReceiverConfig{Name: "r" + strconv.Itoa(i), URL: u})
	}
	c.Defaults()
	return c
}

// leak is the alert of a tripped leak detector.
func leak() Alert {
	return Alert{Class: ClassLeak, Severity: SeverityCritical, Key: "leak_detector", Title: "gas_leak_detected on leak_detector",
		Fields: map[string]string{"procedure": "close_all_valves_and_alert"}}
}

// netListen listens on the loopback port.
func netListen(port int) (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
}

// startSMTPCheck skips t (loudly) early when aiosmtpd is missing.
func startSMTPCheck(t *testing.T) {
	t.Helper()
	devicetest.PythonImport(t, "aiosmtpd", "python3-aiosmtpd")
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
