package modbus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	mb "github.com/goburrow/modbus"

	"hcp-edge/device"
	"hcp-edge/drivers/lane"
)

// Transports accepted in Opts.Transport.
const (
	TransportTCP = "tcp"
	TransportRTU = "rtu"
)

// Opts configures a Bus. DefaultOpts gives the rig simulator's Modbus TCP
// endpoint; for the RTU line set Transport to TransportRTU and Address to the
// serial device.
type Opts struct {
	// Name prefixes errors; default "<transport> <address>".
	Name string
	// Transport is TransportTCP or TransportRTU.
	Transport string
	// Address is host:port for TCP, the serial device path for RTU.
	Address string
	// Timeout bounds one attempt (dial or open included). A caller's context
	// deadline that comes earlier wins.
	Timeout time.Duration
	// Retries is how many times a failed idempotent transaction (a read, a
	// single-register or single-coil write) is repeated. Modbus exceptions and
	// multiple-register/coil writes are never retried.
	Retries int
	// Serial line settings (RTU only): 19200 8E1 by default. A pty ignores them.
	Baud     int
	DataBits int
	Parity   string // "N", "E" or "O"
	StopBits int    // 1 or 2
	// FrameGap (RTU only) is the silence that ends a reply whose length cannot
	// be computed from its function code, and the silence awaited to drain a
	// late reply after a failed transaction.
	FrameGap time.Duration
}

// DefaultOpts returns TCP to 127.0.0.1:5020, a 1 s timeout, 2 retries and, for
// RTU, 19200 baud 8E1 with a 20 ms frame gap.
func DefaultOpts() Opts {
	return Opts{
		Transport: TransportTCP,
		Address:   "127.0.0.1:5020",
		Timeout:   time.Second,
		Retries:   2,
		Baud:      19200,
		DataBits:  8,
		Parity:    "E",
		StopBits:  1,
		FrameGap:  20 * time.Millisecond,
	}
}

// Validate checks o.
func (o Opts) Validate() error {
	switch {
	case o.Transport != TransportTCP && o.Transport != TransportRTU && o.Transport != "memory":
		return fmt.Errorf("modbus: transport %q (want %q or %q)", o.Transport, TransportTCP, TransportRTU)
	case o.Address == "" && o.Transport != "memory":
		return errors.New("modbus: empty address")
	case o.Timeout <= 0:
		return fmt.Errorf("modbus: timeout %v must be positive", o.Timeout)
	case o.Retries < 0 || o.Retries > 10:
		return fmt.Errorf("modbus: retries %d (want 0..10)", o.Retries)
	}
	if o.Transport == TransportRTU {
		if _, err := serialMode(o); err != nil {
			return err
		}
		if o.FrameGap <= 0 {
			return fmt.Errorf("modbus: frame gap %v must be positive", o.FrameGap)
		}
	}
	return nil
}

// transport carries one ADU exchange for goburrow's client. The Bus sets the
// context and deadline of the next exchange with begin, under its mutex.
type transport interface {
	mb.Transporter
	begin(ctx context.Context, deadline time.Time)
	// reset forgets whatever is in flight after a failed exchange (closes the
	// TCP connection, drains the serial line).
	reset()
	close() error
}

// ioError marks errors that come from the transport (as opposed to goburrow's
// own parsing of the reply).
type ioError struct{ err error }

func (e *ioError) Error() string { return e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

// Bus is one Modbus line or connection (an RS-485 line, a TCP connection to a
// server or gateway) shared by several unit ids. Every transaction holds the
// bus's lane from encoding to the end of the reply, and sets the unit id
// inside it; a transaction whose context is marked device.WithUrgent (a halt)
// goes before every routine one waiting (package lane). A Bus is safe for concurrent
// use.
type Bus struct {
	name  string
	opts  Opts
	rtu   bool
	lane  lane.Lane
	done  bool // guarded by lane
	setID func(byte)
	cl    mb.Client
	tr    transport
	tcp   *tcpTransport // tr over TCP: register reads skip goburrow's client
}

// New opens a Bus over TCP or RTU. TCP dials lazily (on the first
// transaction, and again after any failure); RTU opens the serial port now.
func New(o Opts) (*Bus, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = o.Transport + " " + o.Address
	}
	b := &Bus{name: o.Name, opts: o}
	switch o.Transport {
	case TransportTCP:
		p := mb.NewTCPClientHandler(o.Address) // used as the MBAP packager only
		b.setID = func(id byte) { p.SlaveId = id }
		b.tcp = &tcpTransport{addr: o.Address}
		b.tr = b.tcp
		b.cl = mb.NewClient2(p, b.tr)
	case TransportRTU:
		mode, _ := serialMode(o)
		t := &rtuTransport{path: o.Address, mode: mode, gap: o.FrameGap}
		if err := t.open(); err != nil {
			return nil, fmt.Errorf("modbus %s: %w", o.Name, err)
		}
		p := mb.NewRTUClientHandler(o.Address) // used as the RTU packager only
		b.setID = func(id byte) { p.SlaveId = id }
		b.tr = t
		b.rtu = true
		b.cl = mb.NewClient2(p, b.tr)
	default:
		return nil, fmt.Errorf("modbus: transport %q needs NewInMemory", o.Transport)
	}
	return b, nil
}

