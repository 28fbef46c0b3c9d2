package modbus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/modbus/modbustest"
)

// rig returns an in-memory device with units 1 and 2 shaped like the rig's
// furnace controller and digital I/O module.
func rig() *modbustest.Server {
	return modbustest.NewServer(map[byte]*modbustest.Unit{
		1: {
			Holding: []uint16{250, 0, 0, 5000, 0, 12500},
			Input:   []uint16{215, 215, 0, 0, 0x41AC, 0, 60, 0, 4},
		},
		2: {
			Coils:    make([]bool, 7),
			Discrete: []bool{true, false, true},
		},
	})
}

func memBus(t *testing.T, h modbus.Handler, retries int) *modbus.Bus {
	t.Helper()
	o := modbus.DefaultOpts()
	o.Retries = retries
	o.Timeout = 2 * time.Second
	b, err := modbus.NewInMemory(h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestInMemoryOperations(t *testing.T) {
	srv := rig()
	b := memBus(t, srv, 0)
	ctx := ctxT(t)
	tests := []struct {
		name string
		run  func() (any, error)
		want string
	}{
		{"read holding", func() (any, error) { return b.ReadHoldingRegisters(ctx, 1, 0, 6) }, "[250 0 0 5000 0 12500]"},
		{"read input", func() (any, error) { return b.ReadInputRegisters(ctx, 1, 3, 2) }, "[0 16812]"},
		{"write register", func() (any, error) {
			if err := b.WriteSingleRegister(ctx, 1, 0, 7000); err != nil {
				return nil, err
			}
			return b.ReadHoldingRegisters(ctx, 1, 0, 1)
		}, "[7000]"},
		{"write registers", func() (any, error) {
			if err := b.WriteMultipleRegisters(ctx, 1, 1, []uint16{10, 1}); err != nil {
				return nil, err
			}
			return b.ReadHoldingRegisters(ctx, 1, 1, 2)
		}, "[10 1]"},
		{"read discrete", func() (any, error) { return b.ReadDiscreteInputs(ctx, 2, 0, 3) }, "[true false true]"},
		{"write coil", func() (any, error) {
			if err := b.WriteSingleCoil(ctx, 2, 6, true); err != nil {
				return nil, err
			}
			return b.ReadCoils(ctx, 2, 0, 7)
		}, "[false false false false false false true]"},
		{"write coils", func() (any, error) {
			if err := b.WriteMultipleCoils(ctx, 2, 0, []bool{true, true, false, false, false, false, false, false, true}[:7]); err != nil {
				return nil, err
			}
			return b.ReadCoils(ctx, 2, 0, 7)
		}, "[true true false false false false false]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.run()
			if err != nil {
				t.Fatal(err)
			}
			if s := fmtAny(got); s != tt.want {
				t.Fatalf("got %s, want %s", s, tt.want)
			}
		})
	}
}

func TestExceptionIsTypedAndNotRetried(t *testing.T) {
	srv := rig()
	b := memBus(t, srv, 3)
	ctx := ctxT(t)
	tests := []struct {
		name string
		run  func() error
		fc   byte
		code byte
	}{
		{"address outside map", func() error { _, err := b.ReadHoldingRegisters(ctx, 1, 4, 3); return err }, 3, modbus.ExceptionIllegalAddress},
		{"coil outside map", func() error { return b.WriteSingleCoil(ctx, 2, 7, true) }, 5, modbus.ExceptionIllegalAddress},
		{"function not served", func() error { _, err := b.ReadCoils(ctx, 1, 0, 1); return err }, 1, modbus.ExceptionIllegalAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Requests(tt.fc)
			err := tt.run()
			var ex *modbus.Exception
			if !errors.As(err, &ex) {
				t.Fatalf("error %v is not a *modbus.Exception", err)
			}
			if !errors.Is(err, device.ErrRejected) {
				t.Fatalf("error %v does not wrap ErrRejected", err)
			}
			if ex.Function != tt.fc || ex.Code != tt.code {
				t.Fatalf("exception fc %d code %d, want fc %d code %d", ex.Function, ex.Code, tt.fc, tt.code)
			}
			if n := srv.Requests(tt.fc) - before; n != 1 {
				t.Fatalf("%d requests sent, want 1 (exceptions are not retried)", n)
			}
		})
	}
}

// flaky fails the first n requests (no answer), then delegates.
type flaky struct {
	n     atomic.Int32
	calls atomic.Int32
	h     modbus.Handler
}

