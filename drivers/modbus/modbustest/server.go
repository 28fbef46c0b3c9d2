package modbustest

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"

	"hcp-edge/drivers/modbus"
)

// Unit is the data of one unit id. Slices are the tables; their lengths set
// the valid address ranges.
type Unit struct {
	Coils    []bool
	Discrete []bool
	Holding  []uint16
	Input    []uint16
	// Validate, when set, vets every write (table "holding" or "coil"): false
	// refuses it with exception 03 and nothing changes.
	Validate func(table string, addr uint16, value uint16) bool
	// OnWrite, when set, is called after every accepted write.
	OnWrite func(table string, addr uint16, value uint16)
}

// Server is an in-memory Modbus device with several unit ids. It is safe for
// concurrent use; tests read and change the tables under Lock/Unlock.
type Server struct {
	mu    sync.Mutex
	units map[byte]*Unit
	// Requests counts every request served, per function code.
	requests map[byte]int
}

// NewServer returns a Server with the given units.
func NewServer(units map[byte]*Unit) *Server {
	return &Server{units: units, requests: map[byte]int{}}
}

// Do runs f with the server locked, to inspect or change the tables.
func (s *Server) Do(f func(units map[byte]*Unit)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.units)
}

// Requests returns how many requests with function fc were served.
func (s *Server) Requests(fc byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[fc]
}

// ErrNoUnit is returned (no answer) for a unit id the server does not have.
var ErrNoUnit = errors.New("modbustest: no such unit")

// ServeModbus answers req for unit.
func (s *Server) ServeModbus(_ context.Context, unit byte, req modbus.PDU) (modbus.PDU, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.units[unit]
	if !ok {
		return modbus.PDU{}, ErrNoUnit
	}
	s.requests[req.Function]++
	fc, d := req.Function, req.Data
	ex := func(code byte) (modbus.PDU, error) { return modbus.ExceptionPDU(fc, code), nil }
	be := binary.BigEndian
	switch fc {
	case 0x01, 0x02, 0x03, 0x04:
		if len(d) != 4 {
			return ex(modbus.ExceptionIllegalValue)
		}
		addr, qty := int(be.Uint16(d)), int(be.Uint16(d[2:]))
		var n int
		switch fc {
		case 0x01:
			n = len(u.Coils)
		case 0x02:
			n = len(u.Discrete)
		case 0x03:
			n = len(u.Holding)
		case 0x04:
			n = len(u.Input)
		}
		if qty < 1 || (fc <= 2 && qty > 2000) || (fc > 2 && qty > 125) {
			return ex(modbus.ExceptionIllegalValue)
		}
		if addr+qty > n {
			return ex(modbus.ExceptionIllegalAddress)
		}
		if fc <= 2 {
			bits := u.Coils
			if fc == 2 {
				bits = u.Discrete
			}
			out := make([]byte, 1+(qty+7)/8)
			out[0] = byte(len(out) - 1)
			for i := range qty {
				if bits[addr+i] {
					out[1+i/8] |= 1 << (i % 8)
				}
			}
			return modbus.PDU{Function: fc, Data: out}, nil
		}
		regs := u.Holding
		if fc == 4 {
			regs = u.Input
		}
		out := make([]byte, 1+2*qty)
		out[0] = byte(2 * qty)
		for i := range qty {
			be.PutUint16(out[1+2*i:], regs[addr+i])
		}
		return modbus.PDU{Function: fc, Data: out}, nil
	case 0x05, 0x06:
		if len(d) != 4 {
			return ex(modbus.ExceptionIllegalValue)
		}
		addr, v := be.Uint16(d), be.Uint16(d[2:])
		if fc == 5 {
			if int(addr) >= len(u.Coils) {
				return ex(modbus.ExceptionIllegalAddress)
			}
			if v != 0xFF00 && v != 0 {
				return ex(modbus.ExceptionIllegalValue)
			}
			bit := uint16(0)
			if v == 0xFF00 {
				bit = 1
			}
			if u.Validate != nil && !u.Validate("coil", addr, bit) {
				return ex(modbus.ExceptionIllegalValue)
			}
			u.Coils[addr] = bit == 1
			if u.OnWrite != nil {
				u.OnWrite("coil", addr, bit)
			}
		} else {
			if int(addr) >= len(u.Holding) {
				return ex(modbus.ExceptionIllegalAddress)
			}
			if u.Validate != nil && !u.Validate("holding", addr, v) {
				return ex(modbus.ExceptionIllegalValue)
			}
			u.Holding[addr] = v
			if u.OnWrite != nil {
				u.OnWrite("holding", addr, v)
			}
		}
		return modbus.PDU{Function: fc, Data: append([]byte(nil), d...)}, nil
	case 0x0F, 0x10:
		if len(d) < 5 {
			return ex(modbus.ExceptionIllegalValue)
		}
		addr, qty, n := int(be.Uint16(d)), int(be.Uint16(d[2:])), int(d[4])
		if len(d) != 5+n || qty < 1 {
			return ex(modbus.ExceptionIllegalValue)
		}
		if fc == 0x10 {
			if n != 2*qty {
				return ex(modbus.ExceptionIllegalValue)
			}
			if addr+qty > len(u.Holding) {
				return ex(modbus.ExceptionIllegalAddress)
			}
			for i := range qty {
				if u.Validate != nil && !u.Validate("holding", uint16(addr+i), be.Uint16(d[5+2*i:])) {
					return ex(modbus.ExceptionIllegalValue)
				}
			}
			for i := range qty {
				v := be.Uint16(d[5+2*i:])
				u.Holding[addr+i] = v
				if u.OnWrite != nil {
					u.OnWrite("holding", uint16(addr+i), v)
				}
			}
		} else {
			if n != (qty+7)/8 {
				return ex(modbus.ExceptionIllegalValue)
			}
			if addr+qty > len(u.Coils) {
				return ex(modbus.ExceptionIllegalAddress)
			}
			for i := range qty {
				bit := uint16(d[5+i/8]>>(i%8)) & 1
				if u.Validate != nil && !u.Validate("coil", uint16(addr+i), bit) {
					return ex(modbus.ExceptionIllegalValue)
				}
			}
			for i := range qty {
				bit := uint16(d[5+i/8]>>(i%8)) & 1
				u.Coils[addr+i] = bit == 1
				if u.OnWrite != nil {
					u.OnWrite("coil", uint16(addr+i), bit)
				}
			}
		}
		return modbus.PDU{Function: fc, Data: append([]byte(nil), d[:4]...)}, nil
	}
	return ex(modbus.ExceptionIllegalFunction)
}