// String names the bus, e.g. "tcp 127.0.0.1:5020".
func (b *Bus) String() string { return b.name }

// Close closes the connection or port; later transactions fail with
// device.ErrClosed. It waits for a transaction in progress.
func (b *Bus) Close() error {
	b.lane.Lock(false)
	defer b.lane.Unlock()
	if b.done {
		return nil
	}
	b.done = true
	return b.tr.close()
}

// do runs one transaction with retries. fc and addr name it in errors;
// idempotent says whether repeating it is harmless.
func (b *Bus) do(ctx context.Context, unit, fc byte, addr uint16, idempotent bool, fn func(mb.Client) error) error {
	if b.rtu && (unit == 0 || unit > 247) {
		return fmt.Errorf("modbus %s unit %d: RTU unit id must be 1..247 (broadcast is not supported): %w", b.name, unit, device.ErrOutOfRange)
	}
	var err error
	for attempt := 0; ; attempt++ {
		err = b.once(ctx, unit, fc, addr, fn)
		if err == nil {
			return nil
		}
		if !idempotent || !retryable(err) || attempt >= b.opts.Retries || ctx.Err() != nil {
			break
		}
	}
	var ex *Exception
	if errors.As(err, &ex) {
		return err
	}
	return fmt.Errorf("modbus %s unit %d fc %02d addr %d: %w", b.name, unit, fc, addr, err)
}

