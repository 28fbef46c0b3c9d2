package amqp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/outbox"
	"hcp-edge/transport/wire"
)

// TestRabbitMQTLS: RabbitMQ's own TLS listener with a CA, a server
// certificate and client certificates generated at test time. amqps verifies
// the broker (CA and host name); mutual TLS logs in with EXTERNAL, the
// broker user being the client certificate's common name; the callee's
// Supervisor publishes over mTLS with that user as user_id, and the caller
// receives it.
func TestRabbitMQTLS(t *testing.T) {
	amqptest.Dial(t, amqptest.URL()) // the broker and the bench, or a loud skip
	ca := amqptest.NewCA(t, "hcp-edge test CA "+uuid.NewString()[:8])
	sDER, sKey, _, _ := ca.Issue("broker", x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	addr := amqptest.TLSListener(t, sDER, sKey, ca.DER)
	_, _, alphaCert, alphaKey := ca.Issue(amqptest.AlphaUser, x509.ExtKeyUsageClientAuth, nil, nil)
	_, _, edgeCert, edgeKey := ca.Issue(amqptest.EdgeUser, x509.ExtKeyUsageClientAuth, nil, nil)
	_, _, strangerCert, strangerKey := ca.Issue("harness-mallory-666", x509.ExtKeyUsageClientAuth, nil, nil)
	other := amqptest.NewCA(t, "another CA")
	_, _, forgedCert, forgedKey := other.Issue(amqptest.AlphaUser, x509.ExtKeyUsageClientAuth, nil, nil)

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	otherPool := x509.NewCertPool()
	otherPool.AddCert(other.Cert)
	clientCert := func(certFile, keyFile string) []tls.Certificate {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{c}
	}
	dial := func(rawURL string, cfg *tls.Config) (*amqp091.Connection, error) {
		conn, err := amqp091.DialConfig(rawURL, amqp091.Config{TLSClientConfig: cfg, Dial: amqp091.DefaultDial(5 * time.Second)})
		if err == nil {
			t.Cleanup(func() { conn.Close() })
		}
		return conn, err
	}
	alphaPW := amqptest.OnVHostAt(amqptest.AlphaURL(), "amqps", addr)
	external := func(raw string) string { // the URL without user or password, EXTERNAL
		u := amqptest.OnVHostAt(raw, "amqps", addr)
		i, j := strings.Index(u, "//"), strings.Index(u, "@")
		return u[:i+2] + u[j+1:] + "?auth_mechanism=external"
	}

	// amqps with server verification, password login.
	if _, err := dial(alphaPW, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}); err != nil {
		t.Fatalf("amqps, CA-verified, password: %v", err)
	}
	t.Log("amqps with the CA and the right host name, password login: connected")
	var herr x509.HostnameError
	if _, err := dial(alphaPW, &tls.Config{RootCAs: pool, ServerName: "broker.other.example", MinVersion: tls.VersionTLS12}); !errors.As(err, &herr) {
		t.Fatalf("wrong host name: %v, want a host name error", err)
	} else {
		t.Logf("amqps to the wrong host name refused by the client: %v", err)
	}
	var uerr x509.UnknownAuthorityError
	if _, err := dial(alphaPW, &tls.Config{RootCAs: otherPool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}); !errors.As(err, &uerr) {
		t.Fatalf("unknown CA: %v, want an unknown authority error", err)
	} else {
		t.Logf("amqps with a CA that did not sign the broker refused by the client: %v", err)
	}

	// Mutual TLS, EXTERNAL: the certificate's CN is the login.
	conn, err := dial(external(amqptest.AlphaURL()), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12,
		Certificates: clientCert(alphaCert, alphaKey)})
	if err != nil {
		t.Fatalf("mTLS EXTERNAL as %s: %v", amqptest.AlphaUser, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	evtQ, _ := wire.EventQueue(amqptest.AlphaID)
	if _, err := ch.QueueDelete(evtQ, false, false, false); err != nil { // an earlier test's, with its arguments
		t.Fatalf("the certificate's login may not delete its own queue: %v", err)
	}
	if err := tamqp.DeclareCallerQueue(ch, tamqp.CallerQueueOpts{CallerID: amqptest.AlphaID}); err != nil {
		t.Fatalf("the certificate's login may not declare its own queue: %v", err)
	}
	t.Cleanup(func() { _, _ = ch.QueueDelete(evtQ, false, false, false) })
	// The login is the CN: publishing with user_id = the CN is accepted,
	// with another user_id refused.
	pubAs := func(user string) error {
		c, err := conn.Channel()
		if err != nil {
			return err
		}
		defer c.Close()
		return publishConfirmed(c, wire.CommandsExchange, "nobody-listens", amqp091.Publishing{UserId: user, Body: []byte("{}")})
	}
	if err := pubAs(amqptest.AlphaUser); err != nil {
		t.Fatalf("publish with user_id = the certificate's CN: %v", err)
	}
	var aerr *amqp091.Error
	if err := pubAs(amqptest.EdgeUser); !errors.As(err, &aerr) || aerr.Code != amqp091.PreconditionFailed {
		t.Fatalf("publish with another user_id: %v", err)
	}
	t.Logf("mTLS EXTERNAL: logged in as %s (the certificate's CN); another user_id refused: %s", amqptest.AlphaUser, aerr.Reason)

	if _, err := dial(external(amqptest.AlphaURL()), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12,
		Certificates: clientCert(strangerCert, strangerKey)}); err == nil {
		t.Fatal("EXTERNAL with the certificate of no broker user: connected")
	} else {
		t.Logf("EXTERNAL with a certificate whose CN is no broker user refused: %v", err)
	}
	if _, err := dial(external(amqptest.AlphaURL()), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12,
		Certificates: clientCert(forgedCert, forgedKey)}); err == nil {
		t.Fatal("a client certificate of another CA with alpha's CN: connected")
	} else {
		t.Logf("a client certificate of another CA (CN %s): no login (the broker does not accept it): %v", amqptest.AlphaUser, err)
	}
	if _, err := dial(external(amqptest.AlphaURL()), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}); err == nil {
		t.Fatal("EXTERNAL without a client certificate: connected")
	}

	// The callee's Supervisor over mTLS with EXTERNAL: its user_id is the
	// certificate's CN, which the caller's check requires.
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "ob.db"), outbox.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if ech, err := amqptest.Dial(t, amqptest.URL()).Channel(); err == nil { // an earlier test's command queue
		_, _ = ech.QueueDelete(wire.CommandQueuePrefix+amqptest.CalleeID, false, false, false)
		_ = ech.Close()
	}
	sup, err := tamqp.NewSupervisor(ob, tamqp.SupervisorOpts{URL: external(amqptest.URL()), Backoff: fastBackoff(),
		TLS: tamqp.TLSConfig{CAFile: ca.File, CertFile: edgeCert, KeyFile: edgeKey},
		Declare: func(ch *amqp091.Channel) error {
			return tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: amqptest.CalleeID})
		}})
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
		t.Fatalf("callee over mTLS: %v (%+v)", err, sup.State())
	}
	if !sup.Secure() {
		t.Fatal("Secure() false over amqps")
	}
	sid := uuid.New()
	env, _ := wire.NewEnvelope(&sid, &wire.Event{EventType: wire.EventProgress, Sequence: 1, Data: []byte(`{}`)}, time.Now())
	m, err := outbox.MessageFor(amqptest.AlphaID, env, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ob.Append(m); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(evtQ, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-ds:
		if d.UserId != amqptest.EdgeUser || d.MessageId != env.MessageID.String() {
			t.Fatalf("delivery user_id %q message_id %q", d.UserId, d.MessageId)
		}
		t.Logf("event published by the callee over mTLS EXTERNAL arrived with user_id %q", d.UserId)
	case <-ctx.Done():
		t.Fatal("no event over mTLS")
	}
}

// publishConfirmed publishes and waits for the confirm, or the refusal that
// closes the channel.
func publishConfirmed(ch *amqp091.Channel, exchange, key string, p amqp091.Publishing) error {
	closed := ch.NotifyClose(make(chan *amqp091.Error, 1))
	if err := ch.Confirm(false); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, false, false, p)
	if err != nil {
		return err
	}
	if ok, err := dc.WaitContext(ctx); err != nil || !ok {
		if e := <-closed; e != nil {
			return e
		}
		return errors.New("nacked")
	}
	return nil
}
