package modbus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.bug.st/serial"
)

// rtuPoll bounds one serial read so that a cancelled context is noticed.
const rtuPoll = 50 * time.Millisecond

func serialMode(o Opts) (*serial.Mode, error) {
	m := &serial.Mode{BaudRate: o.Baud, DataBits: o.DataBits}
	if m.BaudRate <= 0 {
		return nil, fmt.Errorf("modbus: baud rate %d", o.Baud)
	}
	if m.DataBits != 7 && m.DataBits != 8 {
		return nil, fmt.Errorf("modbus: %d data bits (want 7 or 8)", o.DataBits)
	}
	switch o.Parity {
	case "N", "n", "none":
		m.Parity = serial.NoParity
	case "E", "e", "even":
		m.Parity = serial.EvenParity
	case "O", "o", "odd":
		m.Parity = serial.OddParity
	default:
		return nil, fmt.Errorf("modbus: parity %q (want N, E or O)", o.Parity)
	}
	switch o.StopBits {
	case 1:
		m.StopBits = serial.OneStopBit
	case 2:
		m.StopBits = serial.TwoStopBits
	default:
		return nil, fmt.Errorf("modbus: %d stop bits (want 1 or 2)", o.StopBits)
	}
	return m, nil
}

// rtuTransport replaces goburrow's RTU transporter (upstream issue #81, sleeps
// instead of reads, goburrow/serial). One exchange: reset the input buffer,
// write the request, read until the reply length computed from its function
// code, exception bit and byte count (or, when that cannot be known, until a
// silence of gap), then check unit, function and CRC.
type rtuTransport struct {
	path     string
	mode     *serial.Mode
	gap      time.Duration
	port     serial.Port
	ctx      context.Context
	deadline time.Time
}

func (t *rtuTransport) open() error {
	p, err := serial.Open(t.path, t.mode)
	if err != nil {
		return fmt.Errorf("open %s: %w", t.path, err)
	}
	t.port = p
	return nil
}

func (t *rtuTransport) begin(ctx context.Context, deadline time.Time) {
	t.ctx, t.deadline = ctx, deadline
}

func (t *rtuTransport) Send(req []byte) ([]byte, error) {
	ctx := t.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if t.port == nil {
		if err := t.open(); err != nil {
			return nil, &ioError{err}
		}
	}
	if err := t.port.ResetInputBuffer(); err != nil {
		return nil, &ioError{t.fail(fmt.Errorf("reset input buffer: %w", err))}
	}
	for off := 0; off < len(req); {
		n, err := t.port.Write(req[off:])
		if err != nil {
			return nil, &ioError{t.fail(fmt.Errorf("write: %w", err))}
		}
		off += n
	}
	reply, err := t.read(ctx, req)
	if err != nil {
		return nil, &ioError{err}
	}
	return reply, nil
}

// read collects one reply. go.bug.st/serial returns (0, nil) when a read
// times out; every read here is bounded, so the loop ends at the deadline.
func (t *rtuTransport) read(ctx context.Context, req []byte) ([]byte, error) {
	var chunk [rtuMaxFrame]byte
	buf := make([]byte, 0, rtuMaxFrame)
	want := 0
	var last time.Time
	for want <= 0 || len(buf) < want {
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil, err
			}
			return nil, timeoutError(err, "RTU reply (%d bytes so far)", len(buf))
		}
		wait := time.Until(t.deadline)
		if want < 0 {
			silent := time.Since(last)
			if silent >= t.gap {
				break // a reply of unknown length ends with a silence
			}
			wait = min(wait, t.gap-silent)
		}
		if wait <= 0 {
			if len(buf) == 0 {
				return nil, timeoutError(nil, "no RTU reply")
			}
			return nil, timeoutError(nil, "incomplete RTU reply (% x)", buf)
		}
		wait = max(min(wait, rtuPoll), time.Millisecond)
		if err := t.port.SetReadTimeout(wait); err != nil {
			return nil, t.fail(err)
		}
		n, err := t.port.Read(chunk[:])
		if err != nil {
			return nil, t.fail(fmt.Errorf("read: %w", err))
		}
		if n == 0 {
			continue // read timeout
		}
		last = time.Now()
		buf = append(buf, chunk[:n]...)
		if len(buf) > rtuMaxFrame {
			return nil, frameError("RTU reply longer than %d bytes", rtuMaxFrame)
		}
		if want, err = RTUReplyLength(buf); err != nil {
			return nil, err
		}
		for want > 0 && len(buf) >= want && lateRTUReply(req, buf[:want]) {
			// A late reply to an earlier request, not to this one: skip it
			// and read on within this exchange's deadline.
			buf = append(buf[:0], buf[want:]...)
			want = 0
			if len(buf) > 0 {
				if want, err = RTUReplyLength(buf); err != nil {
					return nil, err
				}
			}
		}
	}
	if want > 0 {
		buf = buf[:want]
	}
	if err := checkRTUReply(req, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// fail closes the port after an I/O error so that the next exchange reopens it.
func (t *rtuTransport) fail(err error) error {
	if t.port != nil {
		_ = t.port.Close()
		t.port = nil
	}
	return err
}

// reset drains a late or trailing reply: it reads until the line has been
// silent for one gap (at most ten gaps), then resets the input buffer.
func (t *rtuTransport) reset() {
	if t.port == nil {
		return
	}
	var chunk [rtuMaxFrame]byte
	end := time.Now().Add(10 * t.gap)
	for time.Now().Before(end) {
		if err := t.port.SetReadTimeout(t.gap); err != nil {
			_ = t.fail(err)
			return
		}
		n, err := t.port.Read(chunk[:])
		if err != nil {
			_ = t.fail(err)
			return
		}
		if n == 0 {
			break
		}
	}
	_ = t.port.ResetInputBuffer()
}

func (t *rtuTransport) close() error {
	if t.port == nil {
		return nil
	}
	err := t.port.Close()
	t.port = nil
	return err
}