func (b *Bus) once(ctx context.Context, unit, fc byte, addr uint16, fn func(mb.Client) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.lane.Lock(device.Urgent(ctx))
	defer b.lane.Unlock()
	if b.done {
		return device.ErrClosed
	}
	deadline := time.Now().Add(b.opts.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	b.setID(unit)
	b.tr.begin(ctx, deadline)
	err := fn(b.cl)
	b.tr.begin(context.Background(), time.Time{}) // forget the caller's context between transactions
	if err == nil {
		return nil
	}
	var me *mb.ModbusError
	var ie *ioError
	switch {
	case errors.As(err, &me) && me.FunctionCode == fc|0x80:
		return &Exception{Bus: b.name, Unit: unit, Function: fc, Address: addr, Code: me.ExceptionCode}
	case errors.As(err, &me):
		err = frameError("reply with function %#02x", me.FunctionCode)
	case errors.As(err, &ie):
		err = classify(ie.err)
	default:
		// goburrow's own checks of the reply (sizes, echoes, ids).
		err = frameError("%v", err)
	}
	b.tr.reset()
	return err
}

// ReadHoldingRegisters reads qty holding registers (FC 03) from addr.
func (b *Bus) ReadHoldingRegisters(ctx context.Context, unit byte, addr, qty uint16) ([]uint16, error) {
	return b.readRegisters(ctx, unit, mb.FuncCodeReadHoldingRegisters, addr, qty)
}

// ReadInputRegisters reads qty input registers (FC 04) from addr.
func (b *Bus) ReadInputRegisters(ctx context.Context, unit byte, addr, qty uint16) ([]uint16, error) {
	return b.readRegisters(ctx, unit, mb.FuncCodeReadInputRegisters, addr, qty)
}

func (b *Bus) readRegisters(ctx context.Context, unit, fc byte, addr, qty uint16) ([]uint16, error) {
	if qty < 1 || qty > 125 {
		return nil, fmt.Errorf("modbus %s unit %d fc %02d addr %d: quantity %d (want 1..125): %w", b.name, unit, fc, addr, qty, device.ErrOutOfRange)
	}
	if b.tcp != nil {
		regs := make([]uint16, qty)
		err := b.do(ctx, unit, fc, addr, true, func(mb.Client) error {
			return b.tcp.readRegisters(unit, fc, addr, qty, regs)
		})
		if err != nil {
			return nil, err
		}
		return regs, nil
	}
	var regs []uint16
	err := b.do(ctx, unit, fc, addr, true, func(c mb.Client) error {
		var raw []byte
		var err error
		if fc == mb.FuncCodeReadHoldingRegisters {
			raw, err = c.ReadHoldingRegisters(addr, qty)
		} else {
			raw, err = c.ReadInputRegisters(addr, qty)
		}
		if err != nil {
			return err
		}
		if len(raw) != 2*int(qty) {
			return &ioError{frameError("%d data bytes for %d registers", len(raw), qty)}
		}
		regs = make([]uint16, qty)
		for i := range regs {
			regs[i] = binary.BigEndian.Uint16(raw[2*i:])
		}
		return nil
	})
	return regs, err
}

// ReadCoils reads qty coils (FC 01) from addr.
func (b *Bus) ReadCoils(ctx context.Context, unit byte, addr, qty uint16) ([]bool, error) {
	return b.readBits(ctx, unit, mb.FuncCodeReadCoils, addr, qty)
}

// ReadDiscreteInputs reads qty discrete inputs (FC 02) from addr.
func (b *Bus) ReadDiscreteInputs(ctx context.Context, unit byte, addr, qty uint16) ([]bool, error) {
	return b.readBits(ctx, unit, mb.FuncCodeReadDiscreteInputs, addr, qty)
}

func (b *Bus) readBits(ctx context.Context, unit, fc byte, addr, qty uint16) ([]bool, error) {
	if qty < 1 || qty > 2000 {
		return nil, fmt.Errorf("modbus %s unit %d fc %02d addr %d: quantity %d (want 1..2000): %w", b.name, unit, fc, addr, qty, device.ErrOutOfRange)
	}
	var bits []bool
	err := b.do(ctx, unit, fc, addr, true, func(c mb.Client) error {
		var raw []byte
		var err error
		if fc == mb.FuncCodeReadCoils {
			raw, err = c.ReadCoils(addr, qty)
		} else {
			raw, err = c.ReadDiscreteInputs(addr, qty)
		}
		if err != nil {
			return err
		}
		if len(raw) != (int(qty)+7)/8 {
			return &ioError{frameError("%d data bytes for %d bits", len(raw), qty)}
		}
		bits = make([]bool, qty)
		for i := range bits {
			bits[i] = raw[i/8]&(1<<(i%8)) != 0
		}
		return nil
	})
	return bits, err
}

// WriteSingleRegister writes one holding register (FC 06). It is idempotent
// and retried.
func (b *Bus) WriteSingleRegister(ctx context.Context, unit byte, addr, value uint16) error {
	return b.do(ctx, unit, mb.FuncCodeWriteSingleRegister, addr, true, func(c mb.Client) error {
		_, err := c.WriteSingleRegister(addr, value)
		return err
	})
}

// WriteSingleCoil writes one coil (FC 05). It is idempotent and retried.
func (b *Bus) WriteSingleCoil(ctx context.Context, unit byte, addr uint16, on bool) error {
	v := uint16(0x0000)
	if on {
		v = 0xFF00
	}
	return b.do(ctx, unit, mb.FuncCodeWriteSingleCoil, addr, true, func(c mb.Client) error {
		_, err := c.WriteSingleCoil(addr, v)
		return err
	})
}

// WriteMultipleRegisters writes values from addr (FC 16). It is not retried:
// after a failure the caller reads back and decides.
func (b *Bus) WriteMultipleRegisters(ctx context.Context, unit byte, addr uint16, values []uint16) error {
	if len(values) < 1 || len(values) > 123 {
		return fmt.Errorf("modbus %s unit %d fc 16 addr %d: %d registers (want 1..123): %w", b.name, unit, addr, len(values), device.ErrOutOfRange)
	}
	raw := make([]byte, 2*len(values))
	for i, v := range values {
		binary.BigEndian.PutUint16(raw[2*i:], v)
	}
	return b.do(ctx, unit, mb.FuncCodeWriteMultipleRegisters, addr, false, func(c mb.Client) error {
		_, err := c.WriteMultipleRegisters(addr, uint16(len(values)), raw)
		return err
	})
}

// WriteMultipleCoils writes bits from addr (FC 15). It is not retried.
func (b *Bus) WriteMultipleCoils(ctx context.Context, unit byte, addr uint16, bits []bool) error {
	if len(bits) < 1 || len(bits) > 1968 {
		return fmt.Errorf("modbus %s unit %d fc 15 addr %d: %d coils (want 1..1968): %w", b.name, unit, addr, len(bits), device.ErrOutOfRange)
	}
	raw := make([]byte, (len(bits)+7)/8)
	for i, on := range bits {
		if on {
			raw[i/8] |= 1 << (i % 8)
		}
	}
	return b.do(ctx, unit, mb.FuncCodeWriteMultipleCoils, addr, false, func(c mb.Client) error {
		_, err := c.WriteMultipleCoils(addr, uint16(len(bits)), raw)
		return err
	})
}
