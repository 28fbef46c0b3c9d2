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
	// A cancelled context interrupts the I/O in progress.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := t.fd.Write(req); err != nil {
		return nil, &ioError{ctxErr(ctx, fmt.Errorf("write: %w", err))}
	}
	var buf [tcpHeaderLen + tcpMaxPDU]byte
	n, err := readFrame(t.fd, &buf)
	if err != nil {
		return nil, &ioError{ctxErr(ctx, err)}
	}
	return append([]byte(nil), buf[:n]...), nil
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