// TCPServer serves a Handler over Modbus TCP (MBAP) on a listener; one
// goroutine per connection, one request at a time per connection. A handler
// error means no reply. Close stops it and waits for its goroutines.
type TCPServer struct {
	ln    net.Listener
	h     modbus.Handler
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	dials int
}

// ServeTCP starts serving h on ln.
func ServeTCP(ln net.Listener, h modbus.Handler) *TCPServer {
	ctx, stop := context.WithCancel(context.Background())
	s := &TCPServer{ln: ln, h: h, ctx: ctx, stop: stop, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Addr is the listening address.
func (s *TCPServer) Addr() string { return s.ln.Addr().String() }

// Connections returns how many connections were accepted so far.
func (s *TCPServer) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials
}

// Close stops accepting, closes every connection and waits.
func (s *TCPServer) Close() error {
	s.stop()
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *TCPServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.dials++
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *TCPServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	hdr := make([]byte, 7)
	for {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(hdr[4:]))
		if n < 2 || n > 254 {
			return
		}
		pdu := make([]byte, n-1)
		if _, err := io.ReadFull(c, pdu); err != nil {
			return
		}
		resp, err := s.h.ServeModbus(s.ctx, hdr[6], modbus.PDU{Function: pdu[0], Data: pdu[1:]})
		if err != nil {
			continue
		}
		out := make([]byte, 8+len(resp.Data))
		copy(out, hdr[:4])
		binary.BigEndian.PutUint16(out[4:], uint16(2+len(resp.Data)))
		out[6] = hdr[6]
		out[7] = resp.Function
		copy(out[8:], resp.Data)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}
