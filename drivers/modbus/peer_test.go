package modbus_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/devicetest"
	"hcp-edge/drivers/modbus"
)

// pymodbus starts testdata/pymodbus_server.py with args and stops it at the
// end of the test.
func pymodbus(t *testing.T, args ...string) {
	t.Helper()
	py := devicetest.PythonImport(t, "pymodbus.server", "python3-pymodbus")
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", "pymodbus_server.py")}, args...)...)
	out := &limitedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("pymodbus output:\n%s", out.String())
		}
	})
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// exercise reads and writes the rig map served by a foreign server.
func exercise(t *testing.T, b *modbus.Bus) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hr, err := b.ReadHoldingRegisters(ctx, 1, 0, 6)
	if err != nil || fmt.Sprint(hr) != "[250 0 0 5000 0 12500]" {
		t.Fatalf("holding %v, %v", hr, err)
	}
	pv, err := b.Read(ctx, 1, modbus.RegisterSpec{Table: modbus.Input, Address: 0, Type: modbus.Int16, Scale: 0.1})
	if err != nil || pv != 21.5 {
		t.Fatalf("PV %v, %v", pv, err)
	}
	pvf, err := b.Read(ctx, 1, modbus.RegisterSpec{Table: modbus.Input, Address: 4, Type: modbus.Float32})
	if err != nil || pvf != 21.5 {
		t.Fatalf("float PV %v, %v", pvf, err)
	}
	up, err := b.Read(ctx, 1, modbus.RegisterSpec{Table: modbus.Input, Address: 6, Type: modbus.Uint32, WordOrder: modbus.LowWordFirst})
	if err != nil || up != 0x00010002 {
		t.Fatalf("uptime %v, %v", up, err)
	}
	if err := b.Write(ctx, 1, modbus.RegisterSpec{Table: modbus.Holding, Type: modbus.Int16, Scale: 0.1}, 700); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteMultipleRegisters(ctx, 1, 1, []uint16{100, 1}); err != nil {
		t.Fatal(err)
	}
	if hr, err = b.ReadHoldingRegisters(ctx, 1, 0, 3); err != nil || fmt.Sprint(hr) != "[7000 100 1]" {
		t.Fatalf("after writes: %v, %v", hr, err)
	}
	if err := b.WriteSingleCoil(ctx, 2, 6, true); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteMultipleCoils(ctx, 2, 0, []bool{true, false, true}); err != nil {
		t.Fatal(err)
	}
	co, err := b.ReadCoils(ctx, 2, 0, 7)
	if err != nil || fmt.Sprint(co) != "[true false true false false false true]" {
		t.Fatalf("coils %v, %v", co, err)
	}
	di, err := b.ReadDiscreteInputs(ctx, 2, 0, 3)
	if err != nil || fmt.Sprint(di) != "[true false true]" {
		t.Fatalf("inputs %v, %v", di, err)
	}
	_, err = b.ReadHoldingRegisters(ctx, 1, 100, 2)
	var ex *modbus.Exception
	if !errors.As(err, &ex) || !errors.Is(err, device.ErrRejected) {
		t.Fatalf("read outside the map: %v, want a Modbus exception", err)
	}
	t.Logf("pymodbus exception for an address outside the map: %v", err)
}

func TestPeerPymodbusTCP(t *testing.T) {
	addr := freePort(t)
	host, port, _ := net.SplitHostPort(addr)
	pymodbus(t, "tcp", host, port)
	// Wait for the server to listen.
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pymodbus did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	exercise(t, tcpBus(t, addr, 2*time.Second, 1))
}

func TestPeerPymodbusRTU(t *testing.T) {
	socat := devicetest.LookPath(t, "socat", "socat")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "slave"), filepath.Join(dir, "master")
	cmd := exec.Command(socat, "pty,raw,echo=0,link="+a, "pty,raw,echo=0,link="+b)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, err := filepath.EvalSymlinks(b); err == nil {
			if _, err := filepath.EvalSymlinks(a); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("socat made no ptys")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pymodbus(t, "rtu", a)
	time.Sleep(1500 * time.Millisecond) // python start-up; the bus retries anyway
	o := modbus.DefaultOpts()
	o.Transport, o.Address, o.Timeout, o.Retries = modbus.TransportRTU, b, time.Second, 3
	bus, err := modbus.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	exercise(t, bus)
}
