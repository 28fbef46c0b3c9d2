package simgpio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/pin"

	"hcp-edge/device"
)

// Pin names of the rig's virtual GPIO header.
const (
	EStop   = "estop"    // input, Low = e-stop pressed
	Leak    = "leak"     // input, Low = gas leak detected
	Relay   = "relay"    // output, High = interlock relay energised
	RelayFB = "relay_fb" // input, read-back contact of the relay, High = energised
	// Heartbeat is an output, the relay watchdog's pulse input: with the
	// watchdog fitted (rig-sim --relay-watchdog T) the relay's coil stays
	// energised only while this line changes level at least every T
	// (drivers/gpio.Heartbeat toggles it).
	Heartbeat = "heartbeat"
)

// maxBody bounds how much of a reply is read.
const maxBody = 64 << 10

// Opts configures a Client.
type Opts struct {
	// Socket is the path of the simulator's control socket.
	Socket string
	// Timeout bounds every call (a long poll gets its own wait on top).
	Timeout time.Duration
	// MaxPoll is the longest single long poll; WaitForEdge(-1) polls in
	// chunks of it.
	MaxPoll time.Duration
	// FailLevel is what Pin.Read returns when the simulator cannot be read
	// (gpio.PinIn.Read has no error). Low, the default, reads as "pressed" and
	// "leak" for the fail-safe inputs and "de-energised" for relay_fb.
	FailLevel pgpio.Level
}

// DefaultSocket returns the simulator's default control socket:
// $HCP_RIG_SIM_DIR/control.sock, or /tmp/hcp-rig-sim/control.sock.
func DefaultSocket() string {
	dir := os.Getenv("HCP_RIG_SIM_DIR")
	if dir == "" {
		dir = "/tmp/hcp-rig-sim"
	}
	return filepath.Join(dir, "control.sock")
}

// DefaultOpts returns the options for the simulator's default socket.
func DefaultOpts() Opts {
	return Opts{Socket: DefaultSocket(), Timeout: 2 * time.Second, MaxPoll: 10 * time.Second, FailLevel: pgpio.Low}
}

// Client talks to the simulator's control API over its unix socket. It is
// safe for concurrent use. Close ends calls in progress (long polls included).
type Client struct {
	opts   Opts
	pool   *conns          // connections to opts.Socket (conn.go)
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
}

