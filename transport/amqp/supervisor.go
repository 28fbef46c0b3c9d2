package amqp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/transport/outbox"
)

// ErrClosed: the Supervisor was closed.
var ErrClosed = errors.New("amqp: supervisor closed")

// TLSConfig names the files of an amqps connection. CAFile verifies the
// broker; CertFile and KeyFile are the client's certificate (both or
// neither).
type TLSConfig struct {
	CAFile     string
	CertFile   string
	KeyFile    string
	ServerName string // default: the URL's host
}

// Backoff is a capped exponential backoff with jitter: attempt n (from 0)
// waits Min·2ⁿ, capped at Max, then scaled by a random factor in
// [1−Jitter, 1].
type Backoff struct {
	Min    time.Duration // default 1 s
	Max    time.Duration // default 60 s
	Jitter float64       // 0..1, default 0.5
}

// DefaultBackoff returns L1's 1 s → 60 s with 50 % jitter.
func DefaultBackoff() Backoff { return Backoff{Min: time.Second, Max: 60 * time.Second, Jitter: 0.5} }

// Delay returns the wait before attempt n with the random value r in [0, 1).
func (b Backoff) Delay(n int, r float64) time.Duration {
	d := b.Min
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	j := b.Jitter
	if j < 0 {
		j = 0
	}
	if j > 1 {
		j = 1
	}
	return time.Duration(float64(d) * (1 - j*r))
}

// Worker runs on one connection until ctx ends (return ctx.Err()) or it
// fails (return the error: the Supervisor drops the connection and
// reconnects). The command inbox and the caller's consumer are Workers.
type Worker func(ctx context.Context, conn *amqp091.Connection) error

// SupervisorOpts configures a Supervisor.
type SupervisorOpts struct {
	URL string // amqp:// or amqps://, with user, password and vhost
	// URLs are the broker endpoints (the nodes of a cluster) tried in turn;
	// URL, when set, is the first of them. Every endpoint has the same scheme
	// (a TLS uplink never falls over to plaintext) and the same login (the
	// user_id property is the login). See the package documentation.
	URLs []string
	TLS  TLSConfig // used with amqps://; ignored (must be empty) with amqp://
	// Heartbeat is the AMQP heartbeat (default 30 s, L1's recommendation).
	Heartbeat time.Duration
	// DialTimeout bounds the TCP and TLS handshake (default 10 s).
	DialTimeout time.Duration
	Backoff     Backoff
	// Rand returns values in [0, 1) for the jitter (default math/rand/v2).
	Rand func() float64
	// Declare (re)declares the topology on a fresh channel after every connect.
	Declare func(ch *amqp091.Channel) error
	// DeclareConn, when set, replaces Declare: it gets the connection and may
	// open several channels (a declaration the broker refuses closes its
	// channel); CalleeDeclarer and CallerDeclarer make one.
	DeclareConn func(conn *amqp091.Connection) error
	// DeclareTimeout bounds the declaration after a connect (default 20 s): a
	// node that accepts connections but cannot answer (cut off from the
	// cluster's majority) counts as failed, and the next endpoint is tried.
	DeclareTimeout time.Duration
	// Workers run on every connection beside the outbox publisher.
	Workers   []Worker
	Publisher PublisherOpts
	// ConnectionName is shown in the broker's management UI.
	ConnectionName string
	Logger         *slog.Logger
	// Dial replaces the dialer (tests); default amqp091.DialConfig.
	Dial func(url string, cfg amqp091.Config) (*amqp091.Connection, error)
}

// State is a snapshot of the Supervisor for metrics and the gate.
type State struct {
	Connected  bool
	Blocked    bool
	TLS        bool   // the connection is amqps
	Reconnects uint64 // successful connects after the first
	// Endpoint is the endpoint (password redacted) connected to, or the last
	// one tried while disconnected; EndpointIndex is its index in the list.
	Endpoint      string
	EndpointIndex int
	Endpoints     int    // how many endpoints are configured
	LastError     string // why the last connection ended or a dial failed
	Backlog       int    // messages waiting in the outbox
	Telemetry     int    // of which Telemetry class
	OldestAge     time.Duration
}

