package hil

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/devicetest"
	"hcp-edge/drivers/modbus"
	"hcp-edge/firmware-sim/plant"
)

// mbpollValue matches one value line of mbpoll's output, e.g. "[6]: 	40755 (-24781)".
var mbpollValue = regexp.MustCompile(`(?m)^\[(\d+)\]:\s+(-?\d+)`)

// mbpoll runs mbpoll with args and returns the values it printed, by reference.
func mbpoll(t *testing.T, args ...string) map[int]int {
	t.Helper()
	bin := devicetest.LookPath(t, "mbpoll", "mbpoll")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mbpoll %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	vals := map[int]int{}
	for _, m := range mbpollValue.FindAllStringSubmatch(string(out), -1) {
		ref, _ := strconv.Atoi(m[1])
		v, _ := strconv.Atoi(m[2])
		vals[ref] = v
	}
	return vals
}

// seq returns vals[first..first+n-1] (mbpoll's 1-based references) as a slice.
func seq(t *testing.T, vals map[int]int, first, n int) []int {
	t.Helper()
	out := make([]int, n)
	for i := range out {
		v, ok := vals[first+i]
		if !ok {
			t.Fatalf("mbpoll printed no reference %d: %v", first+i, vals)
		}
		out[i] = v
	}
	return out
}

// checkFurnaceInputs compares mbpoll's 9 input registers with the plant's.
func checkFurnaceInputs(t *testing.T, p *plant.Plant, got []int) {
	t.Helper()
	want := make([]uint16, plant.NumInputRegs)
	if err := p.FurnaceReadInputs(0, want); err != nil {
		t.Fatal(err)
	}
	// Steady values must match exactly; PV (noise) and uptime (clock) nearly.
	for _, i := range []int{1, 2, 3, 8} {
		if uint16(got[i]) != want[i] {
			t.Errorf("IR %d: mbpoll %d, simulator %d", i, got[i], want[i])
		}
	}
	if d := int16(uint16(got[0])) - int16(want[0]); d < -3 || d > 3 {
		t.Errorf("IR 0 (PV): mbpoll %d, simulator %d", got[0], want[0])
	}
	pv := math.Float32frombits(uint32(uint16(got[4]))<<16 | uint32(uint16(got[5])))
	if math.Abs(float64(pv)-float64(int16(want[0]))/10) > 0.5 {
		t.Errorf("IR 4-5 (float PV, ABCD): mbpoll %v, simulator PV %d", pv, int16(want[0]))
	}
	upGot := uint32(uint16(got[7]))<<16 | uint32(uint16(got[6])) // CDAB
	upWant := uint32(want[7])<<16 | uint32(want[6])
	if upGot > upWant || upWant-upGot > 30 {
		t.Errorf("IR 6-7 (uptime, CDAB): mbpoll %d s, simulator %d s", upGot, upWant)
	}
}

// TestMbpollTCP: mbpoll (libmodbus) reads the simulator's furnace over Modbus
// TCP, writes its setpoint, and reads it back; the write log shows the write.
func TestMbpollTCP(t *testing.T) {
	devicetest.LookPath(t, "mbpoll", "mbpoll")
	s := startRig(t, 1)
	_, port, _ := strings.Cut(s.r.ModbusAddr().String(), ":")
	base := []string{"-m", "tcp", "-p", port, "-1", "-o", "2"}

	ir := seq(t, mbpoll(t, append(base, "-a", "1", "-t", "3", "-r", "1", "-c", "9", "127.0.0.1")...), 1, 9)
	checkFurnaceInputs(t, s.p, ir)

	m := s.mark()
	mbpoll(t, append(base, "-a", "1", "-t", "4", "-r", "1", "127.0.0.1", "7000")...)
	s.expectWrites(m, []w{{"furnace", "tcp", "setpoint", 7000, true}})
	hr := seq(t, mbpoll(t, append(base, "-a", "1", "-t", "4", "-r", "1", "-c", "6", "127.0.0.1")...), 1, 6)
	if fmt.Sprint(hr) != "[7000 0 0 5000 0 12500]" {
		t.Fatalf("holding registers after the write: %v", hr)
	}
	if sp := s.p.Snapshot().Furnace.SetpointC; sp != 700 {
		t.Fatalf("simulator setpoint %v °C", sp)
	}
	// Zero-based addressing (-0) reads the same registers.
	hr0 := seq(t, mbpoll(t, append(base, "-0", "-a", "1", "-t", "4", "-r", "0", "-c", "6", "127.0.0.1")...), 0, 6)
	if fmt.Sprint(hr0) != fmt.Sprint(hr) {
		t.Fatalf("-0 -r 0: %v, want %v", hr0, hr)
	}
}