// New returns a Client for opts.Socket. It does not connect until the first call.
func New(opts Opts) (*Client, error) {
	if opts.Socket == "" || opts.Timeout <= 0 || opts.MaxPoll <= 0 {
		return nil, fmt.Errorf("simgpio: Socket, Timeout > 0 and MaxPoll > 0 are required: %w", device.ErrOutOfRange)
	}
	c := &Client{opts: opts, pool: &conns{sock: opts.Socket}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Close ends calls in progress and refuses later ones with device.ErrClosed.
func (c *Client) Close() error {
	c.cancel()
	c.pool.close()
	return nil
}

// levelReply is the body of GET /gpio/{pin} and of the edge long poll.
type levelReply struct {
	Pin     string `json:"pin"`
	Level   *bool  `json:"level"`
	Changed *bool  `json:"changed"`
}

// parseLevel decodes a level reply for pin; edge requires the "changed" field.
func parseLevel(body []byte, pinName string, edge bool) (level pgpio.Level, changed bool, err error) {
	var r levelReply
	if err := json.Unmarshal(body, &r); err != nil {
		return false, false, fmt.Errorf("decode %q: %w: %w", truncate(body), device.ErrFrame, err)
	}
	if r.Pin != pinName {
		return false, false, fmt.Errorf("reply for pin %q, want %q: %w", r.Pin, pinName, device.ErrFrame)
	}
	if r.Level == nil {
		return false, false, fmt.Errorf("reply %q has no level: %w", truncate(body), device.ErrFrame)
	}
	if edge {
		if r.Changed == nil {
			return false, false, fmt.Errorf("edge reply %q has no changed: %w", truncate(body), device.ErrFrame)
		}
		changed = *r.Changed
	}
	return pgpio.Level(*r.Level), changed, nil
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// do runs one request with the per-call timeout plus extra, and returns the
// body of a 2xx reply.
func (c *Client) do(ctx context.Context, method, path string, body []byte, extra time.Duration) ([]byte, error) {
	if c.ctx.Err() != nil {
		return nil, device.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout+extra)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel) // Close ends the call
	defer stop()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://rig-sim"+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", device.ErrOutOfRange, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	code, status, b, err := c.pool.roundTrip(req)
	if err != nil {
		return nil, c.classify(ctx, err)
	}
	if code/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s %q: %w", method, path, status, bytes.TrimSpace(truncate(b)), device.ErrRejected)
	}
	return b, nil
}

// classify wraps a transport error with the sentinel that explains it.
func (c *Client) classify(ctx context.Context, err error) error {
	switch {
	case c.ctx.Err() != nil:
		return fmt.Errorf("%w: %w", device.ErrClosed, err)
	case ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: %w", device.ErrTimeout, err)
	}
	return err
}

func gpioPath(name string) string { return "/gpio/" + url.PathEscape(name) }

// Level reads the level of pin name (GET /gpio/{pin}).
func (c *Client) Level(ctx context.Context, name string) (pgpio.Level, error) {
	b, err := c.do(ctx, http.MethodGet, gpioPath(name), nil, 0)
	if err != nil {
		return pgpio.Low, fmt.Errorf("simgpio %s: read: %w", name, err)
	}
	l, _, err := parseLevel(b, name, false)
	if err != nil {
		return pgpio.Low, fmt.Errorf("simgpio %s: read: %w", name, err)
	}
	return l, nil
}

// SetLevel drives output pin name (PUT /gpio/{pin}). The simulator refuses
// inputs (device.ErrRejected).
func (c *Client) SetLevel(ctx context.Context, name string, l pgpio.Level) error {
	body, _ := json.Marshal(struct {
		Level bool `json:"level"`
	}{bool(l)})
	if _, err := c.do(ctx, http.MethodPut, gpioPath(name), body, 0); err != nil {
		return fmt.Errorf("simgpio %s: write %v: %w", name, l, err)
	}
	return nil
}

// WaitChange long-polls pin name (GET /gpio/{pin}/edge): it returns as soon as
// the level differs from from, or after timeout (rounded up to whole
// milliseconds; 0 checks once), with the level and whether it changed.
func (c *Client) WaitChange(ctx context.Context, name string, from pgpio.Level, timeout time.Duration) (pgpio.Level, bool, error) {
	if timeout < 0 {
		return from, false, fmt.Errorf("simgpio %s: negative timeout %v: %w", name, timeout, device.ErrOutOfRange)
	}
	ms := (timeout + time.Millisecond - 1) / time.Millisecond
	q := url.Values{"level": {strconv.FormatBool(bool(from))}, "timeout_ms": {strconv.FormatInt(int64(ms), 10)}}
	b, err := c.do(ctx, http.MethodGet, gpioPath(name)+"/edge?"+q.Encode(), nil, timeout)
	if err != nil {
		return from, false, fmt.Errorf("simgpio %s: wait for edge: %w", name, err)
	}
	l, changed, err := parseLevel(b, name, true)
	if err != nil {
		return from, false, fmt.Errorf("simgpio %s: wait for edge: %w", name, err)
	}
	return l, changed || l != from, nil
}

// Pin returns the virtual pin name as a periph gpio.PinIO. No request is made.
func (c *Client) Pin(name string) *Pin { return &Pin{c: c, name: name} }

// Pin is one virtual GPIO line of the simulator, as a periph gpio.PinIO (use
// it as gpio.PinIn for estop, leak and relay_fb, as gpio.PinIO or gpio.PinOut
// for relay and heartbeat). It
// also implements ReadContext and OutContext, which drivers/gpio prefers
// because they report errors and honour deadlines. Pull resistors, PWM and
// pin functions are not supported and fail.
type Pin struct {
	c    *Client
	name string

	mu      sync.Mutex
	known   bool        // last is valid
	last    pgpio.Level // level last reported by WaitForEdge (or In)
	lastErr error
}

// String implements conn.Resource.
func (p *Pin) String() string { return "simgpio:" + p.name }

// Halt implements conn.Resource; a virtual pin has nothing to stop.
func (p *Pin) Halt() error { return nil }

// Name implements pin.Pin.
func (p *Pin) Name() string { return p.name }

// Number implements pin.Pin: virtual pins have no number (-1).
func (p *Pin) Number() int { return -1 }

// Function implements pin.Pin.
func (p *Pin) Function() string { return string(p.Func()) }

// Func implements pin.PinFunc.
func (p *Pin) Func() pin.Func {
	if p.name == Relay || p.name == Heartbeat {
		return pgpio.OUT
	}
	return pgpio.IN
}

// SupportedFuncs implements pin.PinFunc.
func (p *Pin) SupportedFuncs() []pin.Func { return []pin.Func{p.Func()} }

// SetFunc implements pin.PinFunc; it is not supported.
func (p *Pin) SetFunc(f pin.Func) error {
	return fmt.Errorf("simgpio %s: SetFunc(%s) not supported", p.name, f)
}

// Err returns the error of the last failed Read, Out or WaitForEdge (nil after
// a success), since gpio.PinIn.Read cannot return one.
func (p *Pin) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

func (p *Pin) setErr(err error) {
	p.mu.Lock()
	p.lastErr = err
	p.mu.Unlock()
}

// In implements gpio.PinIn: it checks that the pin exists and records its level
// as the reference for WaitForEdge. Only PullNoChange and Float are accepted
// (the simulator has no pull resistors); any edge setting is (edges come from
// the long poll).
func (p *Pin) In(pull pgpio.Pull, edge pgpio.Edge) error {
	if pull != pgpio.PullNoChange && pull != pgpio.Float {
		return fmt.Errorf("simgpio %s: pull %s not supported", p.name, pull)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.c.opts.Timeout)
	defer cancel()
	l, err := p.c.Level(ctx, p.name)
	p.setErr(err)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.known, p.last = true, l
	p.mu.Unlock()
	return nil
}

// ReadContext reads the level, reporting failures.
func (p *Pin) ReadContext(ctx context.Context) (pgpio.Level, error) {
	l, err := p.c.Level(ctx, p.name)
	p.setErr(err)
	return l, err
}

// Read implements gpio.PinIn. When the simulator cannot be read it returns
// Opts.FailLevel; Err tells why.
func (p *Pin) Read() pgpio.Level {
	l, err := p.ReadContext(context.Background())
	if err != nil {
		return p.c.opts.FailLevel
	}
	return l
}

// WaitForEdge implements gpio.PinIn with the simulator's long poll. It returns
// true as soon as the level differs from the one it last reported (so a change
// since the previous call returns at once), false on timeout or error (Err
// tells). A negative timeout waits until a change or Close, in long polls of
// Opts.MaxPoll. After an error it waits out the timeout, so a caller looping on
// it does not spin while the simulator is down. Two edges that restore the
// level between polls are not seen: the long poll compares levels.
func (p *Pin) WaitForEdge(timeout time.Duration) bool {
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		p.mu.Lock()
		known, from := p.known, p.last
		p.mu.Unlock()
		if !known {
			l, err := p.ReadContext(context.Background())
			if err == nil {
				p.mu.Lock()
				p.known, p.last = true, l
				p.mu.Unlock()
				continue
			}
			if !p.pause(deadline) {
				return false
			}
			continue
		}
		wait := p.c.opts.MaxPoll
		if timeout >= 0 {
			wait = min(wait, max(time.Until(deadline), 0))
		}
		l, changed, err := p.c.WaitChange(context.Background(), p.name, from, wait)
		p.setErr(err)
		switch {
		case err != nil:
			if errors.Is(err, device.ErrClosed) || !p.pause(deadline) {
				return false
			}
		case changed:
			p.mu.Lock()
			p.last = l
			p.mu.Unlock()
			return true
		case timeout >= 0 && !time.Now().Before(deadline):
			return false
		}
	}
}

