package modbus

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	mb "github.com/goburrow/modbus"
)

// PDU is a Modbus protocol data unit: a function code and its data, without
// unit id, MBAP header or CRC.
type PDU struct {
	Function byte
	Data     []byte
}

// ExceptionPDU returns the exception reply to function fc with code.
func ExceptionPDU(fc, code byte) PDU { return PDU{Function: fc | 0x80, Data: []byte{code}} }

// Handler answers Modbus requests: an in-memory device for unit tests (see
// package modbustest), or the body of a test server. An error means the device
// does not answer at all.
type Handler interface {
	ServeModbus(ctx context.Context, unit byte, req PDU) (PDU, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, unit byte, req PDU) (PDU, error)

// ServeModbus calls f.
func (f HandlerFunc) ServeModbus(ctx context.Context, unit byte, req PDU) (PDU, error) {
	return f(ctx, unit, req)
}

// NewInMemory returns a Bus whose transactions are answered by h in memory,
// through the same client, packager (MBAP), mutex, retry and error paths as a
// TCP bus. Only Name, Timeout and Retries of o are used.
func NewInMemory(h Handler, o Opts) (*Bus, error) {
	o.Transport = "memory"
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = "memory"
	}
	p := mb.NewTCPClientHandler("")
	b := &Bus{name: o.Name, opts: o}
	b.setID = func(id byte) { p.SlaveId = id }
	b.tr = &memTransport{h: h}
	b.cl = mb.NewClient2(p, b.tr)
	return b, nil
}

type memTransport struct {
	h        Handler
	ctx      context.Context
	deadline time.Time
}

func (t *memTransport) begin(ctx context.Context, deadline time.Time) {
	t.ctx, t.deadline = ctx, deadline
}

func (t *memTransport) Send(req []byte) ([]byte, error) {
	ctx := t.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithDeadline(ctx, t.deadline)
	defer cancel()
	if len(req) < tcpHeaderLen+1 {
		return nil, &ioError{frameError("request of %d bytes", len(req))}
	}
	resp, err := t.h.ServeModbus(ctx, req[6], PDU{Function: req[7], Data: append([]byte(nil), req[8:]...)})
	if err != nil {
		return nil, &ioError{timeoutError(err, "in-memory device did not answer")}
	}
	if len(resp.Data) > tcpMaxPDU-1 {
		return nil, &ioError{frameError("reply PDU of %d bytes", len(resp.Data)+1)}
	}
	out := make([]byte, tcpHeaderLen+1+len(resp.Data))
	copy(out, req[:4])
	binary.BigEndian.PutUint16(out[4:], uint16(2+len(resp.Data)))
	out[6] = req[6]
	out[7] = resp.Function
	copy(out[8:], resp.Data)
	return out, nil
}

func (t *memTransport) reset()       {}
func (t *memTransport) close() error { return nil }

// String describes p for logs, e.g. "fc 03 [00 00 00 09]".
func (p PDU) String() string { return fmt.Sprintf("fc %02d [% x]", p.Function, p.Data) }
