package amqp_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/outbox"
)

func TestBackoffDelay(t *testing.T) {
	b := tamqp.DefaultBackoff()
	tests := []struct {
		name string
		n    int
		r    float64
		want time.Duration
	}{
		{"first, no jitter", 0, 0, time.Second},
		{"third, no jitter", 2, 0, 4 * time.Second},
		{"capped", 10, 0, 60 * time.Second},
		{"capped, full jitter draw", 30, 0.999999, 30*time.Second + 30*time.Microsecond},
		{"half jitter", 1, 0.5, 1500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := b.Delay(tc.n, tc.r); got.Round(time.Millisecond) != tc.want.Round(time.Millisecond) {
				t.Fatalf("Delay(%d, %v) = %v, want %v", tc.n, tc.r, got, tc.want)
			}
		})
	}
}

// TestSupervisorRedials: dial failures back off and retry; a dropped
// connection is redialled with the topology declared again; Close waits.
func TestSupervisorRedials(t *testing.T) {
	amqptest.Dial(t, amqptest.URL())
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	var dials, declares atomic.Int32
	var last atomic.Pointer[amqp091.Connection]
	sup, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{
		URL:     amqptest.URL(),
		Backoff: tamqp.Backoff{Min: 10 * time.Millisecond, Max: 40 * time.Millisecond},
		Rand:    func() float64 { return 0 },
		Dial: func(url string, cfg amqp091.Config) (*amqp091.Connection, error) {
			if dials.Add(1) <= 2 {
				return nil, errors.New("injected dial failure")
			}
			c, err := amqp091.DialConfig(url, cfg)
			if err == nil {
				last.Store(c)
			}
			return c, err
		},
		Declare: func(ch *amqp091.Channel) error { declares.Add(1); return tamqp.DeclareExchanges(ch) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sup.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if s := sup.State(); !s.Connected || s.TLS || dials.Load() != 3 {
		t.Fatalf("state %+v after %d dials", s, dials.Load())
	}
	last.Load().Close() // the broker drops us
	for sup.State().Reconnects < 1 {
		if ctx.Err() != nil {
			t.Fatalf("no reconnect: %+v", sup.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sup.WaitConnected(ctx); err != nil || declares.Load() != 2 {
		t.Fatalf("%v, %d declarations", err, declares.Load())
	}
	sup.Close()
	if sup.State().Connected {
		t.Fatal("connected after Close")
	}
}

func TestSupervisorOptsRefused(t *testing.T) {
	ob, _ := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	defer ob.Close()
	tests := []struct {
		name string
		opts tamqp.SupervisorOpts
	}{
		{"bad scheme", tamqp.SupervisorOpts{URL: "http://x/"}},
		{"TLS files with amqp://", tamqp.SupervisorOpts{URL: "amqp://x/", TLS: tamqp.TLSConfig{CAFile: "ca.pem"}}},
		{"missing CA file", tamqp.SupervisorOpts{URL: "amqps://x/", TLS: tamqp.TLSConfig{CAFile: "/nonexistent/ca.pem"}}},
		{"cert without key", tamqp.SupervisorOpts{URL: "amqps://x/", TLS: tamqp.TLSConfig{CertFile: "c.pem"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tamqp.NewSupervisor(ob, tc.opts); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	s, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{URL: "amqps://u:p@broker/hcp"})
	if err != nil || !s.Secure() {
		t.Fatalf("amqps without files: %v", err)
	}
}

// TestSupervisorEndpointRounds: with every endpoint down, each round tries
// all of them once, in order from the start endpoint (Rand picks it), and
// the rounds back off; State names the endpoint last tried. No broker.
func TestSupervisorEndpointRounds(t *testing.T) {
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	urls := []string{"amqp://u:secret@n1:5681/hcp", "amqp://u:secret@n2:5682/hcp", "amqp://u:secret@n3:5683/hcp"}
	dialled := make(chan string, 64)
	sup, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{
		URLs:    urls,
		Backoff: tamqp.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond},
		Rand:    func() float64 { return 0.5 }, // start at endpoint 1 of 0..2
		Dial: func(url string, cfg amqp091.Config) (*amqp091.Connection, error) {
			select {
			case dialled <- url:
			default:
			}
			return nil, errors.New("injected: connection refused")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 7 {
		got = append(got, <-dialled)
	}
	sup.Close()
	want := []string{urls[1], urls[2], urls[0], urls[1], urls[2], urls[0], urls[1]}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("dial order %v, want %v", got, want)
		}
	}
	st := sup.State()
	if st.Connected || st.Endpoints != 3 || st.LastError == "" || strings.Contains(st.Endpoint+st.LastError, "secret") {
		t.Fatalf("state %+v", st)
	}
}

// TestSupervisorEndpointsRefused: endpoints must share scheme and login.
func TestSupervisorEndpointsRefused(t *testing.T) {
	ob, _ := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	defer ob.Close()
	tests := []struct {
		name string
		urls []string
	}{
		{"none", nil},
		{"TLS then plaintext", []string{"amqps://u:p@n1/hcp", "amqp://u:p@n2/hcp"}},
		{"two logins", []string{"amqp://u:p@n1/hcp", "amqp://v:p@n2/hcp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{URLs: tc.urls}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	s, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{URLs: []string{"amqps://u:p@n1/hcp", "amqps://u:p@n2/hcp"}})
	if err != nil || !s.Secure() {
		t.Fatalf("two amqps endpoints: %v", err)
	}
}

// TestSupervisorFailsOver: the first endpoint refuses connections, the
// second is the real broker: the Supervisor connects there; when that
// connection drops it starts the next round at the following endpoint (the
// dead one, tried and passed over) and lands on the broker again, declaring
// the topology each time.
func TestSupervisorFailsOver(t *testing.T) {
	amqptest.Dial(t, amqptest.URL())
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	u, err := amqp091.ParseURI(amqptest.URL())
	if err != nil {
		t.Fatal(err)
	}
	live := u.String()
	u.Host, u.Port = "127.0.0.1", mustAtoi(t, dead[strings.LastIndex(dead, ":")+1:])
	deadURL := u.String()
	var mu sync.Mutex
	var dials []string
	var last atomic.Pointer[amqp091.Connection]
	var declares atomic.Int32
	sup, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{
		URLs:    []string{deadURL, live},
		Backoff: tamqp.Backoff{Min: 10 * time.Millisecond, Max: 40 * time.Millisecond},
		Rand:    func() float64 { return 0 },
		Dial: func(url string, cfg amqp091.Config) (*amqp091.Connection, error) {
			mu.Lock()
			dials = append(dials, url)
			mu.Unlock()
			c, err := amqp091.DialConfig(url, cfg)
			if err == nil {
				last.Store(c)
			}
			return c, err
		},
		DeclareConn: func(conn *amqp091.Connection) error { declares.Add(1); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sup.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if st := sup.State(); st.EndpointIndex != 1 {
		t.Fatalf("connected to endpoint %d, want 1: %+v", st.EndpointIndex, st)
	}
	last.Load().Close()
	for sup.State().Reconnects < 1 {
		if ctx.Err() != nil {
			t.Fatalf("no reconnect: %+v", sup.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	got := append([]string(nil), dials...)
	mu.Unlock()
	want := []string{deadURL, live, deadURL, live}
	if len(got) != len(want) || declares.Load() != 2 {
		t.Fatalf("dials %v (want %v), %d declarations", got, want, declares.Load())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("dials %v, want %v", got, want)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
