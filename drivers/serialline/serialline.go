package serialline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.bug.st/serial"

	"hcp-edge/device"
	"hcp-edge/drivers/lane"
)

// Opts configures a Line.
type Opts struct {
	// Name names the line in errors; the path when empty.
	Name string
	// Mode is the port's baud rate and framing (see ParseMode).
	Mode serial.Mode
	// Timeout bounds a transaction whose context has no deadline.
	Timeout time.Duration
	// MaxFrame is the longest frame ReadUntil accepts, terminator excluded.
	MaxFrame int
	// Poll is the longest single wait of settle, which judges a line quiet
	// after 5 Poll intervals without a byte. (ReadUntil waits in one read,
	// cut short by a cancelled context.)
	Poll time.Duration
	// Settle makes the transaction after one whose reply did not come in
	// time first discard a late reply (Tx.settle), at the cost of up to a
	// quarter of its time. For protocols whose replies do not say which
	// command they answer (an Alicat data frame answers a poll, a setpoint
	// and a hold alike); a protocol that checks its own sequence (the TPG's
	// ACK then ENQ) is better off without it.
	Settle bool
}

// DefaultOpts returns 9600 8N1, a 1 s transaction timeout, 1024-byte frames
// and 20 ms polls.
func DefaultOpts() Opts {
	return Opts{
		Mode:     serial.Mode{BaudRate: 9600, DataBits: 8, Parity: serial.NoParity, StopBits: serial.OneStopBit},
		Timeout:  time.Second,
		MaxFrame: 1024,
		Poll:     20 * time.Millisecond,
	}
}

// ParseMode parses a mode written as in the rig's documentation, e.g.
// "19200 8N1" or "19200 8E1" (data bits 5..8, parity N/E/O/M/S, stop bits 1
// or 2).
func ParseMode(s string) (serial.Mode, error) {
	f := strings.Fields(s)
	if len(f) != 2 || len(f[1]) != 3 {
		return serial.Mode{}, fmt.Errorf("serialline: mode %q: want e.g. \"19200 8N1\"", s)
	}
	baud, err := strconv.Atoi(f[0])
	if err != nil || baud <= 0 {
		return serial.Mode{}, fmt.Errorf("serialline: mode %q: bad baud rate", s)
	}
	m := serial.Mode{BaudRate: baud}
	switch c := f[1][0]; {
	case c >= '5' && c <= '8':
		m.DataBits = int(c - '0')
	default:
		return serial.Mode{}, fmt.Errorf("serialline: mode %q: bad data bits", s)
	}
	switch f[1][1] {
	case 'N', 'n':
		m.Parity = serial.NoParity
	case 'E', 'e':
		m.Parity = serial.EvenParity
	case 'O', 'o':
		m.Parity = serial.OddParity
	case 'M', 'm':
		m.Parity = serial.MarkParity
	case 'S', 's':
		m.Parity = serial.SpaceParity
	default:
		return serial.Mode{}, fmt.Errorf("serialline: mode %q: bad parity", s)
	}
	switch f[1][2] {
	case '1':
		m.StopBits = serial.OneStopBit
	case '2':
		m.StopBits = serial.TwoStopBits
	default:
		return serial.Mode{}, fmt.Errorf("serialline: mode %q: bad stop bits", s)
	}
	return m, nil
}

// Line is one serial port used by one or more drivers, one transaction at a
// time, handed on in order of arrival; a transaction whose context is marked
// device.WithUrgent (a halt) goes before every routine one waiting (package
// lane). It is safe for concurrent use.
type Line struct {
	path string
	opts Opts

	lane lane.Lane // one transaction at a time
	// late (under lane): the last transaction ended before its reply came
	// (timeout or cancellation), so the next one settles the line first.
	late          bool
	lateDiscarded int // bytes settle discarded (tests)

	mu     sync.Mutex // guards port and closed
	port   *Port
	closed bool
}

// Open opens the port at path with opts. Zero fields of opts take their
// DefaultOpts value.
func Open(path string, opts Opts) (*Line, error) {
	d := DefaultOpts()
	if opts.Mode.BaudRate == 0 {
		opts.Mode = d.Mode
	}
	if opts.Mode.DataBits == 0 {
		opts.Mode.DataBits = 8
	}
	if opts.Timeout <= 0 {
		opts.Timeout = d.Timeout
	}
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = d.MaxFrame
	}
	if opts.Poll <= 0 {
		opts.Poll = d.Poll
	}
	if opts.Name == "" {
		opts.Name = path
	}
	l := &Line{path: path, opts: opts}
	p, err := l.open()
	if err != nil {
		return nil, err
	}
	l.port = p
	return l, nil
}

func (l *Line) open() (*Port, error) {
	mode := l.opts.Mode
	p, err := OpenPort(l.path, &mode)
	if err != nil {
		return nil, fmt.Errorf("serialline %s: open %s: %w", l.opts.Name, l.path, err)
	}
	return p, nil
}

