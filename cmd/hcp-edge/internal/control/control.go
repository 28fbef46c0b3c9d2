package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxRequest bounds a request line, in bytes (a task_submit rides in one).
const MaxRequest = 256 << 10

// maxReply bounds a reply line read by Do and Stream.
const maxReply = 1 << 20

// Operations.
const (
	OpEStop  = "estop"
	OpStatus = "status"
	OpReset  = "reset"
	OpArm    = "arm"

	OpSubmit   = "submit"   // {task, watch}: a task_submit envelope as broker user "local"
	OpApprove  = "approve"  // {id, operator}
	OpDeny     = "deny"     // {id, operator, reason}
	OpAbort    = "abort"    // {id, operator, reason}
	OpPause    = "pause"    // {id, operator}
	OpResume   = "resume"   // {id, operator}
	OpSessions = "sessions" // {all}
	OpArtifact = "artifact" // {uri, operator}

	OpAccessList     = "access_list"     // {all}: the access requests of T4 sessions (pending; all: decided too)
	OpAccessApprove  = "access_approve"  // {id, operator, for}: release a T4 session's held results
	OpAccessDeny     = "access_deny"     // {id, operator, reason}: deny them (task_failed access_denied)
	OpAccessWithdraw = "access_withdraw" // {id, operator, reason}: end a release early

	OpAuditVerify = "audit_verify" // {}: check the audit log's hash chain
	OpAuditReplay = "audit_replay" // {id, operator}: one session's audit entries
	OpAuditLog    = "audit_log"    // {query}: audit entries by time, kind, session, uid, outcome (no role)
	OpAuditReport = "audit_report" // {query}: the safety report over a window, per day or week (no role)
	OpExport      = "export"       // {id, operator}: a session's .eln archive (as an artifact fetch: T4 needs a release; audited T2+)

	OpTakeover   = "takeover"    // {id, operator, reason}: the technician becomes the session's owner
	OpHandback   = "handback"    // {id, operator, reason}: back to the owner before the takeover
	OpOwnership  = "ownership"   // {id}: the session's owner and ownership chain
	OpTools      = "tools"       // {}: the tool pipeline's per-tool statistics
	OpWhoami     = "whoami"      // {operator}: the OS user the daemon sees, the display name and its roles
	OpStateUsage = "state_usage" // {}: the state directory's bytes per bucket, data class and of the artifacts

	OpAnswer = "answer" // {id, checkpoint, value, operator}: answer the recipe question a session is blocked at
)

// ops is every operation the server accepts.
var ops = []string{OpEStop, OpStatus, OpReset, OpArm, OpSubmit, OpApprove, OpDeny, OpAbort, OpPause, OpResume, OpSessions, OpArtifact, OpAccessList, OpAccessApprove, OpAccessDeny, OpAccessWithdraw, OpAuditVerify, OpAuditReplay, OpAuditLog, OpAuditReport, OpExport,
	OpTakeover, OpHandback, OpOwnership, OpTools, OpWhoami, OpStateUsage, OpAnswer}

// Stages of a reply line.
const (
	StageAccepted = "accepted" // the request was read; the operation runs
	StageEvent    = "event"    // an intermediate line of a streaming operation (Result is the item)
	StageDone     = "done"     // the final reply
)

// Errors of the client.
var (
	// ErrNoDaemon: nothing listens on the socket (no file, or connection refused).
	ErrNoDaemon = errors.New("control: no daemon listening")
	// ErrNoAck: a connection was accepted but the daemon did not acknowledge
	// the request in time (hung or stopped).
	ErrNoAck = errors.New("control: the daemon did not acknowledge")
	// ErrNoReply: acknowledged, but no final reply before the deadline.
	ErrNoReply = errors.New("control: the daemon acknowledged but did not finish")
)

