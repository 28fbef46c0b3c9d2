package modbus_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/modbus/modbustest"
)

func tcpServer(t testing.TB, h modbus.Handler) *modbustest.TCPServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := modbustest.ServeTCP(ln, h)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tcpBus(t testing.TB, addr string, timeout time.Duration, retries int) *modbus.Bus {
	t.Helper()
	o := modbus.DefaultOpts()
	o.Address = addr
	o.Timeout = timeout
	o.Retries = retries
	b, err := modbus.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestTCPRoundTrip(t *testing.T) {
	srv := tcpServer(t, rig())
	b := tcpBus(t, srv.Addr(), 2*time.Second, 0)
	ctx := ctxT(t)
	if err := b.WriteSingleRegister(ctx, 1, 0, 6500); err != nil {
		t.Fatal(err)
	}
	r, err := b.ReadHoldingRegisters(ctx, 1, 0, 6)
	if err != nil || r[0] != 6500 || r[5] != 12500 {
		t.Fatalf("read %v, %v", r, err)
	}
	_, err = b.ReadInputRegisters(ctx, 1, 8, 2)
	var ex *modbus.Exception
	if !errors.As(err, &ex) || ex.Code != modbus.ExceptionIllegalAddress || ex.Unit != 1 || ex.Address != 8 {
		t.Fatalf("error %v, want exception 02 for unit 1 addr 8", err)
	}
	// An exception is an answer: the connection stays.
	if _, err := b.ReadInputRegisters(ctx, 1, 0, 9); err != nil {
		t.Fatal(err)
	}
	if n := srv.Connections(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// Regression (goburrow TCP): after a timeout the late reply stayed in the
// socket and every later transaction read the previous answer. The bus must
// close the connection, so the next call redials with an empty buffer.
func TestTCPLateReplyAfterTimeout(t *testing.T) {
	dev := rig()
	var slowOnce atomic.Bool
	h := modbus.HandlerFunc(func(ctx context.Context, unit byte, req modbus.PDU) (modbus.PDU, error) {
		if req.Function == 4 && !slowOnce.Swap(true) {
			time.Sleep(300 * time.Millisecond) // answers after the client gave up
		}
		return dev.ServeModbus(ctx, unit, req)
	})
	srv := tcpServer(t, h)
	b := tcpBus(t, srv.Addr(), 100*time.Millisecond, 0)
	ctx := ctxT(t)
	if _, err := b.ReadInputRegisters(ctx, 1, 0, 9); !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	time.Sleep(400 * time.Millisecond) // let the late reply arrive
	for range 3 {
		r, err := b.ReadHoldingRegisters(ctx, 1, 0, 1)
		if err != nil || len(r) != 1 || r[0] != 250 {
			t.Fatalf("after a timeout: read %v, %v (late reply misread?)", r, err)
		}
	}
	if n := srv.Connections(); n != 2 {
		t.Fatalf("%d connections, want 2 (one redial after the timeout)", n)
	}
}

// Regression (goburrow TCP): it never reconnected after a broken connection.
func TestTCPRedialsAfterServerRestart(t *testing.T) {
	dev := rig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	s1 := modbustest.ServeTCP(ln, dev)
	b := tcpBus(t, addr, time.Second, 1)
	ctx := ctxT(t)
	if _, err := b.ReadHoldingRegisters(ctx, 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	_ = s1.Close()
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot rebind %s: %v", addr, err)
	}
	s2 := modbustest.ServeTCP(ln2, dev)
	defer s2.Close()
	if _, err := b.ReadHoldingRegisters(ctx, 1, 0, 1); err != nil {
		t.Fatalf("after a server restart: %v", err)
	}
}

func TestTCPContextCancelInterruptsRead(t *testing.T) {
	release := make(chan struct{})
	h := modbus.HandlerFunc(func(ctx context.Context, unit byte, req modbus.PDU) (modbus.PDU, error) {
		<-release
		return modbus.PDU{}, errors.New("no answer")
	})
	srv := tcpServer(t, h)
	defer close(release)
	b := tcpBus(t, srv.Addr(), time.Minute, 3)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := b.ReadHoldingRegisters(ctx, 1, 0, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

func TestTCPDialFailureIsTimeoutOrIOError(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	_ = ln.Close()
	b := tcpBus(t, addr, 200*time.Millisecond, 0)
	_, err := b.ReadHoldingRegisters(ctxT(t), 1, 0, 1)
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	var ex *modbus.Exception
	if errors.As(err, &ex) {
		t.Fatalf("dial failure reported as exception: %v", err)
	}
}

// benchAddr is the Modbus TCP server the benchmarks use: HCP_BENCH_MODBUS_ADDR
// (e.g. the simulator at 127.0.0.1:5020, unit 1 with ≥ 6 holding registers),
// or an in-test server.
func benchAddr(b *testing.B) string {
	if a := os.Getenv("HCP_BENCH_MODBUS_ADDR"); a != "" {
		return a
	}
	return tcpServer(b, rig()).Addr()
}

func BenchmarkTCPReadHolding(b *testing.B) {
	bus := tcpBus(b, benchAddr(b), 2*time.Second, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bus.ReadHoldingRegisters(ctx, 1, 0, 6); err != nil {
			b.Fatal(err)
		}
	}
}