func (f *flaky) ServeModbus(ctx context.Context, unit byte, req modbus.PDU) (modbus.PDU, error) {
	f.calls.Add(1)
	if f.n.Add(-1) >= 0 {
		return modbus.PDU{}, errors.New("dropped")
	}
	return f.h.ServeModbus(ctx, unit, req)
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		retries   int
		failures  int32
		op        func(context.Context, *modbus.Bus) error
		wantErr   error
		wantCalls int32
	}{
		{"read recovers", 2, 2, readHR0, nil, 3},
		{"read gives up", 1, 5, readHR0, device.ErrTimeout, 2},
		{"single register write retried", 2, 1, func(ctx context.Context, b *modbus.Bus) error {
			return b.WriteSingleRegister(ctx, 1, 0, 300)
		}, nil, 2},
		{"single coil write retried", 2, 1, func(ctx context.Context, b *modbus.Bus) error {
			return b.WriteSingleCoil(ctx, 2, 0, true)
		}, nil, 2},
		{"multiple register write not retried", 2, 1, func(ctx context.Context, b *modbus.Bus) error {
			return b.WriteMultipleRegisters(ctx, 1, 0, []uint16{300, 0})
		}, device.ErrTimeout, 1},
		{"multiple coil write not retried", 2, 1, func(ctx context.Context, b *modbus.Bus) error {
			return b.WriteMultipleCoils(ctx, 2, 0, []bool{true})
		}, device.ErrTimeout, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &flaky{h: rig()}
			f.n.Store(tt.failures)
			b := memBus(t, f, tt.retries)
			err := tt.op(ctxT(t), b)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "unit ") {
				t.Fatalf("error %q does not name the unit", err)
			}
			if got := f.calls.Load(); got != tt.wantCalls {
				t.Fatalf("%d requests, want %d", got, tt.wantCalls)
			}
		})
	}
}

func readHR0(ctx context.Context, b *modbus.Bus) error {
	_, err := b.ReadHoldingRegisters(ctx, 1, 0, 1)
	return err
}

func TestCallerDeadlineReachesTheDevice(t *testing.T) {
	var sawDeadline atomic.Bool
	h := modbus.HandlerFunc(func(ctx context.Context, unit byte, req modbus.PDU) (modbus.PDU, error) {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < time.Second {
			sawDeadline.Store(true)
		}
		<-ctx.Done()
		return modbus.PDU{}, ctx.Err()
	})
	o := modbus.DefaultOpts()
	o.Timeout = time.Minute
	b, err := modbus.NewInMemory(h, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = b.ReadHoldingRegisters(ctx, 1, 0, 1)
	if !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if !sawDeadline.Load() {
		t.Fatal("the caller's deadline did not reach the transport")
	}
}

func TestConcurrentUnitsInMemory(t *testing.T) {
	b := memBus(t, rig(), 0)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
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

func TestClosedBus(t *testing.T) {
	b := memBus(t, rig(), 0)
	_ = b.Close()
	if _, err := b.ReadHoldingRegisters(ctxT(t), 1, 0, 1); !errors.Is(err, device.ErrClosed) {
		t.Fatalf("error %v, want ErrClosed", err)
	}
}

func TestBadQuantityRefusedBeforeSending(t *testing.T) {
	srv := rig()
	b := memBus(t, srv, 0)
	if _, err := b.ReadHoldingRegisters(ctxT(t), 1, 0, 126); !errors.Is(err, device.ErrOutOfRange) {
		t.Fatalf("error %v, want ErrOutOfRange", err)
	}
	if srv.Requests(3) != 0 {
		t.Fatal("request sent")
	}
}

func TestOptsValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*modbus.Opts)
		ok   bool
	}{
		{"default", func(*modbus.Opts) {}, true},
		{"rtu", func(o *modbus.Opts) { o.Transport = modbus.TransportRTU; o.Address = "/dev/ttyUSB0" }, true},
		{"bad transport", func(o *modbus.Opts) { o.Transport = "udp" }, false},
		{"no address", func(o *modbus.Opts) { o.Address = "" }, false},
		{"zero timeout", func(o *modbus.Opts) { o.Timeout = 0 }, false},
		{"negative retries", func(o *modbus.Opts) { o.Retries = -1 }, false},
		{"bad parity", func(o *modbus.Opts) { o.Transport = modbus.TransportRTU; o.Parity = "X" }, false},
		{"bad stop bits", func(o *modbus.Opts) { o.Transport = modbus.TransportRTU; o.StopBits = 3 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := modbus.DefaultOpts()
			tt.mod(&o)
			if err := o.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
