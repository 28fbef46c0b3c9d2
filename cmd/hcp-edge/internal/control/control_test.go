package control

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func listen(t *testing.T, h Handler) *Server {
	t.Helper()
	s, err := Listen(filepath.Join(t.TempDir(), "c.sock"), h, Opts{ReadTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

func TestRoundTrip(t *testing.T) {
	s := listen(t, HandlerFunc(func(ctx context.Context, req Request) (any, error) {
		if req.Op == OpReset && req.Operator == "" {
			return nil, errors.New("reset needs --operator")
		}
		return map[string]string{"op": req.Op, "by": req.Operator}, nil
	}))
	fi, err := os.Stat(s.Path())
	if err != nil || fi.Mode().Perm() != 0o660 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode = %v, %v; want a socket with 0660", fi.Mode(), err)
	}
	tests := []struct {
		name    string
		req     Request
		ok      bool
		wantErr string
	}{
		{"estop", Request{Op: OpEStop, Operator: "alice"}, true, ""},
		{"status", Request{Op: OpStatus}, true, ""},
		{"reset without operator", Request{Op: OpReset}, false, "needs --operator"},
		{"unknown op", Request{Op: "launch"}, false, "unknown op"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Do(ctxT(t), s.Path(), tt.req, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK != tt.ok || !strings.Contains(rep.Error, tt.wantErr) || rep.Stage != StageDone {
				t.Fatalf("reply %+v", rep)
			}
			if tt.ok {
				var got map[string]string
				if err := json.Unmarshal(rep.Result, &got); err != nil || got["op"] != tt.req.Op {
					t.Fatalf("result %s, %v", rep.Result, err)
				}
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	var calls atomic.Int32
	s := listen(t, HandlerFunc(func(ctx context.Context, req Request) (any, error) { calls.Add(1); return nil, nil }))
	for _, tt := range []struct{ name, line, want string }{
		{"not json", "hello\n", "bad request"},
		{"unknown field", `{"op":"status","x":1}` + "\n", "unknown field"},
		{"oversize", `{"op":"status","operator":"` + strings.Repeat("a", MaxRequest) + "\"}\n", "longer than"},
		{"silent client", "", "bad request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("unix", s.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if tt.line != "" {
				if _, err := c.Write([]byte(tt.line)); err != nil {
					t.Fatal(err)
				}
			}
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			if !strings.Contains(string(buf[:n]), tt.want) {
				t.Fatalf("reply %q, want %q", buf[:n], tt.want)
			}
		})
	}
	if calls.Load() != 0 {
		t.Fatalf("handler called %d times for bad requests", calls.Load())
	}
}

func TestNoDaemonAndNoAck(t *testing.T) {
	dir := t.TempDir()
	_, err := Do(ctxT(t), filepath.Join(dir, "none.sock"), Request{Op: OpStatus}, 100*time.Millisecond)
	if !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("missing socket: %v, want ErrNoDaemon", err)
	}
	// A listener that accepts (the kernel backlog of a stopped process) but never answers.
	path := filepath.Join(dir, "hung.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t0 := time.Now()
	_, err = Do(ctxT(t), path, Request{Op: OpEStop}, 150*time.Millisecond)
	if !errors.Is(err, ErrNoAck) {
		t.Fatalf("hung daemon: %v, want ErrNoAck", err)
	}
	t.Logf("no ack detected after %v", time.Since(t0))
	// A stale socket file (nothing listening) is replaced by Listen; a live one is not.
	_ = ln.Close()
	stale := filepath.Join(dir, "stale.sock")
	l2, _ := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	l2.SetUnlinkOnClose(false)
	_ = l2.Close()
	s, err := Listen(stale, HandlerFunc(func(context.Context, Request) (any, error) { return nil, nil }), Opts{})
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	defer s.Shutdown(context.Background())
	if _, err := Listen(stale, HandlerFunc(func(context.Context, Request) (any, error) { return nil, nil }), Opts{}); err == nil {
		t.Fatal("Listen replaced a live daemon's socket")
	}
}

func TestShutdownWaitsForOperation(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	s := listen(t, HandlerFunc(func(ctx context.Context, req Request) (any, error) {
		close(started)
		<-release
		finished.Store(true)
		return "done", nil
	}))
	errc := make(chan error, 1)
	go func() { _, err := Do(ctxT(t), s.Path(), Request{Op: OpEStop}, time.Second); errc <- err }()
	<-started
	go func() { time.Sleep(50 * time.Millisecond); close(release) }()
	if err := s.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if !finished.Load() {
		t.Fatal("Shutdown returned before the operation in progress finished")
	}
	if err := <-errc; err != nil {
		t.Fatalf("client of the operation in progress: %v", err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left after Shutdown: %v", err)
	}
}

// TestAfterReply: a function deferred with AfterReply runs after the client
// has its final reply, and Shutdown waits for it; called outside a Server,
// AfterReply runs it at once.
func TestAfterReply(t *testing.T) {
	release := make(chan struct{})
	var ran atomic.Bool
	s := listen(t, HandlerFunc(func(ctx context.Context, req Request) (any, error) {
		AfterReply(ctx, func() {
			<-release
			ran.Store(true)
		})
		return "done", nil
	}))
	rep, err := Do(ctxT(t), s.Path(), Request{Op: OpEStop}, time.Second)
	if err != nil || !rep.OK || string(rep.Result) != `"done"` {
		t.Fatalf("reply %+v, %v", rep, err)
	}
	if ran.Load() {
		t.Fatal("the deferred function ran before the reply")
	}
	go func() { time.Sleep(50 * time.Millisecond); close(release) }()
	if err := s.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if !ran.Load() {
		t.Fatal("Shutdown returned before the deferred function ran")
	}
	var now bool
	AfterReply(context.Background(), func() { now = true })
	if !now {
		t.Fatal("AfterReply outside a Server did not run the function at once")
	}
}

// streamer streams three events, then ends; it records how it ended.
type streamer struct {
	HandlerFunc
	ended chan error
}

func (s *streamer) HandleStream(ctx context.Context, req Request, emit Emit) (any, error) {
	for i := range 3 {
		if err := emit(map[string]int{"n": i}); err != nil {
			return nil, err
		}
	}
	if req.ID == "hang" {
		<-ctx.Done()
		s.ended <- ctx.Err()
		return nil, ctx.Err()
	}
	return "final", nil
}

func TestStream(t *testing.T) {
	h := &streamer{HandlerFunc: func(context.Context, Request) (any, error) { return "plain", nil }, ended: make(chan error, 1)}
	s := listen(t, h)
	var got []string
	rep, err := Stream(ctxT(t), s.Path(), Request{Op: OpSubmit, Watch: true}, time.Second, func(r json.RawMessage) { got = append(got, string(r)) })
	if err != nil || !rep.OK || string(rep.Result) != `"final"` || len(got) != 3 || got[2] != `{"n":2}` {
		t.Fatalf("stream: %+v %v events %v", rep, err, got)
	}
	// Without Watch the plain handler answers; Do skips nothing.
	rep, err = Do(ctxT(t), s.Path(), Request{Op: OpSubmit}, time.Second)
	if err != nil || string(rep.Result) != `"plain"` {
		t.Fatalf("plain: %+v %v", rep, err)
	}
	// A client that hangs up ends the stream's context.
	ctx, cancel := context.WithCancel(ctxT(t))
	n := 0
	_, err = Stream(ctx, s.Path(), Request{Op: OpSubmit, Watch: true, ID: "hang"}, time.Second, func(json.RawMessage) {
		if n++; n == 3 {
			cancel()
		}
	})
	if err == nil {
		t.Fatal("cancelled stream returned no error")
	}
	select {
	case <-h.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's stream did not end when the client hung up")
	}
}