// Request is one request line.
type Request struct {
	Op       string          `json:"op"`
	Operator string          `json:"operator,omitempty"`
	ID       string          `json:"id,omitempty"`     // session or approval id
	Reason   string          `json:"reason,omitempty"` // deny, abort
	Task     json.RawMessage `json:"task,omitempty"`   // submit: the task_submit envelope
	Watch    bool            `json:"watch,omitempty"`  // stream the operation's progress (StreamHandler)
	All      bool            `json:"all,omitempty"`    // sessions: closed ones too
	URI      string          `json:"uri,omitempty"`    // artifact
	For      string          `json:"for,omitempty"`    // access_approve: how long local reads stay open (a Go duration)
	Query    json.RawMessage `json:"query,omitempty"`  // audit_log: the auditaccess.LogQuery
	// Checkpoint and Value are an answer's: the checkpoint of the
	// question the session is blocked at, and the answer as typed.
	Checkpoint string `json:"checkpoint,omitempty"`
	Value      string `json:"value,omitempty"`

	// Peer is who sent the request, as the kernel tells the server
	// (SO_PEERCRED on the connection). It is never read from the request
	// line: a client cannot set it.
	Peer Peer `json:"-"`
}

// Peer is the credentials of the process at the other end of a control
// connection, read from the kernel when the connection is accepted.
type Peer struct {
	UID, GID uint32
	PID      int32
	// Known is false when the credentials could not be read (the request
	// is then refused every role; e-stop still runs).
	Known bool
	// LoginUID is the kernel's audit login uid of the peer process
	// (/proc/PID/loginuid: the account that logged in, unchanged by sudo
	// and su), when LoginKnown. It is recorded next to UID in the audit;
	// it grants and removes no role.
	LoginUID   uint32
	LoginKnown bool
}

