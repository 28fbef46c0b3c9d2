package amqp_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "github.com/hcp-edge/hcp-edge/transport/amqp"
	"github.com/hcp-edge/hcp-edge/transport/amqp/amqptest"
	"github.com/hcp-edge/hcp-edge/transport/outbox"
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
