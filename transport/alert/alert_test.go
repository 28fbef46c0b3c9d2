package alert

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pw")
	open := filepath.Join(dir, "pw-open")
	for p, mode := range map[string]os.FileMode{good: 0o600, open: 0o644} {
		if err := os.WriteFile(p, []byte("secret\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	smtpURL := func(q string) string {
		return "smtp://alerts@mail.example.org:587/?from=rig@example.org&to=oncall@example.org" + q
	}
	for _, tc := range []struct {
		name    string
		rc      ReceiverConfig
		key     string
		wantErr error
	}{
		{name: "smtp ok", rc: ReceiverConfig{URL: smtpURL("&password_file=" + good)}},
		{name: "webhook ok", rc: ReceiverConfig{URL: "https://hooks.example.org/T0/B0/xyz", Classes: []Class{ClassTrip}}},
		{name: "does not parse", rc: ReceiverConfig{URL: "smtp://a b@%zz"}, key: "alerts.receivers[0].url", wantErr: ErrBadURL},
		{name: "unknown scheme", rc: ReceiverConfig{URL: "ftp://host/x"}, key: "alerts.receivers[0].url", wantErr: ErrBadURL},
		{name: "no host", rc: ReceiverConfig{URL: "https:///x"}, key: "alerts.receivers[0].url", wantErr: ErrBadURL},
		{name: "no to", rc: ReceiverConfig{URL: "smtp://mail.example.org/?from=a@example.org"}, key: "alerts.receivers[0].url", wantErr: ErrBadURL},
		{name: "password in URL", rc: ReceiverConfig{URL: "smtp://u:pw@mail.example.org/?from=a@example.org&to=b@example.org"}, key: "alerts.receivers[0].url", wantErr: ErrBadURL},
		{name: "missing credential file", rc: ReceiverConfig{URL: smtpURL("&password_file=" + filepath.Join(dir, "nope"))}, key: "alerts.receivers[0].url", wantErr: ErrCredentials},
		{name: "world-readable credential file", rc: ReceiverConfig{URL: smtpURL("&password_file=" + open)}, key: "alerts.receivers[0].url", wantErr: ErrCredentials},
		{name: "user without password file", rc: ReceiverConfig{URL: smtpURL("")}, key: "alerts.receivers[0].url", wantErr: ErrBadURL},
		{name: "unknown class", rc: ReceiverConfig{URL: "http://127.0.0.1:9/", Classes: []Class{"trips"}}, key: "alerts.receivers[0].classes[0]"},
		{name: "unknown severity", rc: ReceiverConfig{URL: "http://127.0.0.1:9/", MinSeverity: "loud"}, key: "alerts.receivers[0].min_severity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Receivers: []ReceiverConfig{tc.rc}}
			c.Defaults()
			errs := c.Check()
			if tc.key == "" {
				if len(errs) != 0 {
					t.Fatalf("Check: %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("Check: want one error at %s, got %v", tc.key, errs)
			}
			if !strings.HasPrefix(errs[0].Error(), tc.key+": ") {
				t.Errorf("error %q is not at %s", errs[0], tc.key)
			}
			if tc.wantErr != nil && !errors.Is(errs[0], tc.wantErr) {
				t.Errorf("error %q is not %v", errs[0], tc.wantErr)
			}
			if strings.Contains(errs[0].Error(), "secret") {
				t.Errorf("error %q shows the password", errs[0])
			}
			if _, err := New(openDB(t), c, Opts{}); err == nil {
				t.Error("New accepted the configuration Check refused")
			}
		})
	}
}

func TestDuplicateReceiverName(t *testing.T) {
	c := Config{Receivers: []ReceiverConfig{{Name: "x", URL: "http://127.0.0.1:9/"}, {Name: "x", URL: "http://127.0.0.1:10/"}}}
	c.Defaults()
	if errs := c.Check(); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "alerts.receivers[1].name: ") {
		t.Fatalf("Check: %v", errs)
	}
}

// A webhook answering 500 for a while: the alert is retried, then
// delivered once, every attempt reported.
func TestWebhook500Retried(t *testing.T) {
	h := &hook{failFirst: 3}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var ds deliveries
	a, err := New(openDB(t), testConfig(srv.URL+"/hook"), Opts{OnDelivery: ds.add})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	al := leak()
	al.ID = "trip-1"
	if !a.Notify(al) {
		t.Fatal("Notify refused")
	}
	waitFor(t, "the delivery", func() bool { return len(h.bodies()) == 1 })
	waitFor(t, "the delivery report", func() bool { return len(ds.all()) == 4 })
	got := h.bodies()[0]
	if got.ID != "trip-1" || got.Class != ClassLeak || got.Severity != SeverityCritical || got.Count != 1 || got.Source != "hcp-edge" ||
		got.Fields["procedure"] != "close_all_valves_and_alert" || got.At.IsZero() {
		t.Errorf("body: %+v", got)
	}
	if h.keys[0] != "trip-1" {
		t.Errorf("Idempotency-Key %q", h.keys[0])
	}
	for i, d := range ds.all() {
		if fail := i < 3; (d.Err != nil) != fail || d.Attempt != i+1 || d.Receiver != "r0" || d.GaveUp {
			t.Errorf("delivery %d: %+v", i, d)
		}
		if i < 3 && !errors.Is(d.Err, ErrRejected) {
			t.Errorf("delivery %d: %v is not ErrRejected", i, d.Err)
		}
	}
	waitFor(t, "an empty queue", func() bool { return a.Queued() == 0 })
}

// Alerts stored while the receiver is down go out after a restart, once
// each: the id de-duplicates a second Notify.
func TestDeliveredAfterRestart(t *testing.T) {
	db := openDB(t)
	port := freePort(t)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/hook"
	var ds deliveries
	a, err := New(db, testConfig(url), Opts{OnDelivery: ds.add})
	if err != nil {
		t.Fatal(err)
	}
	al := leak()
	al.ID = "same"
	a.Notify(al)
	a.Notify(al)
	waitFor(t, "a failed attempt", func() bool { return len(ds.all()) > 0 })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := a.Queued(); n != 1 {
		t.Fatalf("queued after close: %d, want 1", n)
	}
	if a.Notify(al) {
		t.Error("Notify after Close took the alert")
	}

	h := &hook{}
	l, err := netListen(port)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	b, err := New(db, testConfig(url), Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Notify(al) // stored before: ignored
	waitFor(t, "the delivery after the restart", func() bool { return len(h.bodies()) == 1 })
	waitFor(t, "an empty queue", func() bool { return b.Queued() == 0 })
	if bs := h.bodies(); len(bs) != 1 || bs[0].ID != "same" {
		t.Errorf("delivered %+v", bs)
	}
}

// A flapping input: of a hundred alerts of one class and key, the first
// goes out at once and the rest as one grouped alert with their count at
// the window's end.
func TestFlappingGrouped(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var mu sync.Mutex
	now := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := testConfig(srv.URL)
	c.GroupWindow = time.Minute
	a, err := New(openDB(t), c, Opts{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range 100 {
		mu.Lock()
		now = now.Add(500 * time.Millisecond) // 50 s of flapping at 2 Hz
		mu.Unlock()
		al := leak()
		al.At = clock()
		if !a.Notify(al) {
			t.Fatalf("Notify %d refused", i)
		}
	}
	waitFor(t, "the first alert", func() bool { return len(h.bodies()) >= 1 })
	waitFor(t, "the rest stored, as one alert", func() bool { n, c := queuedCounts(t, a); return n == 1 && c == 99 })
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	a.wake[0] <- struct{}{}
	waitFor(t, "the grouped alert", func() bool { return len(h.bodies()) == 2 })
	bs := h.bodies()
	if bs[0].Count != 1 || bs[1].Count != 99 || !bs[1].Last.After(bs[1].At) {
		t.Errorf("counts %d then %d (want 1 then 99); grouped %v..%v", bs[0].Count, bs[1].Count, bs[1].At, bs[1].Last)
	}
}

// Routing by class and minimum severity.
func TestRouting(t *testing.T) {
	rc := ReceiverConfig{Classes: []Class{ClassTrip, ClassEStop}, MinSeverity: SeverityWarning}
	for _, tc := range []struct {
		a    Alert
		want bool
	}{
		{Alert{Class: ClassTrip, Severity: SeverityCritical}, true},
		{Alert{Class: ClassTrip, Severity: SeverityInfo}, false},
		{Alert{Class: ClassLeak, Severity: SeverityCritical}, false},
		{Alert{Class: ClassTest, Severity: SeverityInfo}, true},
		{Alert{Class: ClassOverflow, Severity: SeverityCritical}, true},
	} {
		if got := rc.routes(tc.a); got != tc.want {
			t.Errorf("routes(%s %s) = %v", tc.a.Class, tc.a.Severity, got)
		}
	}
}

// A nil Alerter (alerts off) takes nothing and closes.
func TestNilAlerter(t *testing.T) {
	var a *Alerter
	if a.Notify(leak()) || a.Close() != nil || a.Queued() != 0 {
		t.Error("nil Alerter did something")
	}
	if a, err := New(openDB(t), Config{}, Opts{}); a != nil || err != nil {
		t.Errorf("New without receivers: %v, %v", a, err)
	}
}

// SMTP: the server is down, then accepts and drops connections, then a
// real server (aiosmtpd) takes the mail: one mail, nothing lost.
func TestSMTPDropThenDelivered(t *testing.T) {
	port := freePort(t)
	url := "smtp://127.0.0.1:" + strconv.Itoa(port) + "/?from=rig@example.org&to=oncall@example.org,safety@example.org"
	startSMTPCheck(t)
	var ds deliveries
	a, err := New(openDB(t), testConfig(url), Opts{OnDelivery: ds.add})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	al := leak()
	al.ID = "smtp-1"
	a.Notify(al)
	waitFor(t, "a failed attempt (server down)", func() bool { return len(ds.all()) >= 1 })
	dropped, stop := dropServer(t, port)
	waitFor(t, "two dropped connections", func() bool { return dropped() >= 2 })
	stop()
	dir := startSMTP(t, port)
	waitFor(t, "the mail", func() bool { return len(mails(dir)) == 1 })
	m := mails(dir)[0]
	for _, want := range []string{"Message-ID: <smtp-1@hcp-edge>", "gas_leak_detected on leak_detector", "procedure: close_all_valves_and_alert", "X-HCP-Alert-Class: leak"} {
		if !strings.Contains(m, want) {
			t.Errorf("mail lacks %q:\n%s", want, m)
		}
	}
	waitFor(t, "an empty queue", func() bool { return a.Queued() == 0 })
	ok := func() int {
		n := 0
		for _, d := range ds.all() {
			if d.Err == nil {
				n++
			}
		}
		return n
	}
	waitFor(t, "the delivery reported", func() bool { return ok() > 0 }) // OnDelivery runs after the queue's commit
	if n := ok(); n != 1 {
		t.Errorf("%d successful deliveries, want 1", n)
	}
}

// SendTest reports each receiver's result.
func TestSendTest(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := testConfig(srv.URL, "http://127.0.0.1:"+strconv.Itoa(freePort(t))+"/")
	rs, err := SendTest(context.Background(), c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Err != nil || rs[1].Err == nil {
		t.Fatalf("results %+v", rs)
	}
	if bs := h.bodies(); len(bs) != 1 || bs[0].Class != ClassTest {
		t.Errorf("delivered %+v", bs)
	}
}

func TestBackoff(t *testing.T) {
	a := &Alerter{cfg: Config{RetryMin: time.Second, RetryMax: 10 * time.Second}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 50: 10 * time.Second} {
		if got := a.backoff(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

// TestNotifyNeverBlocks: with the disk stalled (a write transaction held
// open, so the writer goroutine waits for bbolt's lock), Notify still
// returns at once: past the intake it drops and counts, and the counts go
// out as alert_overflow alerts once the disk moves again, adding up to
// what was dropped.
func TestNotifyNeverBlocks(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	db := openDB(t)
	c := testConfig(srv.URL)
	c.GroupWindow = 0   // each overflow report its own alert
	c.MaxPerHour = 3600 // the writer may have taken a batch of up to 256 before the stall
	a, err := New(db, c, Opts{Intake: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tx, err := db.Begin(true) // the disk stalls
	if err != nil {
		t.Fatal(err)
	}
	taken, dropped := 0, 0
	for i := range 1000 {
		al := leak()
		al.Key = strconv.Itoa(i) // no grouping: each its own alert
		if a.Notify(al) {
			taken++
		} else {
			dropped++
		}
	}
	if dropped == 0 || taken > 4+256 {
		t.Fatalf("taken %d, dropped %d: the intake is 4 (and the writer holds one batch)", taken, dropped)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	counted := func() (leaks, lost int) {
		for _, b := range h.bodies() {
			switch b.Class {
			case ClassLeak:
				leaks++
			case ClassOverflow:
				n, _, _ := strings.Cut(b.Title, " ")
				k, _ := strconv.Atoi(n)
				lost += k
			}
		}
		return leaks, lost
	}
	waitFor(t, "every alert taken delivered, and the losses reported", func() bool {
		leaks, lost := counted()
		return leaks == taken && lost == dropped
	})
}

// queuedCounts returns how many alerts a's queue holds and the sum of
// their counts.
func queuedCounts(t *testing.T, a *Alerter) (n, count int) {
	t.Helper()
	err := a.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(a.name).Bucket(bucketQueue).ForEach(func(_, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			n, count = n+1, count+r.Alert.Count
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, count
}
