package simgpio

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"

	"hcp-edge/device"
	drvgpio "hcp-edge/drivers/gpio"
)

const hang = 5 * time.Second

// fakeSim implements the GPIO part of the control API as the protocol document
// describes it: estop, leak and relay_fb are inputs, relay is the output and
// relay_fb follows it (unless the contact is stuck); heartbeat is an output
// that drives nothing here (the simulator's relay watchdog is tested in the
// HIL tests).
type fakeSim struct {
	mu      sync.Mutex
	levels  map[string]bool
	changed chan struct{} // closed on every change
	stuck   *bool
	puts    int
	reads   int // plain GET /gpio/{pin}
	edges   int // GET /gpio/{pin}/edge
	badJSON bool
}

func newFakeSim() *fakeSim {
	return &fakeSim{
		levels:  map[string]bool{EStop: true, Leak: true, Relay: false, RelayFB: false, Heartbeat: false},
		changed: make(chan struct{}),
	}
}

// set drives a level (a fault on an input, or the relay) and wakes long polls.
func (s *fakeSim) set(pin string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.levels[pin] = v
	if pin == Relay {
		s.levels[RelayFB] = v
		if s.stuck != nil {
			s.levels[RelayFB] = *s.stuck
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *fakeSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/gpio/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	name, edge := strings.CutSuffix(rest, "/edge")
	s.mu.Lock()
	_, exists := s.levels[name]
	bad := s.badJSON
	s.mu.Unlock()
	if !exists {
		http.Error(w, `{"error":"unknown pin"}`, http.StatusNotFound)
		return
	}
	reply := func(v map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		if bad {
			w.Write([]byte(`{"pin":`))
			return
		}
		json.NewEncoder(w).Encode(v)
	}
	switch {
	case r.Method == http.MethodGet && !edge:
		s.mu.Lock()
		s.reads++
		v := s.levels[name]
		s.mu.Unlock()
		reply(map[string]any{"pin": name, "level": v})
	case r.Method == http.MethodPut && !edge:
		if name != Relay && name != Heartbeat {
			http.Error(w, `{"error":"input pins are driven by faults"}`, http.StatusConflict)
			return
		}
		var body struct {
			Level *bool `json:"level"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Level == nil {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.puts++
		s.mu.Unlock()
		s.set(name, *body.Level)
		reply(map[string]any{"pin": name, "level": *body.Level})
	case r.Method == http.MethodGet && edge:
		s.mu.Lock()
		s.edges++
		s.mu.Unlock()
		from, err1 := strconv.ParseBool(r.URL.Query().Get("level"))
		ms, err2 := strconv.Atoi(r.URL.Query().Get("timeout_ms"))
		if err1 != nil || err2 != nil || ms < 0 {
			http.Error(w, `{"error":"bad query"}`, http.StatusBadRequest)
			return
		}
		timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer timer.Stop()
		for {
			s.mu.Lock()
			v, ch := s.levels[name], s.changed
			s.mu.Unlock()
			if v != from {
				reply(map[string]any{"pin": name, "level": v, "changed": true})
				return
			}
			select {
			case <-ch:
			case <-timer.C:
				reply(map[string]any{"pin": name, "level": v, "changed": false})
				return
			case <-r.Context().Done():
				return
			}
		}
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// serve starts h on a unix socket and returns the socket path.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "simgpio") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "control.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return sock
}

func newClient(t *testing.T, sock string) *Client {
	t.Helper()
	opts := DefaultOpts()
	opts.Socket, opts.Timeout, opts.MaxPoll = sock, time.Second, 200*time.Millisecond
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	t.Cleanup(cancel)
	return ctx
}

func TestClientLevelAndSet(t *testing.T) {
	sim := newFakeSim()
	c := newClient(t, serve(t, sim))
	ctx := testCtx(t)
	tests := []struct {
		name    string
		pin     string
		set     *bool
		want    pgpio.Level
		wantErr error
	}{
		{"estop released", EStop, nil, pgpio.High, nil},
		{"relay off", RelayFB, nil, pgpio.Low, nil},
		{"unknown pin", "nope", nil, pgpio.Low, device.ErrRejected},
		{"energise relay", Relay, ptr(true), pgpio.High, nil},
		{"relay_fb follows", RelayFB, nil, pgpio.High, nil},
		{"input refuses writes", EStop, ptr(false), pgpio.High, device.ErrRejected},
		{"heartbeat high", Heartbeat, ptr(true), pgpio.High, nil},
		{"heartbeat low", Heartbeat, ptr(false), pgpio.Low, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.set != nil {
				err := c.SetLevel(ctx, tt.pin, pgpio.Level(*tt.set))
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("SetLevel: %v; want %v", err, tt.wantErr)
				}
				if err != nil {
					return
				}
			}
			got, err := c.Level(ctx, tt.pin)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Level: %v; want %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Fatalf("Level = %v; want %v", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestPinWaitForEdge(t *testing.T) {
	sim := newFakeSim()
	c := newClient(t, serve(t, sim))
	p := c.Pin(EStop)
	if err := p.In(pgpio.PullNoChange, pgpio.BothEdges); err != nil {
		t.Fatal(err)
	}
	if p.WaitForEdge(10 * time.Millisecond) {
		t.Fatal("edge reported with no change")
	}
	if p.WaitForEdge(0) {
		t.Fatal("edge reported with no change (timeout 0)")
	}
	done := make(chan bool, 1)
	go func() { done <- p.WaitForEdge(hang) }()
	time.Sleep(5 * time.Millisecond) // let the long poll start (either order works)
	sim.set(EStop, false)
	if !<-done {
		t.Fatal("no edge after the e-stop was pressed")
	}
	if p.Read() != pgpio.Low {
		t.Fatal("Read after the edge is not Low")
	}
	// A change since the last call is reported at once, even with timeout 0.
	sim.set(EStop, true)
	if !p.WaitForEdge(0) {
		t.Fatal("edge since the last call not reported")
	}
	// A negative timeout waits across several MaxPoll chunks.
	go func() { done <- p.WaitForEdge(-1) }()
	time.Sleep(250 * time.Millisecond)
	sim.set(EStop, false)
	select {
	case got := <-done:
		if !got {
			t.Fatal("WaitForEdge(-1) returned false")
		}
	case <-time.After(hang):
		t.Fatal("WaitForEdge(-1) hung")
	}
}

func TestPinErrors(t *testing.T) {
	t.Run("simulator down", func(t *testing.T) {
		dir, _ := os.MkdirTemp("", "simgpio")
		defer os.RemoveAll(dir)
		c := newClient(t, filepath.Join(dir, "none.sock"))
		p := c.Pin(EStop)
		if p.Read() != pgpio.Low {
			t.Fatal("Read with the simulator down is not the fail level (Low)")
		}
		if p.Err() == nil {
			t.Fatal("Err is nil after a failed Read")
		}
		start := time.Now()
		if p.WaitForEdge(30 * time.Millisecond) {
			t.Fatal("edge reported with the simulator down")
		}
		if time.Since(start) < 30*time.Millisecond {
			t.Fatal("WaitForEdge returned before its timeout after an error: callers would spin")
		}
		if _, err := p.ReadContext(testCtx(t)); err == nil {
			t.Fatal("ReadContext succeeded with the simulator down")
		}
	})
	t.Run("malformed reply", func(t *testing.T) {
		sim := newFakeSim()
		sim.badJSON = true
		c := newClient(t, serve(t, sim))
		if _, err := c.Level(testCtx(t), EStop); !errors.Is(err, device.ErrFrame) {
			t.Fatalf("Level: %v; want ErrFrame", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		block := make(chan struct{})
		defer close(block)
		sock := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}))
		opts := DefaultOpts()
		opts.Socket, opts.Timeout = sock, 20*time.Millisecond
		c, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Level(context.Background(), EStop); !errors.Is(err, device.ErrTimeout) {
			t.Fatalf("Level: %v; want ErrTimeout", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		sim := newFakeSim()
		c := newClient(t, serve(t, sim))
		p := c.Pin(EStop)
		if err := p.In(pgpio.PullNoChange, pgpio.BothEdges); err != nil {
			t.Fatal(err)
		}
		done := make(chan bool, 1)
		go func() { done <- p.WaitForEdge(-1) }()
		time.Sleep(10 * time.Millisecond)
		c.Close()
		select {
		case got := <-done:
			if got {
				t.Fatal("edge reported on Close")
			}
		case <-time.After(hang):
			t.Fatal("Close did not end WaitForEdge(-1)")
		}
		if _, err := c.Level(context.Background(), EStop); !errors.Is(err, device.ErrClosed) {
			t.Fatalf("Level after Close: %v; want ErrClosed", err)
		}
	})
	t.Run("unsupported", func(t *testing.T) {
		c := newClient(t, "/nonexistent.sock")
		p := c.Pin(Relay)
		if err := p.PWM(pgpio.DutyHalf, 0); err == nil {
			t.Fatal("PWM succeeded")
		}
		if err := p.SetFunc(pgpio.IN); err == nil {
			t.Fatal("SetFunc succeeded")
		}
		if err := p.In(pgpio.PullUp, pgpio.NoEdge); err == nil {
			t.Fatal("In(PullUp) succeeded")
		}
	})
	t.Run("bad options", func(t *testing.T) {
		if _, err := New(Opts{}); !errors.Is(err, device.ErrOutOfRange) {
			t.Fatalf("New(Opts{}): %v; want ErrOutOfRange", err)
		}
	})
}

// TestDriversOverSim runs drivers/gpio over the virtual pins: the e-stop input
// with edge events, and the relay with read-back from relay_fb.
func TestDriversOverSim(t *testing.T) {
	sim := newFakeSim()
	c := newClient(t, serve(t, sim))
	ctx := testCtx(t)

	iopts := drvgpio.DefaultInputOpts(EStop)
	iopts.Debounce, iopts.Wait = 5*time.Millisecond, 50*time.Millisecond
	estop, err := drvgpio.NewInput(c.Pin(EStop), iopts)
	if err != nil {
		t.Fatal(err)
	}
	defer estop.Close()
	if err := estop.Start(ctx); err != nil {
		t.Fatal(err)
	}
	events, cancel := estop.Subscribe()
	defer cancel()
	if pressed, err := estop.Read(ctx); err != nil || pressed {
		t.Fatalf("estop Read = %t, %v; want released", pressed, err)
	}
	sim.set(EStop, false) // the "estop" fault
	select {
	case ev := <-events:
		if !ev.Active || ev.Err != nil {
			t.Fatalf("event %+v; want pressed", ev)
		}
	case <-time.After(hang):
		t.Fatal("no e-stop event")
	}

	oopts := drvgpio.DefaultOutputOpts(Relay)
	oopts.Settle = time.Millisecond
	relay, err := drvgpio.NewOutput(c.Pin(Relay), c.Pin(RelayFB), oopts)
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Set(ctx, true); err != nil {
		t.Fatalf("relay Set(true): %v", err)
	}
	if on, err := relay.State(ctx); err != nil || !on {
		t.Fatalf("relay State = %t, %v; want on", on, err)
	}
	if err := relay.Halt(ctx); err != nil {
		t.Fatalf("relay Halt: %v", err)
	}
	sim.mu.Lock()
	sim.stuck = ptr(false)
	sim.mu.Unlock()
	if err := relay.Set(ctx, true); !errors.Is(err, device.ErrReadback) {
		t.Fatalf("relay Set(true) with a dead contact: %v; want ErrReadback", err)
	}
}

// TestWatcherOneRequestPerWait: an Input's watcher over a simulated pin takes
// the level its long poll ended on (drivers/gpio.LevelWaiter): one request per
// wait, no read after it, the same sampling rate; and a change is still seen.
func TestWatcherOneRequestPerWait(t *testing.T) {
	var _ drvgpio.LevelWaiter = (*Pin)(nil)
	sim := newFakeSim()
	c := newClient(t, serve(t, sim))
	ctx := testCtx(t)
	iopts := drvgpio.DefaultInputOpts(Leak)
	iopts.Debounce, iopts.Wait = 5*time.Millisecond, 20*time.Millisecond
	leak, err := drvgpio.NewInput(c.Pin(Leak), iopts)
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	if err := leak.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	sim.mu.Lock()
	reads, edges := sim.reads, sim.edges
	sim.mu.Unlock()
	// In (1) and Start (1) read; the watcher only long-polls (~15 in 300 ms).
	if reads > 2 || edges < 5 {
		t.Fatalf("after 300 ms: %d reads and %d long polls; want at most 2 reads (In, Start) and the watcher's waits as long polls", reads, edges)
	}
	events, cancel := leak.Subscribe()
	defer cancel()
	sim.set(Leak, false) // the gas-leak fault
	select {
	case ev := <-events:
		if !ev.Active || ev.Err != nil {
			t.Fatalf("event %+v; want leak detected", ev)
		}
	case <-time.After(hang):
		t.Fatal("no leak event")
	}
	if l, err := leak.Read(ctx); err != nil || !l {
		t.Fatalf("Read = %t, %v; want detected", l, err)
	}
}

// TestWatcherLevelWaitErrors: while the simulator answers nonsense the
// watcher reports the failure (and does not spin), and recovers after.
func TestWatcherLevelWaitErrors(t *testing.T) {
	sim := newFakeSim()
	c := newClient(t, serve(t, sim))
	ctx := testCtx(t)
	iopts := drvgpio.DefaultInputOpts(EStop)
	iopts.Debounce, iopts.Wait = 0, 20*time.Millisecond
	estop, err := drvgpio.NewInput(c.Pin(EStop), iopts)
	if err != nil {
		t.Fatal(err)
	}
	defer estop.Close()
	if err := estop.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sim.mu.Lock()
	sim.badJSON = true
	before := sim.edges
	sim.mu.Unlock()
	deadline := time.Now().Add(hang)
	for {
		if _, err := estop.Read(ctx); errors.Is(err, device.ErrFrame) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not report the bad replies")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	sim.mu.Lock()
	spun := sim.edges - before
	sim.badJSON = false
	sim.mu.Unlock()
	if spun > 20 { // 200 ms at one request per 20 ms wait is ~10
		t.Fatalf("%d requests in ~200 ms after failures: the watcher spins", spun)
	}
	for {
		if pressed, err := estop.Read(ctx); err == nil && !pressed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not recover")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func FuzzParseLevel(f *testing.F) {
	f.Add([]byte(`{"pin":"estop","level":true}`), false)
	f.Add([]byte(`{"pin":"estop","level":false,"changed":true}`), true)
	f.Add([]byte(`{"pin":"leak","level":1}`), false)
	f.Add([]byte(`{"pin":"estop"}`), true)
	f.Add([]byte(`null`), false)
	f.Add([]byte(`{"pin":`), false)
	f.Fuzz(func(t *testing.T, body []byte, edge bool) {
		l, changed, err := parseLevel(body, "estop", edge)
		if err != nil {
			if !errors.Is(err, device.ErrFrame) {
				t.Fatalf("error %v does not wrap ErrFrame", err)
			}
			return
		}
		var r struct {
			Pin     string `json:"pin"`
			Level   bool   `json:"level"`
			Changed bool   `json:"changed"`
		}
		if json.Unmarshal(body, &r) != nil || r.Pin != "estop" || bool(l) != r.Level || (edge && changed != r.Changed) {
			t.Fatalf("parseLevel(%q) = %v, %t; disagrees with encoding/json", body, l, changed)
		}
	})
}

// TestClientReusesConnections: sequential calls share one connection to the
// socket, and a reply that closes its connection is not reused.
func TestClientReusesConnections(t *testing.T) {
	for _, tt := range []struct {
		name      string
		close     bool
		wantConns func(n int) bool
	}{
		{"keep-alive", false, func(n int) bool { return n == 1 }},
		{"connection close", true, func(n int) bool { return n == 20 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sim := newFakeSim()
			var h http.Handler = sim
			if tt.close {
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Connection", "close")
					sim.ServeHTTP(w, r)
				})
			}
			dir, err := os.MkdirTemp("", "simgpio")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			sock := filepath.Join(dir, "control.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			conns := 0
			srv := httptest.NewUnstartedServer(h)
			srv.Listener = l
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					mu.Lock()
					conns++
					mu.Unlock()
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			c := newClient(t, sock)
			for range 20 {
				if _, err := c.Level(testCtx(t), EStop); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !tt.wantConns(conns) {
				t.Fatalf("%d connections for 20 sequential calls", conns)
			}
		})
	}
}

// TestHeartbeatPinIsAnOutput: the heartbeat line is an output like relay,
// usable wherever a periph gpio.PinOut is wanted.
func TestHeartbeatPinIsAnOutput(t *testing.T) {
	sim := newFakeSim()
	c := newClient(t, serve(t, sim))
	var out pgpio.PinOut = c.Pin(Heartbeat)
	if f := c.Pin(Heartbeat).Func(); f != pgpio.OUT {
		t.Fatalf("Func = %s; want OUT", f)
	}
	for _, l := range []pgpio.Level{pgpio.High, pgpio.Low, pgpio.High} {
		if err := out.Out(l); err != nil {
			t.Fatal(err)
		}
		sim.mu.Lock()
		got := sim.levels[Heartbeat]
		sim.mu.Unlock()
		if got != bool(l) {
			t.Fatalf("simulator heartbeat %t after Out(%v)", got, l)
		}
	}
	sim.mu.Lock()
	puts := sim.puts
	sim.mu.Unlock()
	if puts != 3 {
		t.Fatalf("%d PUTs; want 3", puts)
	}
}
