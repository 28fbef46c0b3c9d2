package modbus_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
)

// rawTCPServer answers each 12-byte request read on a connection with
// reply(request), raw bytes; it counts the connections it accepted.
func rawTCPServer(t *testing.T, reply func(req []byte) []byte) (addr string, conns func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() {
				defer c.Close()
				req := make([]byte, 12)
				for {
					if _, err := io.ReadFull(c, req); err != nil {
						return
					}
					if _, err := c.Write(reply(req)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String(), func() int { return len(accepted) }
}

// goodReply answers a register read with qty registers holding their
// address.
func goodReply(req []byte) []byte {
	addr, qty := binary.BigEndian.Uint16(req[8:]), binary.BigEndian.Uint16(req[10:])
	out := append([]byte(nil), req[:8]...)
	binary.BigEndian.PutUint16(out[4:], uint16(3+2*qty))
	out = append(out, byte(2*qty))
	for i := range qty {
		out = binary.BigEndian.AppendUint16(out, addr+i)
	}
	return out
}

// The register reads' own reply checks (TCP: transaction id, unit,
// function, byte count): a reply that fails one is a frame error, never
// values, and the connection is dropped (the next read redials and reads
// right). An exception stays an *Exception.
func TestTCPRegisterReplyChecks(t *testing.T) {
	bad := []struct {
		name  string
		spoil func(reply []byte) []byte
	}{
		{"transaction id", func(r []byte) []byte { r[1]++; return r }},
		{"unit", func(r []byte) []byte { r[6]++; return r }},
		{"function", func(r []byte) []byte { r[7] = 0x03; return r }},
		{"byte count", func(r []byte) []byte { r[8] -= 2; return r }},
		{"short data", func(r []byte) []byte {
			r = r[:len(r)-2]
			binary.BigEndian.PutUint16(r[4:], uint16(len(r)-6))
			return r
		}},
		{"exception without its code", func(r []byte) []byte {
			r = append(r[:7], 0x84)
			binary.BigEndian.PutUint16(r[4:], 2)
			return r
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			addr, conns := rawTCPServer(t, func(req []byte) []byte {
				if n.Add(1) == 1 {
					return tc.spoil(goodReply(req))
				}
				return goodReply(req)
			})
			b := tcpBus(t, addr, time.Second, 0)
			ctx := ctxT(t)
			r, err := b.ReadInputRegisters(ctx, 1, 10, 3)
			if !errors.Is(err, device.ErrFrame) || r != nil {
				t.Fatalf("read %v, %v; want ErrFrame", r, err)
			}
			r, err = b.ReadInputRegisters(ctx, 1, 10, 3)
			if err != nil || len(r) != 3 || r[0] != 10 || r[2] != 12 {
				t.Fatalf("after a bad reply: read %v, %v", r, err)
			}
			if c := conns(); c != 2 {
				t.Fatalf("%d connections, want 2 (one redial after the bad reply)", c)
			}
		})
	}
	t.Run("exception", func(t *testing.T) {
		addr, conns := rawTCPServer(t, func(req []byte) []byte {
			out := append([]byte(nil), req[:7]...)
			binary.BigEndian.PutUint16(out[4:], 3)
			return append(out, req[7]|0x80, modbus.ExceptionIllegalAddress)
		})
		b := tcpBus(t, addr, time.Second, 2)
		for range 2 {
			_, err := b.ReadHoldingRegisters(ctxT(t), 1, 7, 2)
			var ex *modbus.Exception
			if !errors.As(err, &ex) || ex.Code != modbus.ExceptionIllegalAddress || ex.Function != 3 || ex.Address != 7 {
				t.Fatalf("error %v, want exception 02 of fc 03 addr 7", err)
			}
		}
		if c := conns(); c != 1 {
			t.Fatalf("%d connections, want 1 (an exception is an answer)", c)
		}
	})
}