// Supervisor owns the broker connection: it dials, declares the topology,
// runs the outbox Publisher and the Workers, watches NotifyClose and
// NotifyBlocked, and reconnects with capped exponential backoff and jitter.
// See the package documentation.
type Supervisor struct {
	ob   *outbox.Outbox
	pub  *Publisher
	opts SupervisorOpts
	log  *slog.Logger
	tls  *tls.Config // non-nil: amqps (the template; eps carry one per host)
	eps  []endpoint

	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	connected  bool
	blocked    bool
	reconnects uint64
	connects   uint64
	lastErr    string
	endpoint   int           // index into eps of the current or last tried endpoint
	connCh     chan struct{} // closed and replaced on every connect
	started    bool
	closed     bool
}

// NewSupervisor checks opts, loads the TLS files and returns a stopped
// Supervisor; Start runs it.
func NewSupervisor(ob *outbox.Outbox, opts SupervisorOpts) (*Supervisor, error) {
	urls := opts.URLs
	if opts.URL != "" && (len(urls) == 0 || urls[0] != opts.URL) {
		urls = append([]string{opts.URL}, urls...)
	}
	if len(urls) == 0 {
		return nil, errors.New("amqp: no broker URL")
	}
	eps := make([]endpoint, len(urls))
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("amqp: broker URL %d: %w", i+1, redactErr(err))
		}
		eps[i] = endpoint{url: raw, redacted: u.Redacted(), host: u.Hostname(), scheme: u.Scheme}
		if u.User != nil {
			eps[i].user = u.User.Username()
		}
		if i > 0 && (eps[i].scheme != eps[0].scheme || eps[i].user != eps[0].user) {
			return nil, fmt.Errorf("amqp: broker URL %d (%s): every endpoint needs the scheme and login of the first (%s)",
				i+1, eps[i].redacted, eps[0].redacted)
		}
	}
	opts.URL, opts.URLs = urls[0], urls
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 30 * time.Second
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.DeclareTimeout <= 0 {
		opts.DeclareTimeout = 20 * time.Second
	}
	d := DefaultBackoff()
	if opts.Backoff.Min <= 0 {
		opts.Backoff.Min = d.Min
	}
	if opts.Backoff.Max < opts.Backoff.Min {
		opts.Backoff.Max = max(d.Max, opts.Backoff.Min)
	}
	if opts.Backoff.Jitter == 0 {
		opts.Backoff.Jitter = d.Jitter
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Dial == nil {
		opts.Dial = amqp091.DialConfig
	}
	if opts.Publisher.UserID == "" {
		opts.Publisher.UserID = eps[0].user
	}
	if opts.Publisher.Logger == nil {
		opts.Publisher.Logger = opts.Logger
	}
	s := &Supervisor{ob: ob, opts: opts, log: opts.Logger, eps: eps, connCh: make(chan struct{})}
	switch eps[0].scheme {
	case "amqps":
		var err error
		if s.tls, err = loadTLS(opts.TLS, eps[0].host); err != nil {
			return nil, err
		}
		// A login by client certificate (auth_mechanism=external, no user in
		// the URL): the broker's user is the certificate's common name
		// (rabbitmq_auth_mechanism_ssl with ssl_cert_login_from =
		// common_name), and so is the user_id the messages carry.
		if s.opts.Publisher.UserID == "" && len(s.tls.Certificates) > 0 && s.tls.Certificates[0].Leaf != nil {
			s.opts.Publisher.UserID = s.tls.Certificates[0].Leaf.Subject.CommonName
		}
		for i := range eps {
			eps[i].tls = s.tls.Clone()
			if opts.TLS.ServerName == "" {
				eps[i].tls.ServerName = eps[i].host
			}
		}
	case "amqp":
		if opts.TLS != (TLSConfig{}) {
			return nil, errors.New("amqp: TLS files given for an amqp:// URL; use amqps://")
		}
	default:
		return nil, fmt.Errorf("amqp: broker URL scheme %q: want amqp or amqps", eps[0].scheme)
	}
	// A fleet's agents start at a random endpoint, so that they spread over
	// the cluster's nodes rather than all landing on the first.
	s.endpoint = int(opts.Rand() * float64(len(eps)))
	if s.endpoint >= len(eps) || s.endpoint < 0 {
		s.endpoint = 0
	}
	var err error
	if s.pub, err = NewPublisher(ob, s.opts.Publisher); err != nil {
		return nil, err
	}
	return s, nil
}