// TestMbpollRTU: mbpoll reads the furnace (unit 1) and the digital I/O module
// (unit 2, coils and inputs) on the simulator's RS-485 line, a pty, and
// writes the setpoint there.
func TestMbpollRTU(t *testing.T) {
	devicetest.LookPath(t, "mbpoll", "mbpoll")
	s := startRig(t, 1)
	ctx := ctxFor(t)
	// Our driver (over TCP) switches pump and scrubber on first.
	m := s.dio(s.bus(modbus.TransportTCP, time.Second, 1))
	for _, name := range []string{"pump", "scrubber"} {
		if err := s.sw(m, name).Set(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"-m", "rtu", "-b", "19200", "-P", "even", "-1", "-o", "2"}
	line := s.r.RTUPath()

	ir := seq(t, mbpoll(t, append(base, "-a", "1", "-t", "3", "-r", "1", "-c", "9", line)...), 1, 9)
	checkFurnaceInputs(t, s.p, ir)

	coils := seq(t, mbpoll(t, append(base, "-a", "2", "-t", "0", "-r", "1", "-c", "7", line)...), 1, 7)
	if fmt.Sprint(coils) != "[1 0 0 0 0 0 1]" {
		t.Fatalf("coils over RTU: %v, want pump and scrubber on", coils)
	}
	di := seq(t, mbpoll(t, append(base, "-a", "2", "-t", "1", "-r", "1", "-c", "3", line)...), 1, 3)
	sn := s.p.Snapshot()
	want := []int{b2i(sn.DiscreteInputs["door_closed"]), b2i(sn.DiscreteInputs["exhaust_ok"]), b2i(sn.DiscreteInputs["pump_running"])}
	if fmt.Sprint(di) != fmt.Sprint(want) {
		t.Fatalf("discrete inputs over RTU: %v, simulator %v", di, want)
	}

	mk := s.mark()
	mbpoll(t, append(base, "-a", "1", "-t", "4", "-r", "1", line, "6500")...)
	s.expectWrites(mk, []w{{"furnace", "rtu", "setpoint", 6500, true}})
	if sp := s.p.Snapshot().Furnace.SetpointC; sp != 650 {
		t.Fatalf("simulator setpoint %v °C", sp)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pymodbusReply is what testdata/pymodbus_client.py prints.
type pymodbusReply struct {
	IR      []uint16 `json:"ir"`
	HR      []uint16 `json:"hr"`
	PVFloat float64  `json:"pv_float"`
	Coils   []bool   `json:"coils"`
	DI      []bool   `json:"di"`
}

// TestPymodbusClient: Debian's pymodbus reads the simulator as a Modbus TCP
// client — input and holding registers, the float32 PV, coils and inputs —
// after our drivers changed some of them.
func TestPymodbusClient(t *testing.T) {
	py := devicetest.PythonImport(t, "pymodbus.client", "python3-pymodbus")
	s := startRig(t, 1)
	ctx := ctxFor(t)
	bus := s.bus(modbus.TransportTCP, time.Second, 1)
	f := s.furnace(bus)
	m := s.dio(bus)
	if err := f.SetSetpoint(ctx, device.Celsius(321.5)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gate_valve", "h2s_valve"} {
		if err := s.sw(m, name).Set(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := strings.Cut(s.r.ModbusAddr().String(), ":")
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, py, filepath.Join("testdata", "pymodbus_client.py"), host, port).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("pymodbus client: %v\n%s%s", err, out, stderr)
	}
	var got pymodbusReply
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("pymodbus output %q: %v", out, err)
	}
	ir := make([]int, len(got.IR))
	for i, v := range got.IR {
		ir[i] = int(v)
	}
	if len(ir) != 9 {
		t.Fatalf("pymodbus read %d input registers", len(ir))
	}
	checkFurnaceInputs(t, s.p, ir)
	if fmt.Sprint(got.HR) != "[3215 0 0 5000 0 12500]" {
		t.Errorf("holding registers %v", got.HR)
	}
	if truth := s.p.FurnaceTemperature(); math.Abs(got.PVFloat-truth) > 0.5 {
		t.Errorf("float PV %v, simulator %v", got.PVFloat, truth)
	}
	if fmt.Sprint(got.Coils) != "[false true false false true false false]" {
		t.Errorf("coils %v, want gate_valve and h2s_valve on", got.Coils)
	}
	if len(got.DI) != 3 || !got.DI[0] || got.DI[1] || got.DI[2] {
		t.Errorf("discrete inputs %v, want door closed only", got.DI)
	}
	t.Logf("pymodbus read: %s", strings.TrimSpace(string(out)))
}
