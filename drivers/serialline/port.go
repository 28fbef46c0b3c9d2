package serialline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"go.bug.st/serial"

	"hcp-edge/drivers/nbio"
)

// Port is one open serial port as two descriptors of the same tty:
//
//   - cfg, opened by go.bug.st/serial, which set the mode (baud rate,
//     framing, raw mode, no RTS/CTS), holds exclusive access (TIOCEXCL) and
//     flushes the input buffer (tcflush: the buffer is the tty's, whichever
//     descriptor asks);
//   - f, a non-blocking descriptor that the Go runtime's netpoller waits on,
//     through which every byte is read and written, with deadlines.
//
// go.bug.st/serial's own Read blocks its OS thread in select(2) for the whole
// wait: with four instruments polled at 10 Hz, a thread was almost always
// blocked in a syscall holding a P, the runtime's sysmon kept polling every
// 20 µs to take it back, and every reply woke threads with futexes. Read
// through f, a waiting transaction is a parked goroutine: no thread, no P.
//
// Line uses one; the Modbus RTU transport (drivers/modbus) opens its own with
// OpenPort. A Port is for one goroutine at a time, except Close and
// interrupt.
type Port struct {
	cfg serial.Port
	f   *os.File
	fd  *nbio.FD // f, read and written without waking the runtime's sysmon
}

// errNotPollable is returned by OpenPort when the runtime cannot wait on the
// device through its netpoller (a device without poll(2) support).
var errNotPollable = errors.New("device does not support non-blocking I/O with deadlines")

// OpenPort opens path twice: first the descriptor it reads and writes, then
// go.bug.st/serial's, which configures the tty with mode and takes exclusive
// access (in this order: once exclusive, the tty refuses a second open to an
// unprivileged process).
func OpenPort(path string, mode *serial.Mode) (*Port, error) {
	// O_NONBLOCK: the open itself must not wait for carrier detect (as
	// go.bug.st/serial opens with O_NDELAY), and it makes os.File use the
	// netpoller.
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := f.SetDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %w", errNotPollable, err)
	}
	fd, err := nbio.New(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %w", errNotPollable, err)
	}
	cfg, err := serial.Open(path, mode)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Port{cfg: cfg, f: f, fd: fd}, nil
}

// Read reads what the tty has, waiting until deadline at the latest in the
// netpoller (no OS thread held). It returns (0, nil) when nothing came by
// then; end of file (a hung-up tty) and every other failure are errors,
// after which the port should be closed and opened again.
func (p *Port) Read(b []byte, deadline time.Time) (int, error) {
	return p.read(context.Background(), b, deadline)
}

// Write writes all of b by deadline (zero: none); past it, the error wraps
// os.ErrDeadlineExceeded.
func (p *Port) Write(b []byte, deadline time.Time) (int, error) { return p.write(b, deadline) }

// ResetInput discards the tty's input buffer.
func (p *Port) ResetInput() error { return p.resetInput() }

// Close closes both descriptors; a read or write in progress returns an
// error.
func (p *Port) Close() error { return p.close() }

// read reads what the tty has, waiting until deadline at the latest. It
// returns (0, nil) when nothing came by then, and at once when ctx is done
// (provided ctx's cancellation calls interrupt, as ReadUntil arranges: the
// check after the deadline is set closes the gap between a cancellation and
// this deadline replacing interrupt's). End of file (a hung-up tty) is an
// error.
func (p *Port) read(ctx context.Context, b []byte, deadline time.Time) (int, error) {
	if err := p.f.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, nil
	}
	n, err := p.fd.Read(b)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, nil
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// interrupt makes a read in progress, and every later one until the next
// read sets its deadline, return at once.
func (p *Port) interrupt() { _ = p.f.SetReadDeadline(time.Unix(1, 0)) }

// write writes all of b by deadline (zero: none).
func (p *Port) write(b []byte, deadline time.Time) (int, error) {
	if err := p.f.SetWriteDeadline(deadline); err != nil {
		return 0, err
	}
	return p.fd.Write(b)
}

// close closes both descriptors; a read or write in progress returns an
// error.
func (p *Port) close() error {
	return errors.Join(p.f.Close(), p.cfg.Close())
}