// endpoint is one broker URL of the list.
type endpoint struct {
	url      string
	redacted string
	host     string
	scheme   string
	user     string
	tls      *tls.Config
}

// redactErr keeps a URL parse error from echoing the password.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %v", ue.Op, ue.Err)
	}
	return err
}

func loadTLS(c TLSConfig, host string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("amqp: TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("amqp: TLS CA %s: no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("amqp: TLS client certificate and key go together")
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("amqp: TLS client certificate: %w", err)
		}
		if cert.Leaf == nil && len(cert.Certificate) > 0 {
			if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
				return nil, fmt.Errorf("amqp: TLS client certificate: %w", err)
			}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Secure reports whether the Supervisor connects with TLS (amqps): the gate
// refuses T3/T4 sessions when it does not.
func (s *Supervisor) Secure() bool { return s.tls != nil }

// Publisher returns the outbox publisher the Supervisor runs.
func (s *Supervisor) Publisher() *Publisher { return s.pub }

// Start runs the connection loop in a goroutine that Close stops and waits
// for. Start may be called once.
func (s *Supervisor) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return errors.New("amqp: supervisor already started")
	}
	s.started = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		s.loop(ctx)
	}()
	return nil
}

// Close stops the Supervisor: workers and publisher end, the connection
// closes; it waits for all of them. The outbox keeps what was not confirmed.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

// State returns a snapshot for metrics.
func (s *Supervisor) State() State {
	s.mu.Lock()
	st := State{Connected: s.connected, Blocked: s.blocked, TLS: s.tls != nil, Reconnects: s.reconnects, LastError: s.lastErr,
		Endpoint: s.eps[s.endpoint].redacted, EndpointIndex: s.endpoint, Endpoints: len(s.eps)}
	s.mu.Unlock()
	st.Backlog, st.Telemetry = s.ob.Depth()
	st.OldestAge, _ = s.ob.OldestAge(time.Now())
	return st
}

