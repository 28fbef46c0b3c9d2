package modbus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	mb "github.com/goburrow/modbus"

	"hcp-edge/drivers/nbio"
)

// tcpTransport replaces goburrow's TCP transporter: it dials with the caller's
// context, puts the transaction deadline on the socket, and drops the
// connection after any failure (reset) so that a late reply can never be read
// as the answer to the next request.
type tcpTransport struct {
	addr     string
	conn     net.Conn
	fd       *nbio.FD // conn's descriptor, read and written without waking sysmon
	ctx      context.Context
	deadline time.Time
	// The buffers of the exchange in progress, reused: a reply returned by
	// Send is valid until the next exchange, and the Bus decodes it before
	// it hands its lane on.
	req  [tcpHeaderLen + 5]byte // a register read's request (readRegisters)
	resp [tcpHeaderLen + tcpMaxPDU]byte
	txID uint16 // readRegisters' last transaction id
}

func (t *tcpTransport) begin(ctx context.Context, deadline time.Time) {
	t.ctx, t.deadline = ctx, deadline
}

func (t *tcpTransport) Send(req []byte) ([]byte, error) {
	ctx := t.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if t.conn == nil {
		d := net.Dialer{Deadline: t.deadline}
		c, err := d.DialContext(ctx, "tcp", t.addr)
		if err != nil {
			return nil, &ioError{ctxErr(ctx, fmt.Errorf("dial: %w", err))}
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			_ = c.Close()
			return nil, &ioError{fmt.Errorf("dial: %T has no descriptor", c)}
		}
		fd, err := nbio.New(sc)
		if err != nil {
			_ = c.Close()
			return nil, &ioError{fmt.Errorf("dial: %w", err)}
		}
		t.conn, t.fd = c, fd
	}
	c := t.conn
	if err := c.SetDeadline(t.deadline); err != nil {
		return nil, &ioError{err}
	}
	// A cancelled context interrupts the I/O in progress (a context that
	// cannot be cancelled needs no watcher: the deadline bounds the I/O).
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	if _, err := t.fd.Write(req); err != nil {
		return nil, &ioError{ctxErr(ctx, fmt.Errorf("write: %w", err))}
	}
	n, err := readFrame(t.fd, &t.resp)
	if err != nil {
		return nil, &ioError{ctxErr(ctx, err)}
	}
	return t.resp[:n], nil
}

// readRegisters reads qty registers (FC 03 or 04) of unit from addr into
// regs (len qty) in one exchange, without goburrow's client: the request is
// encoded into the transport's buffer and the reply decoded from its own,
// so that a poll allocates nothing here. The reply is checked as
// goburrow's client checks it (transaction id, unit, function, byte count);
// an exception comes back as goburrow's *ModbusError, so that Bus.once
// makes of it what it makes of goburrow's.
func (t *tcpTransport) readRegisters(unit, fc byte, addr, qty uint16, regs []uint16) error {
	t.txID++
	r := t.req[:]
	binary.BigEndian.PutUint16(r[0:], t.txID)
	binary.BigEndian.PutUint16(r[2:], 0) // protocol
	binary.BigEndian.PutUint16(r[4:], 6) // unit + PDU
	r[6], r[7] = unit, fc
	binary.BigEndian.PutUint16(r[8:], addr)
	binary.BigEndian.PutUint16(r[10:], qty)
	adu, err := t.Send(r)
	if err != nil {
		return err
	}
	// readFrame checked the protocol id and that the frame is as long as its
	// MBAP length (unit and function at least).
	if id := binary.BigEndian.Uint16(adu); id != t.txID {
		return &ioError{frameError("reply transaction id %d to request %d", id, t.txID)}
	}
	if adu[6] != unit {
		return &ioError{frameError("reply from unit %d to a request for unit %d", adu[6], unit)}
	}
	pdu := adu[tcpHeaderLen:]
	switch {
	case pdu[0] == fc|0x80 && len(pdu) == 2:
		return &mb.ModbusError{FunctionCode: pdu[0], ExceptionCode: pdu[1]}
	case pdu[0] != fc && pdu[0] != fc|0x80:
		return &mb.ModbusError{FunctionCode: pdu[0]}
	case len(pdu) != 2+2*int(qty) || int(pdu[1]) != 2*int(qty):
		return &ioError{frameError("reply PDU of %d bytes for %d registers", len(pdu), qty)}
	}
	for i := range regs {
		regs[i] = binary.BigEndian.Uint16(pdu[2+2*i:])
	}
	return nil
}

// readFrame reads one MBAP frame into buf and returns its length. It reads
// whatever has arrived rather than the header and then the rest, so that a
// reply that arrived in one segment (the usual case) costs one read(2), not
// two. Only one transaction is ever in flight on the connection, so anything
// past the frame can only be a late reply to an abandoned request: it is
// dropped with the buffer (and the transaction id check catches what it
// would have confused).
func readFrame(r io.Reader, buf *[tcpHeaderLen + tcpMaxPDU]byte) (int, error) {
	got, n := 0, 0 // bytes read; frame length once the header is in
	for {
		k, err := r.Read(buf[got:])
		got += k
		if n == 0 && got >= tcpHeaderLen {
			var herr error
			if n, herr = MBAPLength(buf[:tcpHeaderLen]); herr != nil {
				return 0, herr
			}
		}
		if n > 0 && got >= n {
			return n, nil
		}
		if err == nil && k == 0 {
			err = io.ErrNoProgress
		}
		if err != nil {
			if errors.Is(err, io.EOF) && got > 0 {
				err = io.ErrUnexpectedEOF
			}
			if n == 0 {
				return 0, fmt.Errorf("read MBAP header: %w", err)
			}
			return 0, fmt.Errorf("read PDU: %w", err)
		}
	}
}

// MBAPLength returns the total length of the Modbus TCP frame whose 7-byte
// MBAP header is hdr, or an error wrapping device.ErrFrame when the header is
// impossible (protocol id not 0, length field outside 2..254).
func MBAPLength(hdr []byte) (int, error) {
	if len(hdr) < tcpHeaderLen {
		return 0, frameError("MBAP header of %d bytes", len(hdr))
	}
	if p := binary.BigEndian.Uint16(hdr[2:]); p != 0 {
		return 0, frameError("MBAP protocol id %d", p)
	}
	l := int(binary.BigEndian.Uint16(hdr[4:]))
	if l < 2 || l > tcpMaxPDU+1 {
		return 0, frameError("MBAP length %d (want 2..%d)", l, tcpMaxPDU+1)
	}
	return tcpHeaderLen - 1 + l, nil
}

func (t *tcpTransport) reset() {
	if t.conn != nil {
		_ = t.conn.Close()
		t.conn, t.fd = nil, nil
	}
}

func (t *tcpTransport) close() error {
	if t.conn == nil {
		return nil
	}
	err := t.conn.Close()
	t.conn, t.fd = nil, nil
	return err
}

// ctxErr reports a cancelled context as such rather than as the I/O error it
// caused (a deadline in the past).
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && errors.Is(cerr, context.Canceled) {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}
