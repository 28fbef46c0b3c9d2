package modbussim

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// MBAP is the Modbus TCP application header.
type MBAP struct {
	TxID   uint16
	Proto  uint16
	Length uint16 // bytes following the length field: unit id + PDU
	Unit   byte
}

// MBAPLen is the size of the MBAP header.
const MBAPLen = 7

// Frame errors.
var (
	// ErrShortFrame: fewer bytes than the header or the length field says.
	ErrShortFrame = errors.New("modbussim: short frame")
	// ErrBadLength: an MBAP length outside 2..254 or a frame longer than it says.
	ErrBadLength = errors.New("modbussim: bad MBAP length")
	// ErrBadProtocol: an MBAP protocol id other than 0.
	ErrBadProtocol = errors.New("modbussim: MBAP protocol id is not 0")
)

// ParseMBAP decodes an MBAP header from the first 7 bytes of b.
func ParseMBAP(b []byte) (MBAP, error) {
	if len(b) < MBAPLen {
		return MBAP{}, ErrShortFrame
	}
	h := MBAP{
		TxID:   binary.BigEndian.Uint16(b),
		Proto:  binary.BigEndian.Uint16(b[2:]),
		Length: binary.BigEndian.Uint16(b[4:]),
		Unit:   b[6],
	}
	if h.Length < 2 || h.Length > MaxPDU+1 {
		return h, fmt.Errorf("%w: %d", ErrBadLength, h.Length)
	}
	if h.Proto != 0 {
		return h, fmt.Errorf("%w: %d", ErrBadProtocol, h.Proto)
	}
	return h, nil
}

// ParseTCPFrame decodes one complete Modbus TCP request frame: header and PDU
// (a sub-slice of b).
func ParseTCPFrame(b []byte) (MBAP, []byte, error) {
	h, err := ParseMBAP(b)
	if err != nil {
		return h, nil, err
	}
	end := MBAPLen - 1 + int(h.Length)
	if len(b) < end {
		return h, nil, ErrShortFrame
	}
	if len(b) > end {
		return h, nil, fmt.Errorf("%w: %d trailing bytes", ErrBadLength, len(b)-end)
	}
	return h, b[MBAPLen:end], nil
}

// TCPOpts configures a TCPServer.
type TCPOpts struct {
	// Logger receives connection errors (default: discard).
	Logger *slog.Logger
	// IdleTimeout closes a connection silent for this long (0: never).
	IdleTimeout time.Duration
}

// TCPServer serves units 1 and 2 over Modbus TCP.
type TCPServer struct {
	p    *plant.Plant
	h    *Handler
	opts TCPOpts
	ln   net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
	stop   func() bool
}

// ListenTCP binds addr (e.g. "127.0.0.1:5020") and serves in goroutines owned
// by the server until Close or until ctx is done.
func ListenTCP(ctx context.Context, p *plant.Plant, addr string, opts TCPOpts) (*TCPServer, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("modbussim: listen %s: %w", addr, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &TCPServer{p: p, h: NewHandler(p), opts: opts, ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	s.stop = context.AfterFunc(ctx, func() { _ = s.shut() })
	return s, nil
}

// Addr is the address the server listens on.
func (s *TCPServer) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting, closes every connection and waits for every
// goroutine of the server.
func (s *TCPServer) Close() error {
	s.stop()
	err := s.shut()
	s.wg.Wait()
	return err
}

func (s *TCPServer) shut() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	return err
}

func (s *TCPServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			s.opts.Logger.Warn("modbus tcp accept", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
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
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	r := bufio.NewReaderSize(c, 1024)
	var req [MBAPLen + MaxPDU]byte
	var resp [MBAPLen + MaxPDU + 8]byte
	for {
		if s.opts.IdleTimeout > 0 {
			_ = c.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout))
		}
		if _, err := io.ReadFull(r, req[:MBAPLen]); err != nil {
			return
		}
		h, err := ParseMBAP(req[:MBAPLen])
		if errors.Is(err, ErrBadLength) {
			s.opts.Logger.Debug("modbus tcp: dropping connection", "remote", c.RemoteAddr(), "err", err)
			return
		}
		n := int(h.Length) - 1
		if _, err := io.ReadFull(r, req[MBAPLen:MBAPLen+n]); err != nil {
			return
		}
		if h.Proto != 0 {
			continue // not Modbus: ignore
		}
		out := s.handle(h, req[MBAPLen:MBAPLen+n], resp[:0])
		if out == nil {
			continue
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// handle executes one request and returns the full reply ADU, or nil for no
// reply (silent fault).
func (s *TCPServer) handle(h MBAP, pdu, buf []byte) []byte {
	buf = binary.BigEndian.AppendUint16(buf, h.TxID)
	buf = append(buf, 0, 0, 0, 0, h.Unit)
	buf = s.h.Handle("tcp", h.Unit, pdu, buf)
	dev := DeviceForUnit(h.Unit)
	if dev != "" {
		if s.p.FaultActive(plant.FaultSilent, dev) {
			return nil
		}
		if s.p.FaultActive(plant.FaultCorrupt, dev) {
			corruptPDU(buf[MBAPLen:])
		}
	}
	binary.BigEndian.PutUint16(buf[4:], uint16(len(buf)-6))
	return buf
}