// Reply is one reply line.
type Reply struct {
	Op     string          `json:"op"`
	Stage  string          `json:"stage"`
	OK     bool            `json:"ok"`
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Handler runs one operation. It returns the result (marshalled into
// Reply.Result) or an error (Reply.Error).
type Handler interface {
	Handle(ctx context.Context, req Request) (any, error)
}

// Emit sends one intermediate line (stage "event", v marshalled into
// Result) to the client of a streaming operation.
type Emit func(v any) error

// StreamHandler is a Handler that can also stream: a request with Watch set
// is handed to HandleStream, whose context has no connection deadline and
// ends when the client hangs up or the server shuts down.
type StreamHandler interface {
	Handler
	HandleStream(ctx context.Context, req Request, emit Emit) (any, error)
}

// afterKey is the context key of a request's afterReply.
type afterKey struct{}

// afterReply holds the functions AfterReply deferred for one request.
type afterReply struct {
	mu sync.Mutex
	fs []func()
}

// run calls the deferred functions in the order they were added.
func (a *afterReply) run() {
	a.mu.Lock()
	fs := a.fs
	a.fs = nil
	a.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// AfterReply defers f until the final reply to the request whose context is
// ctx has been written: for work the client need not wait for, such as the
// control audit entry of an e-stop. The request's context has ended by
// then (f must not depend on it). The Server still runs f before the
// connection's goroutine ends, so Shutdown waits for it. With a context
// that is not a Server's request context (a Handler called directly), f
// runs at once.
func AfterReply(ctx context.Context, f func()) {
	a, ok := ctx.Value(afterKey{}).(*afterReply)
	if !ok {
		f()
		return
	}
	a.mu.Lock()
	a.fs = append(a.fs, f)
	a.mu.Unlock()
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req Request) (any, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req Request) (any, error) { return f(ctx, req) }

// Opts tunes a Server.
type Opts struct {
	ReadTimeout time.Duration // to read the request line (default 2s)
	ConnTimeout time.Duration // per connection, request and handling (default 30s)
	MaxConns    int           // connections served at once; more are refused (default 16)
	Logger      *slog.Logger  // discarded if nil
}

// DefaultOpts returns the defaults.
func DefaultOpts() Opts {
	return Opts{ReadTimeout: 2 * time.Second, ConnTimeout: 30 * time.Second, MaxConns: 16}
}

// Server serves the control socket. Its goroutines are owned: Shutdown
// stops them and waits.
type Server struct {
	path  string
	ln    *net.UnixListener
	h     Handler
	opts  Opts
	log   *slog.Logger
	sem   chan struct{}
	ctx   context.Context // cancelled when Shutdown gives up waiting
	stop  context.CancelFunc
	sctx  context.Context // streams: cancelled as soon as Shutdown begins
	sstop context.CancelFunc
	wg    sync.WaitGroup
	once  sync.Once
	close error
}

// Listen creates the socket at path (mode 0660), replacing a stale one
// (a file nothing listens on), and starts serving. It refuses to replace a
// socket on which a daemon answers.
func Listen(path string, h Handler, opts Opts) (*Server, error) {
	d := DefaultOpts()
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = d.ReadTimeout
	}
	if opts.ConnTimeout <= 0 {
		opts.ConnTimeout = d.ConnTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = d.MaxConns
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := os.Lstat(path); err == nil {
		c, derr := net.DialTimeout("unix", path, 200*time.Millisecond)
		if derr == nil {
			_ = c.Close()
			return nil, fmt.Errorf("control: %s: another daemon is listening on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("control: remove stale socket: %w", err)
		}
	}
	// Create the socket with no access for others, then open it to the group.
	old := syscall.Umask(0o117)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control: listen: %w", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("control: chmod socket: %w", err)
	}
	s := &Server{path: path, ln: ln, h: h, opts: opts, log: log, sem: make(chan struct{}, opts.MaxConns)}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.sctx, s.sstop = context.WithCancel(s.ctx)
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("control socket accept", "err", err)
			select {
			case <-time.After(10 * time.Millisecond):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		select {
		case s.sem <- struct{}{}:
		default:
			s.log.Warn("control socket: too many connections, refusing one")
			_ = c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sem }()
			s.serve(c)
		}()
	}
}

func (s *Server) serve(c *net.UnixConn) {
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(start.Add(s.opts.ConnTimeout))
	_ = c.SetReadDeadline(start.Add(s.opts.ReadTimeout))
	enc := json.NewEncoder(c)
	line, err := readLine(c, MaxRequest)
	if err != nil {
		_ = enc.Encode(Reply{Stage: StageDone, Error: "bad request: " + err.Error()})
		return
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		_ = enc.Encode(Reply{Stage: StageDone, Error: "bad request: " + err.Error()})
		return
	}
	req.Peer = peerOf(c)
	if !req.Peer.Known {
		s.log.Warn("control socket: the peer's credentials could not be read; the request holds no role", "op", req.Op)
	}
	if !slices.Contains(ops, req.Op) {
		_ = enc.Encode(Reply{Op: req.Op, Stage: StageDone, Error: fmt.Sprintf("unknown op %q (%s)", req.Op, strings.Join(ops, ", "))})
		return
	}
	sh, stream := s.h.(StreamHandler)
	stream = stream && req.Watch
	if stream {
		_ = c.SetDeadline(time.Time{})
		_ = c.SetWriteDeadline(time.Now().Add(s.opts.ConnTimeout))
	}
	if err := enc.Encode(Reply{Op: req.Op, Stage: StageAccepted, OK: true}); err != nil {
		s.log.Debug("control socket: client gone before the ack", "op", req.Op, "err", err)
	}
	var res any
	var herr error
	after := &afterReply{}
	defer after.run() // AfterReply's functions, once the reply is written (or on a panic's way out)
	if stream {
		ctx, cancel := context.WithCancel(context.WithValue(s.sctx, afterKey{}, after))
		defer cancel()
		// The client sends nothing more: a read that ends means it hung up.
		hup := make(chan struct{})
		go func() { defer close(hup); _, _ = io.Copy(io.Discard, c); cancel() }()
		defer func() { _ = c.CloseRead(); <-hup }()
		var mu sync.Mutex
		emit := func(v any) error {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			_ = c.SetWriteDeadline(time.Now().Add(s.opts.ConnTimeout))
			return enc.Encode(Reply{Op: req.Op, Stage: StageEvent, OK: true, Result: b})
		}
		res, herr = sh.HandleStream(ctx, req, emit)
		_ = c.SetWriteDeadline(time.Now().Add(s.opts.ConnTimeout))
	} else {
		ctx, cancel := context.WithDeadline(context.WithValue(s.ctx, afterKey{}, after), start.Add(s.opts.ConnTimeout))
		defer cancel()
		res, herr = s.h.Handle(ctx, req)
	}
	rep := Reply{Op: req.Op, Stage: StageDone, OK: herr == nil}
	if herr != nil {
		rep.Error = herr.Error()
	}
	if res != nil {
		b, err := json.Marshal(res)
		if err != nil {
			rep.OK, rep.Error = false, "encode result: "+err.Error()
		} else {
			rep.Result = b
		}
	}
	if err := enc.Encode(rep); err != nil {
		s.log.Warn("control socket: reply not delivered", "op", req.Op, "err", err)
	}
	s.log.Info("control request", "op", req.Op, "operator", req.Operator, "uid", req.Peer.UID, "ok", rep.OK, "err", rep.Error, "took", time.Since(start))
}

// peerOf reads the credentials of c's peer from the kernel (SO_PEERCRED).
func peerOf(c *net.UnixConn) Peer {
	rc, err := c.SyscallConn()
	if err != nil {
		return Peer{}
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil || cred == nil {
		return Peer{}
	}
	p := Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid, Known: true}
	p.LoginUID, p.LoginKnown = loginUIDOf("/proc", cred.Pid)
	return p
}

// readLine reads up to and excluding '\n', at most limit bytes.
func readLine(r io.Reader, limit int) ([]byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, int64(limit)+1), 512)
	var out []byte
	for {
		b, err := br.ReadSlice('\n')
		out = append(out, b...)
		if len(out) > limit {
			return nil, fmt.Errorf("line longer than %d bytes", limit)
		}
		if err == nil {
			return out[:len(out)-1], nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(out) > 0 && len(out) <= limit {
			return out, nil
		}
		return nil, err
	}
}

// Shutdown stops intake (the socket file is removed), waits for the
// operations in progress until ctx ends, then cancels them and waits.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		s.close = s.ln.Close() // also unlinks the socket file
		s.sstop()              // watchers end now; operations finish
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.stop()
			<-done
		}
		s.stop()
	})
	return s.close
}

