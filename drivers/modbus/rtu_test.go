package modbus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
)

// step is one write of the scripted responder, after a pause.
type step struct {
	pause time.Duration
	data  []byte
}

// responder is a tiny scripted RTU slave on the master side of a pty. script
// returns the writes that answer one request; nil means "no answer".
type responder struct {
	master *os.File
	script func(req []byte) []step
	seen   atomic.Int32
	wg     sync.WaitGroup
}

// rtuFrame is the normal reply of dev to an RTU request, as one write.
func rtuFrame(dev modbus.Handler, req []byte) []byte {
	resp, err := dev.ServeModbus(context.Background(), req[0], modbus.PDU{Function: req[1], Data: req[2 : len(req)-2]})
	if err != nil {
		return nil
	}
	return modbus.AppendCRC(append([]byte{req[0], resp.Function}, resp.Data...))
}

func startResponder(t *testing.T, script func(req []byte) []step) (*responder, string) {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		devicetestMissingPty(t, err)
	}
	r := &responder{master: master, script: script}
	r.wg.Add(1)
	go r.run()
	// The master fd blocks in read(2) and Close does not interrupt it;
	// closing the last slave fd (the bus closes its own first, being
	// registered later) makes the read fail with EIO.
	t.Cleanup(func() {
		_ = slave.Close()
		r.wg.Wait()
		_ = master.Close()
	})
	return r, slave.Name()
}

func (r *responder) run() {
	defer r.wg.Done()
	var buf []byte
	chunk := make([]byte, 512)
	for {
		n, err := r.master.Read(chunk)
		if err != nil {
			return
		}
		buf = append(buf, chunk[:n]...)
		for {
			l := requestLen(buf)
			if l == 0 || len(buf) < l {
				break
			}
			req := append([]byte(nil), buf[:l]...)
			buf = buf[l:]
			r.seen.Add(1)
			for _, s := range r.script(req) {
				time.Sleep(s.pause)
				if _, err := r.master.Write(s.data); err != nil {
					return
				}
			}
		}
	}
}

func requestLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case 15, 16:
		if len(b) < 7 {
			return 0
		}
		return 9 + int(b[6])
	}
	return 8
}

