//go:build pprof

package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/metrics"
	"strings"
	"time"
)

// debugPprofEnv names the loopback address (host:port) of the profiling
// listener of a binary built with -tags pprof (docs/FOOTPRINT.md). The
// release binary has no such listener: the tag keeps net/http/pprof and
// runtime/pprof out of it.
const debugPprofEnv = "HCP_DEBUG_PPROF"

// startDebugPprof serves net/http/pprof on the loopback address in
// HCP_DEBUG_PPROF, if set; the returned function stops the server and waits
// for its goroutine. A non-loopback address is refused.
func startDebugPprof(log *slog.Logger) func() {
	addr := os.Getenv(debugPprofEnv)
	if addr == "" {
		return func() {}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("pprof listener", "addr", addr, "err", err)
		return func() {}
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		_ = ln.Close()
		log.Error("pprof listener refused: not loopback", "addr", ln.Addr().String())
		return func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/memclasses", serveMemClasses)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof listener stopped", "err", err)
		}
	}()
	log.Warn("pprof debug listener on", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	}
}

// serveMemClasses writes the runtime's memory classes (runtime/metrics
// /memory/classes/..., bytes), one "name value" line each: where the
// anonymous part of the daemon's RSS goes (docs/FOOTPRINT.md, "Where the
// memory goes").
func serveMemClasses(w http.ResponseWriter, _ *http.Request) {
	var s []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") || strings.HasPrefix(d.Name, "/gc/heap/goal") ||
			strings.HasPrefix(d.Name, "/gc/stack/") || strings.HasPrefix(d.Name, "/gc/heap/live") {
			s = append(s, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(s)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			_, _ = fmt.Fprintf(w, "%s %d\n", x.Name, x.Value.Uint64())
		}
	}
}