// Do sends req to the daemon on path and returns its final reply.
// Intermediate lines (stage "event") are skipped; see Stream. The
// daemon must acknowledge within ackTimeout (ErrNoAck otherwise); ctx bounds
// the whole exchange (ErrNoReply when it ends after the acknowledgement).
// A reply with OK false is returned with a nil error.
func Do(ctx context.Context, path string, req Request, ackTimeout time.Duration) (Reply, error) {
	return Stream(ctx, path, req, ackTimeout, nil)
}

// Stream is Do for a streaming operation: onEvent, if not nil, is called
// with the Result of each intermediate line, in order, before the final
// reply is returned.
func Stream(ctx context.Context, path string, req Request, ackTimeout time.Duration, onEvent func(json.RawMessage)) (Reply, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	c, err := d.DialContext(dctx, "unix", path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return Reply{}, fmt.Errorf("%w on %s: %w", ErrNoDaemon, path, err)
		}
		if dctx.Err() != nil && ctx.Err() == nil {
			return Reply{}, fmt.Errorf("%w within %v on %s (connect): %w", ErrNoAck, ackTimeout, path, err)
		}
		return Reply{}, fmt.Errorf("control: dial %s: %w", path, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	ackBy := time.Now().Add(ackTimeout)
	_ = c.SetDeadline(ackBy)
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return Reply{}, fmt.Errorf("%w within %v on %s (send): %w", ErrNoAck, ackTimeout, path, err)
	}
	br := bufio.NewReaderSize(c, 64<<10)
	first, err := readReply(br)
	if err != nil {
		if ctx.Err() != nil {
			return Reply{}, fmt.Errorf("control: %w", ctx.Err())
		}
		return Reply{}, fmt.Errorf("%w within %v on %s: %w", ErrNoAck, ackTimeout, path, err)
	}
	if first.Stage != StageAccepted {
		return first, nil // refused before running (bad request)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Time{}
	}
	_ = c.SetDeadline(dl)
	for {
		rep, err := readReply(br)
		if err != nil {
			return Reply{}, fmt.Errorf("%w on %s: %w", ErrNoReply, path, err)
		}
		if rep.Stage != StageEvent {
			return rep, nil
		}
		if onEvent != nil {
			onEvent(rep.Result)
		}
	}
}

func readReply(br *bufio.Reader) (Reply, error) {
	var line []byte
	for {
		b, err := br.ReadSlice('\n')
		line = append(line, b...)
		if len(line) > maxReply {
			return Reply{}, fmt.Errorf("control: reply line longer than %d bytes", maxReply)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return Reply{}, err
		}
	}
	var r Reply
	if err := json.Unmarshal(line, &r); err != nil {
		return Reply{}, fmt.Errorf("control: bad reply line: %w", err)
	}
	return r, nil
}