func rtuBus(t *testing.T, path string, timeout time.Duration, retries int) *modbus.Bus {
	t.Helper()
	o := modbus.DefaultOpts()
	o.Transport = modbus.TransportRTU
	o.Address = path
	o.Timeout = timeout
	o.Retries = retries
	b, err := modbus.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func normal(dev modbus.Handler) func([]byte) []step {
	return func(req []byte) []step {
		if f := rtuFrame(dev, req); f != nil {
			return []step{{data: f}}
		}
		return nil
	}
}

func TestRTURoundTrip(t *testing.T) {
	_, path := startResponder(t, normal(rig()))
	b := rtuBus(t, path, time.Second, 0)
	ctx := ctxT(t)
	if err := b.WriteSingleRegister(ctx, 1, 1, 50); err != nil {
		t.Fatal(err)
	}
	r, err := b.ReadHoldingRegisters(ctx, 1, 0, 6)
	if err != nil || r[1] != 50 || r[3] != 5000 {
		t.Fatalf("holding %v, %v", r, err)
	}
	if err := b.WriteSingleCoil(ctx, 2, 6, true); err != nil {
		t.Fatal(err)
	}
	c, err := b.ReadCoils(ctx, 2, 0, 7)
	if err != nil || !c[6] || c[0] {
		t.Fatalf("coils %v, %v", c, err)
	}
	if err := b.WriteMultipleRegisters(ctx, 1, 0, []uint16{1000, 20}); err != nil {
		t.Fatal(err)
	}
	v, err := b.Read(ctx, 1, modbus.RegisterSpec{Table: modbus.Input, Address: 6, Type: modbus.Uint32, WordOrder: modbus.LowWordFirst})
	if err != nil || v != 60 {
		t.Fatalf("uptime %v, %v", v, err)
	}
}

// Regression (goburrow issue #81): an exception reply that arrives in two
// pieces was misread as a CRC error. Normal replies split byte by byte too.
func TestRTUSplitReplies(t *testing.T) {
	dev := rig()
	_, path := startResponder(t, func(req []byte) []step {
		f := rtuFrame(dev, req)
		if f == nil {
			return nil
		}
		if f[1]&0x80 != 0 {
			return []step{{data: f[:2]}, {pause: 30 * time.Millisecond, data: f[2:]}}
		}
		var s []step
		for i := range f {
			s = append(s, step{pause: time.Millisecond, data: f[i : i+1]})
		}
		return s
	})
	b := rtuBus(t, path, time.Second, 0)
	ctx := ctxT(t)
	_, err := b.ReadHoldingRegisters(ctx, 1, 5, 2)
	var ex *modbus.Exception
	if !errors.As(err, &ex) || ex.Code != modbus.ExceptionIllegalAddress {
		t.Fatalf("split exception: %v (want exception 02, not a checksum error)", err)
	}
	if errors.Is(err, device.ErrChecksum) {
		t.Fatalf("split exception read as a CRC error: %v", err)
	}
	r, err := b.ReadInputRegisters(ctx, 1, 0, 9)
	if err != nil || r[0] != 215 || r[8] != 4 {
		t.Fatalf("byte-by-byte reply: %v, %v", r, err)
	}
}

func TestRTUBadCRCIsChecksumErrorAndRetried(t *testing.T) {
	dev := rig()
	resp, path := startResponder(t, func(req []byte) []step {
		f := rtuFrame(dev, req)
		f[len(f)-1] ^= 0xFF
		return []step{{data: f}}
	})
	b := rtuBus(t, path, 500*time.Millisecond, 1)
	_, err := b.ReadHoldingRegisters(ctxT(t), 1, 0, 1)
	if !errors.Is(err, device.ErrChecksum) {
		t.Fatalf("error %v, want ErrChecksum", err)
	}
	if n := resp.seen.Load(); n != 2 {
		t.Fatalf("%d requests, want 2 (one retry)", n)
	}
}

func TestRTUSilentUnitTimesOutAndLineRecovers(t *testing.T) {
	_, path := startResponder(t, normal(rig()))
	// The shipped timeout (1 s), not a shorter one: the live unit's answer
	// must not miss it on a busy machine (a 150 ms timeout did).
	b := rtuBus(t, path, time.Second, 0)
	ctx := ctxT(t)
	_, err := b.ReadHoldingRegisters(ctx, 7, 0, 1) // unit 7 is not on the line
	if !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if r, err := b.ReadHoldingRegisters(ctx, 1, 0, 1); err != nil || r[0] != 250 {
		t.Fatalf("after a timeout: %v, %v", r, err)
	}
}

// A reply that arrives after the timeout must not be taken as the answer to
// the next request.
func TestRTULateReplyIsDrained(t *testing.T) {
	dev := rig()
	var first atomic.Bool
	_, path := startResponder(t, func(req []byte) []step {
		f := rtuFrame(dev, req)
		if !first.Swap(true) {
			return []step{{pause: 200 * time.Millisecond, data: f}}
		}
		return []step{{data: f}}
	})
	o := modbus.DefaultOpts()
	o.Transport, o.Address, o.Timeout, o.Retries = modbus.TransportRTU, path, 100*time.Millisecond, 0
	o.FrameGap = 150 * time.Millisecond
	b, err := modbus.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := ctxT(t)
	if _, err := b.ReadInputRegisters(ctx, 1, 0, 1); !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	r, err := b.ReadHoldingRegisters(ctx, 1, 5, 1)
	if err != nil || r[0] != 12500 {
		t.Fatalf("after a late reply: %v, %v", r, err)
	}
}

// A late reply that comes after the drain (a loaded host, a slow unit) is
// another unit's or function's reply, not the answer: it is skipped, and
// the answer that follows within the timeout is read. Also when both come
// in one write.
func TestRTULateReplyAfterTheDrainIsSkipped(t *testing.T) {
	for _, oneWrite := range []bool{false, true} {
		t.Run(fmt.Sprintf("one write %v", oneWrite), func(t *testing.T) {
			dev := rig()
			late := rtuFrame(dev, modbus.AppendCRC([]byte{1, 0x04, 0, 0, 0, 1}))  // an input register
			other := rtuFrame(dev, modbus.AppendCRC([]byte{2, 0x02, 0, 0, 0, 3})) // another unit's inputs
			var n atomic.Int32
			_, path := startResponder(t, func(req []byte) []step {
				f := rtuFrame(dev, req)
				if n.Add(1) == 1 {
					if oneWrite {
						return []step{{data: append(append(append([]byte{}, late...), other...), f...)}}
					}
					return []step{{data: late}, {pause: 5 * time.Millisecond, data: other}, {pause: 5 * time.Millisecond, data: f}}
				}
				return []step{{data: f}}
			})
			b := rtuBus(t, path, time.Second, 0)
			ctx := ctxT(t)
			r, err := b.ReadHoldingRegisters(ctx, 1, 5, 1)
			if err != nil || r[0] != 12500 {
				t.Fatalf("behind a late reply: %v, %v", r, err)
			}
			if r, err := b.ReadHoldingRegisters(ctx, 1, 5, 1); err != nil || r[0] != 12500 {
				t.Fatalf("the next exchange: %v, %v", r, err)
			}
		})
	}
}

// Regression (goburrow RTU handler not goroutine-safe): two unit ids on one
// line, used from several goroutines, never see each other's replies.
func TestRTUConcurrentUnits(t *testing.T) {
	_, path := startResponder(t, normal(rig()))
	b := rtuBus(t, path, time.Second, 0)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if i%2 == 0 {
					r, err := b.ReadInputRegisters(ctx, 1, 0, 1)
					if err != nil || r[0] != 215 {
						errs <- errors.Join(err, errors.New("unit 1 misread"))
						return
					}
				} else {
					d, err := b.ReadDiscreteInputs(ctx, 2, 0, 3)
					if err != nil || !d[0] || d[1] || !d[2] {
						errs <- errors.Join(err, errors.New("unit 2 misread"))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestRTUBroadcastRefused(t *testing.T) {
	_, path := startResponder(t, normal(rig()))
	b := rtuBus(t, path, time.Second, 0)
	if err := b.WriteSingleCoil(ctxT(t), 0, 0, true); !errors.Is(err, device.ErrOutOfRange) {
		t.Fatalf("error %v, want ErrOutOfRange", err)
	}
}