// WaitConnected blocks until the Supervisor is connected (topology declared)
// or ctx ends.
func (s *Supervisor) WaitConnected(ctx context.Context) error {
	for {
		s.mu.Lock()
		c, ch := s.connected, s.connCh
		s.mu.Unlock()
		if c {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Supervisor) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
}

// loop connects and serves until ctx ends. One round tries every endpoint
// once, back to back, starting at the current one; when the whole round
// fails it waits Backoff.Delay(rounds failed in a row) and starts another
// from the same endpoint. After a connection is lost it waits the first
// backoff step (jittered, so a fleet does not reconnect in one burst) and
// starts the next round at the following endpoint: a node that dropped us
// is tried last.
func (s *Supervisor) loop(ctx context.Context) {
	rounds := 0
	s.mu.Lock()
	first := s.endpoint
	s.mu.Unlock()
	for ctx.Err() == nil {
		var conn *amqp091.Connection
		var idx int
		var lastErr error
		for i := 0; i < len(s.eps) && ctx.Err() == nil; i++ {
			idx = (first + i) % len(s.eps)
			s.mu.Lock()
			s.endpoint = idx
			s.mu.Unlock()
			c, err := s.dial(idx)
			if err == nil {
				err = s.declare(c)
				if err != nil {
					c.Close()
				}
			}
			if err == nil {
				conn = c
				break
			}
			s.setErr(err)
			lastErr = err
			if len(s.eps) > 1 {
				s.log.Warn("amqp: connect failed", "endpoint", s.eps[idx].redacted, "err", err)
			}
		}
		if ctx.Err() != nil {
			if conn != nil {
				conn.Close()
			}
			return
		}
		if conn == nil {
			d := s.opts.Backoff.Delay(rounds, s.opts.Rand())
			rounds++
			if len(s.eps) > 1 {
				s.log.Warn("amqp: every endpoint failed", "endpoints", len(s.eps), "retry_in", d)
			} else {
				s.log.Warn("amqp: connect failed", "err", lastErr, "retry_in", d)
			}
			if !sleep(ctx, d) {
				return
			}
			continue
		}
		rounds = 0
		if len(s.eps) > 1 {
			s.log.Info("amqp: connected", "endpoint", s.eps[idx].redacted)
		}
		err := s.serve(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		s.setErr(err)
		s.log.Warn("amqp: connection lost", "err", err, "endpoint", s.eps[idx].redacted)
		first = (idx + 1) % len(s.eps)
		// A short first wait: a broker that drops us at once must not spin.
		rounds = 1
		if !sleep(ctx, s.opts.Backoff.Delay(0, s.opts.Rand())) {
			return
		}
	}
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Supervisor) dial(idx int) (*amqp091.Connection, error) {
	ep := s.eps[idx]
	props := amqp091.NewConnectionProperties()
	if s.opts.ConnectionName != "" {
		props.SetClientConnectionName(s.opts.ConnectionName)
	}
	cfg := amqp091.Config{
		Heartbeat:       s.opts.Heartbeat,
		TLSClientConfig: ep.tls,
		Dial:            amqp091.DefaultDial(s.opts.DialTimeout),
		Properties:      props,
	}
	conn, err := s.opts.Dial(ep.url, cfg)
	if err != nil {
		return nil, fmt.Errorf("amqp: dial %s: %w", ep.redacted, redactErr(err))
	}
	return conn, nil
}

// declare runs the topology declaration on a fresh connection, bounded by
// DeclareTimeout: past it the connection is closed (which ends the blocked
// call) and the endpoint counts as failed.
func (s *Supervisor) declare(conn *amqp091.Connection) error {
	if s.opts.Declare == nil && s.opts.DeclareConn == nil {
		return nil
	}
	done := make(chan error, 1)
	go func() {
		if s.opts.DeclareConn != nil {
			done <- s.opts.DeclareConn(conn)
			return
		}
		ch, err := conn.Channel()
		if err != nil {
			done <- fmt.Errorf("amqp: topology channel: %w", err)
			return
		}
		defer ch.Close()
		done <- s.opts.Declare(ch)
	}()
	t := time.NewTimer(s.opts.DeclareTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		conn.Close() // unblocks the declaration
		<-done
		return fmt.Errorf("amqp: topology not declared within %v", s.opts.DeclareTimeout)
	}
}

// serve runs the publisher and the workers on conn until one fails, the
// connection closes or ctx ends; it closes conn and waits for all of them.
func (s *Supervisor) serve(ctx context.Context, conn *amqp091.Connection) error {
	closes := conn.NotifyClose(make(chan *amqp091.Error, 1))
	blocks := conn.NotifyBlocked(make(chan amqp091.Blocking, 4))

	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// The blocked watcher drains blocks until the library closes it (on
	// connection shutdown), so the reader never waits on us.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for b := range blocks {
			s.mu.Lock()
			s.blocked = b.Active
			s.mu.Unlock()
			s.pub.SetBlocked(b.Active)
			if b.Active {
				s.log.Warn("amqp: connection blocked by the broker", "reason", b.Reason)
			} else {
				s.log.Info("amqp: connection unblocked")
			}
		}
	}()
	errs := make(chan error, len(s.opts.Workers)+1)
	run := func(w Worker) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w(cctx, conn)
		}()
	}
	run(s.pub.Run)
	for _, w := range s.opts.Workers {
		run(w)
	}

	s.mu.Lock()
	s.connected = true
	s.connects++
	if s.connects > 1 {
		s.reconnects++
	}
	close(s.connCh)
	s.connCh = make(chan struct{})
	s.mu.Unlock()

	var reason error
	select {
	case <-ctx.Done():
		reason = ctx.Err()
	case e, ok := <-closes:
		if ok && e != nil {
			reason = e
		} else {
			reason = errors.New("amqp: connection closed")
		}
	case err := <-errs:
		if err == nil {
			err = errors.New("amqp: worker ended")
		}
		reason = err
	}
	cancel()
	conn.Close()
	wg.Wait()

	s.mu.Lock()
	s.connected = false
	s.blocked = false
	s.mu.Unlock()
	s.pub.SetBlocked(false)
	return reason
}
