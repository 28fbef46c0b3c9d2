package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// Status is the body of GET /status.
type Status struct {
	plant.Snapshot
	Writes []plant.Write `json:"writes"`
}

// WritesReply is the body of GET /writes.
type WritesReply struct {
	Writes []plant.Write `json:"writes"`
}

// FaultsReply is the body of GET/POST/DELETE /faults.
type FaultsReply struct {
	Faults []plant.Fault `json:"faults"`
}

// FaultRequest is the optional body of POST/DELETE /faults/{name}.
type FaultRequest struct {
	Target string `json:"target,omitempty"`
}

// PinLevel is the body of GET/PUT /gpio/{pin}.
type PinLevel struct {
	Pin   string `json:"pin,omitempty"`
	Level bool   `json:"level"`
}

// EdgeReply is the body of GET /gpio/{pin}/edge.
type EdgeReply struct {
	Pin     string `json:"pin"`
	Level   bool   `json:"level"`
	Changed bool   `json:"changed"`
}

// PrecursorReply is the body of GET/PUT /precursor: what the precursor boat
// holds ("MoO3" or "WO3") and the material it grows ("MoS2" or "WS2").
type PrecursorReply struct {
	Precursor plant.Precursor `json:"precursor"`
	Material  plant.Material  `json:"material,omitempty"`
}

// ErrorReply is the body of every error.
type ErrorReply struct {
	Error string `json:"error"`
}

// maxLongPoll caps GET /gpio/{pin}/edge.
const maxLongPoll = 60 * time.Second

// Handler returns the control API over p.
func Handler(p *plant.Plant) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, Status{Snapshot: p.Snapshot(), Writes: p.Writes(0)})
	})
	mux.HandleFunc("GET /writes", func(w http.ResponseWriter, r *http.Request) {
		var since uint64
		if s := r.URL.Query().Get("since"); s != "" {
			var err error
			if since, err = strconv.ParseUint(s, 10, 64); err != nil {
				writeErr(w, http.StatusBadRequest, fmt.Errorf("since: %w", err))
				return
			}
		}
		writeJSON(w, http.StatusOK, WritesReply{Writes: p.Writes(since)})
	})
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, FaultsReply{Faults: p.Faults()})
	})
	mux.HandleFunc("POST /faults/{name}", func(w http.ResponseWriter, r *http.Request) {
		req, err := faultRequest(r)
		if err != nil {
			writeErr(w, http.StatusBadRequest, err)
			return
		}
		if err := p.Inject(r.PathValue("name"), req.Target); err != nil {
			writeErr(w, faultStatus(err), err)
			return
		}
		writeJSON(w, http.StatusOK, FaultsReply{Faults: p.Faults()})
	})
	mux.HandleFunc("DELETE /faults/{name}", func(w http.ResponseWriter, r *http.Request) {
		req, err := faultRequest(r)
		if err != nil {
			writeErr(w, http.StatusBadRequest, err)
			return
		}
		if err := p.Clear(r.PathValue("name"), req.Target); err != nil {
			writeErr(w, faultStatus(err), err)
			return
		}
		writeJSON(w, http.StatusOK, FaultsReply{Faults: p.Faults()})
	})
	mux.HandleFunc("GET /precursor", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, precursorReply(p.Precursor()))
	})
	mux.HandleFunc("PUT /precursor", func(w http.ResponseWriter, r *http.Request) {
		var req PrecursorReply
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
			writeErr(w, http.StatusBadRequest, errors.New(`body must be {"precursor": "MoO3"|"WO3"}`))
			return
		}
		pr, err := plant.ParsePrecursor(string(req.Precursor))
		if err == nil {
			err = p.SetPrecursor(pr)
		}
		if err != nil {
			writeErr(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, precursorReply(pr))
	})
	mux.HandleFunc("GET /gpio/{pin}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("pin")
		l, err := p.GPIOLevel(name)
		if err != nil {
			writeErr(w, http.StatusNotFound, err)
			return
		}
		writeJSON(w, http.StatusOK, PinLevel{Pin: name, Level: l})
	})
	mux.HandleFunc("PUT /gpio/{pin}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("pin")
		var req struct {
			Level *bool `json:"level"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil || req.Level == nil {
			writeErr(w, http.StatusBadRequest, errors.New(`body must be {"level": true|false}`))
			return
		}
		if err := p.SetGPIO(name, *req.Level); err != nil {
			code := http.StatusNotFound
			if errors.Is(err, plant.ErrInputPin) {
				code = http.StatusConflict
			}
			writeErr(w, code, err)
			return
		}
		writeJSON(w, http.StatusOK, PinLevel{Pin: name, Level: *req.Level})
	})
	mux.HandleFunc("GET /gpio/{pin}/edge", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("pin")
		q := r.URL.Query()
		level, err := strconv.ParseBool(q.Get("level"))
		if err != nil {
			writeErr(w, http.StatusBadRequest, fmt.Errorf("level: %w", err))
			return
		}
		timeout := 10 * time.Second
		if s := q.Get("timeout_ms"); s != "" {
			ms, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				writeErr(w, http.StatusBadRequest, fmt.Errorf("timeout_ms: %w", err))
				return
			}
			timeout = time.Duration(ms) * time.Millisecond
		}
		timeout = min(timeout, maxLongPoll)
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		l, changed, err := p.WaitGPIO(ctx, name, level)
		if errors.Is(err, plant.ErrUnknownPin) {
			writeErr(w, http.StatusNotFound, err)
			return
		}
		writeJSON(w, http.StatusOK, EdgeReply{Pin: name, Level: l, Changed: changed})
	})
	return mux
}

func precursorReply(pr plant.Precursor) PrecursorReply {
	m, _ := pr.Material() // the plant holds only known precursors
	return PrecursorReply{Precursor: pr, Material: m}
}

func faultRequest(r *http.Request) (FaultRequest, error) {
	var req FaultRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		return req, err
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return req, fmt.Errorf("body: %w", err)
		}
	}
	if t := r.URL.Query().Get("target"); t != "" && req.Target == "" {
		req.Target = t
	}
	return req, nil
}

func faultStatus(err error) int {
	if errors.Is(err, plant.ErrUnknownFault) {
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, ErrorReply{Error: err.Error()})
}

// Opts configures a Server.
type Opts struct {
	// Logger receives server errors (default: discard).
	Logger *slog.Logger
}

// Server serves the control API on a unix socket.
type Server struct {
	path string
	ln   net.Listener
	srv  *http.Server
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

// Listen creates the unix socket at path (replacing a stale one), mode 0660,
// and serves the API over p in a goroutine owned by the server.
func Listen(p *plant.Plant, path string, opts Opts) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control: listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("control: chmod %s: %w", path, err)
	}
	s := &Server{path: path, ln: ln, srv: &http.Server{
		Handler:           Handler(p),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("control: serve", "err", err)
		}
	}()
	return s, nil
}

// Path is the socket path.
func (s *Server) Path() string { return s.path }

// Close stops the server (long polls are cut short after a second), waits for
// it and removes the socket.
func (s *Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
		s.wg.Wait()
		_ = os.Remove(s.path)
	})
	return s.err
}
