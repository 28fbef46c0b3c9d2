package dashboard

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// static holds the page's files gzipped (static/NAME.gz, `make
// schemas-gz`; TestStaticGzCurrent checks them against static/NAME): a
// browser takes them as they are (Content-Encoding: gzip), 13 kB less of
// the armv7 binary than the plain files.
//
//go:embed static/*.gz
var static embed.FS

// Sentinel errors of the package.
var (
	// ErrNotLoopback is a listen address beyond loopback without AllowLAN.
	ErrNotLoopback = errors.New("dashboard: not a loopback address (set agent.dashboard_allow_lan for a LAN address)")
	// ErrNoPlot is a plot the Source does not serve: no such session or
	// file, not an SVG artifact, or sealed at rest (T3/T4).
	ErrNoPlot = errors.New("dashboard: no such plot")
)

// Source is what the dashboard reads from the daemon. Both methods must be
// safe for concurrent use and must not change the rig.
type Source interface {
	// Snapshot returns the state to show, JSON-encodable.
	Snapshot(ctx context.Context) (any, error)
	// Plot returns the SVG plot file of a finished session (an error
	// wrapping ErrNoPlot when there is none to serve). viewer names the
	// client for the audit log (its remote address).
	Plot(ctx context.Context, sessionID, file, viewer string) ([]byte, error)
}

// Opts tunes the server.
type Opts struct {
	// AllowLAN accepts a listen address beyond loopback.
	AllowLAN bool
	// Every is the period of the event stream (default 1 s).
	Every time.Duration
	// MaxStreams bounds the event streams served at once (default 8).
	MaxStreams int
	// Logger (discarded if nil).
	Logger *slog.Logger
}

// HTTP limits of the server.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	idleTimeout       = 60 * time.Second
	writeTimeout      = 30 * time.Second // every response but the event stream
	maxHeaderBytes    = 16 << 10
	snapshotTimeout   = 5 * time.Second
)

// csp is the Content-Security-Policy of every response: own origin only,
// no inline script, no plugins, not framed.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Server is the dashboard's HTTP server. Serve starts its goroutine;
// Shutdown stops it (ending the event streams) and waits for it.
type Server struct {
	srv     *http.Server
	ln      net.Listener
	src     Source
	opts    Opts
	log     *slog.Logger
	done    chan struct{} // closed by Shutdown: event streams end
	served  chan struct{} // closed when the Serve goroutine returns
	streams chan struct{} // semaphore of event streams
	once    sync.Once
	err     error
}

// Serve listens on addr (host:port; port 0 picks one) and serves the
// dashboard of src until Shutdown.
func Serve(addr string, src Source, opts Opts) (*Server, error) {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = 8
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: listen %s: %w", addr, err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !opts.AllowLAN && (!ok || !ta.IP.IsLoopback()) {
		_ = ln.Close()
		return nil, fmt.Errorf("dashboard: %s bound %s: %w", addr, ln.Addr(), ErrNotLoopback)
	}
	s := &Server{ln: ln, src: src, opts: opts, log: opts.Logger, done: make(chan struct{}), served: make(chan struct{}),
		streams: make(chan struct{}, opts.MaxStreams)}
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn)}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("dashboard server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown ends the event streams, stops accepting requests, lets those in
// progress finish within ctx (then closes their connections) and waits for
// the server's goroutine. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		close(s.done)
		if err := s.srv.Shutdown(ctx); err != nil {
			s.err = errors.Join(fmt.Errorf("dashboard: shutdown: %w", err), s.srv.Close())
		}
		<-s.served
	})
	return s.err
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serveStatic(w, r, "index.html") })
	mux.HandleFunc("GET /static/{file}", func(w http.ResponseWriter, r *http.Request) { serveStatic(w, r, r.PathValue("file")) })
	mux.HandleFunc("GET /api/state", s.state)
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("GET /plots/{session}/{file}", s.plot)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "read-only dashboard: "+r.Method+" is not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path != "/api/events" { // the stream sets its own deadline per event
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
		}
		mux.ServeHTTP(w, r)
	})
}

// staticTypes are the content types of the page's files, by extension.
var staticTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// serveStatic answers one of the page's embedded files (static/NAME): its
// bytes with their type and length, gzipped to a client that accepts it
// (every browser) and unpacked for one that does not, and an ETag of their
// hash, to which an If-None-Match answers 304. No directory is listed and
// nothing else is served (404). net/http's file server, which did the same
// for three files, was 53,248 bytes of the armv7 binary (docs/FOOTPRINT.md).
func serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	ctype, ok := staticTypes[path.Ext(name)]
	b, err := fs.ReadFile(static, "static/"+name+".gz")
	if !ok || err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(b)
	etag := hex.EncodeToString(sum[:8])
	h := w.Header()
	h.Set("Vary", "Accept-Encoding")
	gz := strings.Contains(r.Header.Get("Accept-Encoding"), "gzip")
	if !gz {
		etag += "-identity" // another representation, another tag
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			var plain bytes.Buffer
			_, err = plain.ReadFrom(zr)
			b = plain.Bytes()
		}
		if err != nil {
			http.Error(w, "dashboard: embedded "+name+": "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	etag = `"` + etag + `"`
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", ctype)
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func (s *Server) snapshot(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	v, err := s.src.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	b, err := s.snapshot(r.Context())
	if err != nil {
		s.log.Warn("dashboard snapshot", "err", err)
		http.Error(w, "snapshot failed: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// events streams a snapshot every Every until the client goes or the
// server shuts down.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		http.Error(w, "too many open dashboards", http.StatusTooManyRequests)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(s.opts.Every)
	defer tick.Stop()
	for {
		b, err := s.snapshot(r.Context())
		if err != nil {
			b, _ = json.Marshal(map[string]string{"error": err.Error()})
		}
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second)) // a stalled client does not hold the stream
		if _, err := fmt.Fprintf(w, "retry: 2000\ndata: %s\n\n", b); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-tick.C:
		}
	}
}

func (s *Server) plot(w http.ResponseWriter, r *http.Request) {
	sid, file := r.PathValue("session"), r.PathValue("file")
	if !strings.HasSuffix(file, ".svg") {
		http.NotFound(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), snapshotTimeout)
	defer cancel()
	b, err := s.src.Plot(ctx, sid, file, "dashboard "+r.RemoteAddr)
	if errors.Is(err, ErrNoPlot) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		s.log.Warn("dashboard plot", "session", sid, "file", file, "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox") // a plot runs nothing
	h.Set("Cache-Control", "private, max-age=86400")                                           // a finished session's plot never changes
	_, _ = w.Write(b)
}
