package amqp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// pki is a throw-away CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files.
type pki struct {
	dir                         string
	caPEM, caFile               string
	serverCert                  tls.Certificate
	clientCertFile, clientKeyFn string
	pool                        *x509.CertPool
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &pki{dir: dir, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.caFile = filepath.Join(dir, "ca.pem")
	p.caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	writeFile(t, p.caFile, p.caPEM)

	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	sDER, sKey := leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	p.serverCert = tls.Certificate{Certificate: [][]byte{sDER}, PrivateKey: sKey}
	cDER, cKey := leaf(3, "hcp-edge", x509.ExtKeyUsageClientAuth, nil)
	p.clientCertFile = filepath.Join(dir, "client.pem")
	writeFile(t, p.clientCertFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cDER})))
	kDER, err := x509.MarshalECPrivateKey(cKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientKeyFn = filepath.Join(dir, "client.key")
	writeFile(t, p.clientKeyFn, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kDER})))
	return p
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsFront is a TLS listener that requires a client certificate of its CA
// and forwards each connection to the real broker: the amqps endpoint a lab
// puts in front of RabbitMQ (or RabbitMQ's own TLS listener) as far as the
// client can tell.
type tlsFront struct {
	l        net.Listener
	accepted atomic.Int32 // connections that completed the handshake
	refused  atomic.Int32 // handshakes that failed
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startTLSFront(t *testing.T, p *pki, target string) *tlsFront {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{p.serverCert}, ClientCAs: p.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &tlsFront{l: l}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				tc := c.(*tls.Conn)
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				if err := tc.Handshake(); err != nil {
					f.refused.Add(1)
					_ = c.Close()
					return
				}
				_ = tc.SetDeadline(time.Time{})
				f.accepted.Add(1)
				u, err := net.Dial("tcp", target)
				if err != nil {
					_ = c.Close()
					return
				}
				f.mu.Lock()
				f.conns = append(f.conns, c, u)
				f.mu.Unlock()
				f.wg.Add(1)
				go func() { defer f.wg.Done(); _, _ = io.Copy(u, c); _ = u.Close() }()
				_, _ = io.Copy(c, u)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

// amqpsURL is the broker URL u with scheme amqps and host addr.
func amqpsURL(t *testing.T, u, addr string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pu.Scheme, pu.Host = "amqps", addr
	return pu.String()
}

// TestSupervisorTLS: over amqps with the configured CA, client certificate
// and key, the Supervisor completes a verified TLS handshake (the listener
// requires and verifies the client certificate), reports TLS in its state
// and Secure (what the gate asks before T3/T4), and the outbox drains
// through it to the real broker. A CA that did not sign the server's
// certificate, or no client certificate, never connects.
func TestSupervisorTLS(t *testing.T) {
	conn := amqptest.Dial(t, amqptest.URL())
	pu, _ := url.Parse(amqptest.URL())
	p := newPKI(t, "good")
	front := startTLSFront(t, p, pu.Host)
	surl := amqpsURL(t, amqptest.URL(), front.l.Addr().String())

	key, ds := eventTap(t, conn, "tls-test")

	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	sup, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{URL: surl,
		TLS:     tamqp.TLSConfig{CAFile: p.caFile, CertFile: p.clientCertFile, KeyFile: p.clientKeyFn},
		Backoff: tamqp.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		Declare: func(ch *amqp091.Channel) error { return tamqp.DeclareExchanges(ch) }})
	if err != nil {
		t.Fatal(err)
	}
	if !sup.Secure() {
		t.Fatal("Secure() false for amqps")
	}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sup.WaitConnected(ctx); err != nil {
		t.Fatalf("amqps connect: %v (state %+v)", err, sup.State())
	}
	if s := sup.State(); !s.TLS || !s.Connected || front.accepted.Load() < 1 {
		t.Fatalf("state %+v, %d verified handshakes", s, front.accepted.Load())
	}
	if _, err := ob.Append(outbox.Message{Class: outbox.Protocol, Exchange: wire.EventsExchange, RoutingKey: key,
		MessageID: "tls-1", Type: "event", Body: []byte(`{"over":"tls"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-ds:
		if d.MessageId != "tls-1" || string(d.Body) != `{"over":"tls"}` {
			t.Fatalf("got %q %s", d.MessageId, d.Body)
		}
	case <-ctx.Done():
		t.Fatalf("message published over amqps never arrived (state %+v)", sup.State())
	}

	// The wrong trust: a CA that did not sign the server, or no client
	// certificate. Neither connects; the first fails verification on our
	// side, the second is refused by the listener.
	other := newPKI(t, "other")
	for _, tc := range []struct {
		name string
		cfg  tamqp.TLSConfig
	}{
		{"unknown CA", tamqp.TLSConfig{CAFile: other.caFile, CertFile: p.clientCertFile, KeyFile: p.clientKeyFn}},
		{"no client certificate", tamqp.TLSConfig{CAFile: p.caFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob2, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
			if err != nil {
				t.Fatal(err)
			}
			defer ob2.Close()
			var dialErr atomic.Value
			bad, err := tamqp.NewSupervisor(ob2, tamqp.SupervisorOpts{URL: surl, TLS: tc.cfg,
				Backoff: tamqp.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
				Declare: func(ch *amqp091.Channel) error { return tamqp.DeclareExchanges(ch) },
				Dial: func(u string, cfg amqp091.Config) (*amqp091.Connection, error) {
					c, err := amqp091.DialConfig(u, cfg)
					if err != nil {
						dialErr.Store(err.Error())
					}
					return c, err
				}})
			if err != nil {
				t.Fatal(err)
			}
			if err := bad.Start(); err != nil {
				t.Fatal(err)
			}
			defer bad.Close()
			for dialErr.Load() == nil {
				if ctx.Err() != nil {
					t.Fatal("no dial attempt")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if s := bad.State(); s.Connected {
				t.Fatalf("connected with %s: %+v", tc.name, s)
			}
			t.Logf("%s: %v", tc.name, dialErr.Load())
		})
	}
}