// Waiting reports how many transactions wait for the line, urgent and
// routine (tests).
func (l *Line) Waiting() (urgent, routine int) { return l.lane.Waiting() }

// String names the line.
func (l *Line) String() string { return l.opts.Name }

// Path is the device path the line opens.
func (l *Line) Path() string { return l.path }

// Close closes the port; a transaction in progress fails with an error
// wrapping device.ErrClosed, and so does every later Do.
func (l *Line) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	p := l.port
	l.port = nil
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := p.close(); err != nil {
		return fmt.Errorf("serialline %s: close: %w", l.opts.Name, err)
	}
	return nil
}

// Do runs fn as one transaction: it holds the line for fn's whole duration,
// (re)opens the port when needed and discards any input received before fn
// starts. When ctx has no deadline, Opts.Timeout bounds the transaction, the
// wait for the line included. If fn's I/O fails (other than by timeout), the
// port is closed and reopened by the next Do.
//
// Transactions waiting for the line get it in their order of arrival, except
// that one whose ctx is marked device.WithUrgent (the interlock's halts) goes
// before every routine one waiting; the transaction on the line finishes
// first. A transaction whose ctx ends while it waits gives up its turn at
// once, with an error wrapping device.ErrTimeout at the deadline.
func (l *Line) Do(ctx context.Context, fn func(tx *Tx) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.opts.Timeout)
		defer cancel()
	}
	if err := l.lane.LockContext(ctx, device.Urgent(ctx)); err != nil {
		return l.ctxErr(ctx, "wait for line")
	}
	defer l.lane.Unlock()
	if err := ctx.Err(); err != nil { // it ended as the line was handed over
		return l.ctxErr(ctx, "wait for line")
	}

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("serialline %s: %w", l.opts.Name, device.ErrClosed)
	}
	p := l.port
	l.mu.Unlock()
	if p == nil {
		np, err := l.open()
		if err != nil {
			return err
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = np.close()
			return fmt.Errorf("serialline %s: %w", l.opts.Name, device.ErrClosed)
		}
		l.port = np
		l.mu.Unlock()
		p = np
	}

	tx := &Tx{l: l, port: p}
	if err := p.resetInput(); err != nil {
		l.drop(p)
		return l.ioErr("reset input", err)
	}
	if l.late && l.opts.Settle {
		if err := tx.settle(ctx); err != nil {
			l.drop(p)
			return err
		}
	}
	err := fn(tx)
	if tx.broken {
		l.drop(p)
	}
	return err
}

// drop closes p after an I/O error so the next Do reopens the path.
func (l *Line) drop(p *Port) {
	l.mu.Lock()
	if l.port == p {
		l.port = nil
	}
	l.mu.Unlock()
	_ = p.close()
}

func (l *Line) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *Line) ioErr(op string, err error) error {
	if l.isClosed() {
		return fmt.Errorf("serialline %s: %s: %w", l.opts.Name, op, device.ErrClosed)
	}
	return fmt.Errorf("serialline %s: %s: %w", l.opts.Name, op, err)
}

func (l *Line) ctxErr(ctx context.Context, op string) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("serialline %s: %s: %w (%w)", l.opts.Name, op, device.ErrTimeout, err)
	}
	return fmt.Errorf("serialline %s: %s: %w", l.opts.Name, op, err)
}

// Tx is the line during one transaction; it is valid only inside Do's fn and
// must not be used from another goroutine.
type Tx struct {
	l      *Line
	port   *Port
	buf    []byte // received bytes not yet returned
	chunk  [512]byte
	broken bool
}

// Write sends p. It fails with ctx's error if ctx is already done, and with
// an error wrapping device.ErrTimeout if the port does not take p by ctx's
// deadline.
func (tx *Tx) Write(ctx context.Context, p []byte) error {
	if ctx.Err() != nil {
		return tx.l.ctxErr(ctx, "write")
	}
	deadline, _ := ctx.Deadline()
	for len(p) > 0 {
		n, err := tx.port.write(p, deadline)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			tx.broken = true
			return fmt.Errorf("serialline %s: write: %w (%w)", tx.l.opts.Name, device.ErrTimeout, err)
		}
		if err != nil {
			tx.broken = true
			return tx.l.ioErr("write", err)
		}
		if n == 0 {
			tx.broken = true
			return tx.l.ioErr("write", errors.New("port accepted no bytes"))
		}
		p = p[n:]
	}
	return nil
}