// WaitForLevel implements drivers/gpio.LevelWaiter with one long poll: it
// returns as soon as the level differs from the one last reported, or after
// timeout, with the level the simulator answered as the poll ended (changed
// or not), so the watcher needs no second request to read it. Before the
// first reference level is known it reads the level instead. It does not
// pause after an error (the caller does).
func (p *Pin) WaitForLevel(ctx context.Context, timeout time.Duration) (pgpio.Level, error) {
	p.mu.Lock()
	known, from := p.known, p.last
	p.mu.Unlock()
	if !known {
		l, err := p.ReadContext(ctx)
		if err != nil {
			return p.c.opts.FailLevel, err
		}
		p.mu.Lock()
		p.known, p.last = true, l
		p.mu.Unlock()
		return l, nil
	}
	l, _, err := p.c.WaitChange(ctx, p.name, from, max(timeout, 0))
	p.setErr(err)
	if err != nil {
		return p.c.opts.FailLevel, err
	}
	p.mu.Lock()
	p.last = l
	p.mu.Unlock()
	return l, nil
}

// pause sleeps after an error: until deadline (then it returns false), or a
// short backoff when there is none; Close cuts it short (false).
func (p *Pin) pause(deadline time.Time) bool {
	d := 100 * time.Millisecond
	if !deadline.IsZero() {
		d = time.Until(deadline)
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.c.ctx.Done():
			return false
		}
	}
	return deadline.IsZero() && p.c.ctx.Err() == nil
}

// Pull implements gpio.PinIn: there are no pull resistors.
func (p *Pin) Pull() pgpio.Pull { return pgpio.PullNoChange }

// DefaultPull implements gpio.PinIn.
func (p *Pin) DefaultPull() pgpio.Pull { return pgpio.PullNoChange }

// OutContext drives the pin, reporting failures (the simulator refuses inputs).
func (p *Pin) OutContext(ctx context.Context, l pgpio.Level) error {
	err := p.c.SetLevel(ctx, p.name, l)
	p.setErr(err)
	return err
}

// Out implements gpio.PinOut with the per-call timeout.
func (p *Pin) Out(l pgpio.Level) error { return p.OutContext(context.Background(), l) }

// PWM implements gpio.PinOut; it is not supported.
func (p *Pin) PWM(duty pgpio.Duty, f physic.Frequency) error {
	return fmt.Errorf("simgpio %s: PWM not supported", p.name)
}

var (
	_ pgpio.PinIO = (*Pin)(nil)
	_ pgpio.PinIn = (*Pin)(nil)
	_ pin.PinFunc = (*Pin)(nil)
)
