package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrNotLoopback is an address the server refuses: it listens on loopback
// only (rigconfig.CheckLoopback checks the configuration; the server checks
// again what it actually bound, e.g. a "localhost" that does not resolve to
// loopback).
var ErrNotLoopback = errors.New("metrics: not a loopback address")

// HTTP timeouts of the server.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
)

// Server serves GET /metrics on a loopback address. Serve starts its
// goroutine; Shutdown stops it and waits for it.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	log  *slog.Logger
	done chan struct{}
	once sync.Once
	err  error
}

// Serve listens on addr (a loopback host:port; port 0 picks one) and serves
// h at GET /metrics until Shutdown. Any other path is 404.
func Serve(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %s: %w", addr, err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("metrics: %s bound %s: %w", addr, ln.Addr(), ErrNotLoopback)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	s := &Server{ln: ln, log: log, done: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
			WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops accepting scrapes, lets those in progress finish within
// ctx (then closes their connections), and waits for the server's
// goroutine. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		if err := s.srv.Shutdown(ctx); err != nil {
			s.err = errors.Join(fmt.Errorf("metrics: shutdown: %w", err), s.srv.Close())
		}
		<-s.done
	})
	return s.err
}