// ReadUntil returns the next frame ending with term, without term. It waits
// until ctx's deadline (Opts.Timeout when it has none): nothing, or only part
// of a frame, by then is an error wrapping device.ErrTimeout; more than
// Opts.MaxFrame bytes without term is an error wrapping device.ErrFrame.
// Bytes after term stay buffered for the next ReadUntil in this transaction.
func (tx *Tx) ReadUntil(ctx context.Context, term []byte) ([]byte, error) {
	if len(term) == 0 {
		return nil, errors.New("serialline: ReadUntil with an empty terminator")
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(tx.l.opts.Timeout)
	}
	max := tx.l.opts.MaxFrame
	// A cancelled ctx cuts the read short at once: its deadline moves to the past.
	stop := context.AfterFunc(ctx, tx.port.interrupt)
	defer stop()
	for {
		if i := bytes.Index(tx.buf, term); i >= 0 {
			if i > max {
				return nil, tx.frameTooLong(max)
			}
			frame := bytes.Clone(tx.buf[:i])
			tx.buf = tx.buf[i+len(term):]
			return frame, nil
		}
		if len(tx.buf) > max+len(term) {
			return nil, tx.frameTooLong(max)
		}
		if ctx.Err() != nil {
			return nil, tx.readErr(ctx, "read")
		}
		if !time.Now().Before(deadline) {
			return nil, tx.timeout()
		}
		// read waits in the netpoller (no thread held) until a byte comes,
		// the deadline passes or ctx is cancelled (interrupt).
		n, err := tx.port.read(ctx, tx.chunk[:], deadline)
		if err != nil {
			tx.broken = true
			return nil, tx.l.ioErr("read", err)
		}
		// n == 0 with a nil error: the deadline passed or ctx was
		// cancelled; loop, and let the checks above decide.
		tx.buf = append(tx.buf, tx.chunk[:n]...)
	}
}

func (tx *Tx) frameTooLong(max int) error {
	tx.buf = nil
	return fmt.Errorf("serialline %s: frame longer than %d bytes without its terminator: %w", tx.l.opts.Name, max, device.ErrFrame)
}

// settle runs before a transaction that follows one whose reply did not
// come in time: that reply may still be on its way, and read as this
// transaction's answer it would tell of another command (a poll's frame
// taken for a hold's). It discards input for up to a quarter of ctx's time
// (the transaction keeps the rest): until a late reply has come and the
// line has then been quiet for settleQuiet (5 Poll intervals), or, when
// nothing comes, to the end of that quarter. Timeouts are rare, so the
// wait is too. A line still talking at the end is left to the transaction.
func (tx *Tx) settle(ctx context.Context) error {
	budget := tx.l.opts.Timeout / 4
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d) / 4
	}
	quiet := 5 * tx.l.opts.Poll
	end := time.Now().Add(budget)
	var last time.Time // when the last discarded byte came
	for now := time.Now(); now.Before(end); now = time.Now() {
		if !last.IsZero() && now.Sub(last) >= quiet {
			tx.l.late = false
			return nil
		}
		n, err := tx.port.read(context.Background(), tx.chunk[:], now.Add(min(tx.l.opts.Poll, end.Sub(now))))
		if err != nil {
			return tx.l.ioErr("read", err)
		}
		if n > 0 {
			tx.l.lateDiscarded += n
			last = time.Now()
		}
	}
	// Settled once per timeout: a line still talking now is the
	// transaction's to judge (a wrong frame fails it, and a timeout sets
	// late again); settling again each time would only shorten every
	// transaction on a slow line.
	tx.l.late = false
	return nil
}

func (tx *Tx) timeout() error {
	tx.l.late = true
	if len(tx.buf) > 0 {
		part := tx.buf
		tx.buf = nil
		return fmt.Errorf("serialline %s: incomplete frame %q at the deadline: %w", tx.l.opts.Name, truncate(part), device.ErrTimeout)
	}
	return fmt.Errorf("serialline %s: %w", tx.l.opts.Name, device.ErrTimeout)
}

func (tx *Tx) readErr(ctx context.Context, op string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return tx.timeout()
	}
	tx.l.late = true // cancelled while its reply may be on its way
	return tx.l.ctxErr(ctx, op)
}

// Discard drops the bytes buffered by ReadUntil and the port's input buffer.
func (tx *Tx) Discard() error {
	tx.buf = nil
	if err := tx.port.resetInput(); err != nil {
		tx.broken = true
		return tx.l.ioErr("reset input", err)
	}
	return nil
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// OpenFor opens the port at path for one instrument named name (the line is
// named after the instrument unless o.Name says otherwise) and hands it to
// build; when build fails the line is closed again. Drivers use it for their
// Open, which owns the line it opens.
func OpenFor[T any](path string, o Opts, name string, build func(*Line) (T, error)) (T, error) {
	if o.Name == "" {
		o.Name = name
	}
	var zero T
	line, err := Open(path, o)
	if err != nil {
		return zero, err
	}
	v, err := build(line)
	if err != nil {
		line.Close()
		return zero, err
	}
	return v, nil
}
