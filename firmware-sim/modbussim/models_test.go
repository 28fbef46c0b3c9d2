package modbussim

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// These tests hold the real controller models to their manual excerpts
// (configs/manuals/eurotherm-3200.md, configs/manuals/adam-6052.md) over
// real Modbus TCP and RTU.

func newModelPlant(t testing.TB, fm plant.FurnaceModel, dm plant.DIOModel) *plant.Plant {
	t.Helper()
	p, err := plant.New(plant.Opts{FurnaceModel: fm, DIOModel: dm, RelayEnergised: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// writeMulti is an FC 16 request writing words from addr.
func writeMulti(addr uint16, words ...uint16) []byte {
	b := pdu(FCWriteMultipleRegs, addr, uint16(len(words)))
	b = append(b, byte(2*len(words)))
	for _, w := range words {
		b = binary.BigEndian.AppendUint16(b, w)
	}
	return b
}

func f32(v float32) (hi, lo uint16) {
	b := math.Float32bits(v)
	return uint16(b >> 16), uint16(b)
}

func TestEurothermOverTCP(t *testing.T) {
	p := newModelPlant(t, plant.FurnaceEurotherm3200, plant.DIOSim)
	s := startTCP(t, p)
	c := dialTCP(t, s.Addr().String())
	rmHi, rmLo := f32(452.5)
	tests := []struct {
		name string
		req  []byte
		want []byte
	}{
		{"PV at 1 (FC 03), 25.0 °C as 250", pdu(FCReadHolding, 1, 1), []byte{3, 2, 0, 250}},
		{"PV at 1 (FC 04 reads the same table)", pdu(FCReadInput, 1, 1), []byte{4, 2, 0, 250}},
		{"PV, TG.SP, MAN.OP, WRK.OP, WKG.SP in one read", pdu(FCReadHolding, 1, 5), []byte{3, 10, 0, 250, 0, 250, 0, 0, 0, 0, 0, 250}},
		{"PV as a float at 0x8002, high word first", pdu(FCReadHolding, 0x8002, 2), []byte{3, 4, 0x41, 0xC8, 0, 0}},
		{"power-on: manual (273 = 1)", pdu(FCReadHolding, plant.EuroAutoManual, 1), []byte{3, 2, 0, 1}},
		{"power-on: status manual bit 4", pdu(FCReadHolding, plant.EuroStatus, 1), []byte{3, 2, 0, 0x10}},
		{"write target setpoint 700.0", pdu(FCWriteSingleReg, 2, 7000), pdu(FCWriteSingleReg, 2, 7000)},
		{"read it back", pdu(FCReadHolding, 2, 1), []byte{3, 2, 0x1B, 0x58}},
		{"write the comms setpoint as a float", writeMulti(0x8000+2*26, rmHi, rmLo), pdu(FCWriteMultipleRegs, 0x8000+2*26, 2)},
		{"comms setpoint reads 452.5 as 4525", pdu(FCReadHolding, 26, 1), []byte{3, 2, 0x11, 0xAD}},
		{"select the remote setpoint", pdu(FCWriteSingleReg, 276, 1), pdu(FCWriteSingleReg, 276, 1)},
		{"setpoint rate 10.0 °C/min", pdu(FCWriteSingleReg, 35, 100), pdu(FCWriteSingleReg, 35, 100)},
		{"FC 01 is not a 3200 function", pdu(FCReadCoils, 0, 1), []byte{0x81, 1}},
		{"FC 05 is not a 3200 function", pdu(FCWriteSingleCoil, 0, 0xFF00), []byte{0x85, 1}},
		{"address 0 is not in the map", pdu(FCReadHolding, 0, 1), []byte{0x83, 2}},
		{"a read across the gap after 5", pdu(FCReadHolding, 1, 6), []byte{0x83, 2}},
		{"instrument mode 199 is not emulated", pdu(FCReadInput, 199, 1), []byte{0x84, 2}},
		{"PV is read only", pdu(FCWriteSingleReg, 1, 300), []byte{0x86, 2}},
		{"working output is read only", writeMulti(3, 0, 0), []byte{0x90, 2}},
		{"target setpoint above the range", pdu(FCWriteSingleReg, 2, 12001), []byte{0x86, 3}},
		{"A-M 2 refused", pdu(FCWriteSingleReg, 273, 2), []byte{0x86, 3}},
		{"a float read not on a parameter boundary", pdu(FCReadHolding, 0x8003, 2), []byte{0x83, 2}},
		{"quantity 0", pdu(FCReadHolding, 1, 0), []byte{0x83, 3}},
		{"the target setpoint is unchanged by the refusals", pdu(FCReadHolding, 2, 1), []byte{3, 2, 0x1B, 0x58}},
	}
	for _, tt := range tests {
		got := c.must(1, tt.req)
		if string(got) != string(tt.want) {
			t.Errorf("%s: reply % x, want % x", tt.name, got, tt.want)
		}
	}
	counts := map[string]int{}
	for _, w := range p.Writes(0) {
		if w.Device == "furnace" {
			counts[w.Channel]++
		}
	}
	if counts["target_setpoint"] != 2 || counts["comms_setpoint"] != 1 {
		t.Fatalf("write log: target_setpoint %d (want 2: one accepted, one refused), comms_setpoint %d (want 1)", counts["target_setpoint"], counts["comms_setpoint"])
	}
	// the silent and corrupt faults name the device, whatever its model
	if err := p.Inject(plant.FaultSilent, "furnace"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.do(1, pdu(FCReadHolding, 1, 1), 200*time.Millisecond); err == nil {
		t.Fatal("the silent Eurotherm answered")
	}
}

func TestADAMOverTCP(t *testing.T) {
	p := newModelPlant(t, plant.FurnaceSim, plant.DIOADAM6052)
	s := startTCP(t, p)
	c := dialTCP(t, s.Addr().String())
	tests := []struct {
		name string
		req  []byte
		want []byte
	}{
		{"DO 0..7 (00017..00024) off at power-on", pdu(FCReadCoils, 16, 8), []byte{1, 1, 0}},
		{"DO 0 on (pump)", pdu(FCWriteSingleCoil, 16, 0xFF00), pdu(FCWriteSingleCoil, 16, 0xFF00)},
		{"DO 0..6 by FC 15: pump and scrubber", append(pdu(FCWriteMultipleCoils, 16, 7), 1, 0x41), pdu(FCWriteMultipleCoils, 16, 7)},
		{"DO read back", pdu(FCReadCoils, 16, 8), []byte{1, 1, 0x41}},
		{"DI 0..2 by FC 02: door closed, exhaust not yet, pump running", pdu(FCReadDiscreteInputs, 0, 3), []byte{2, 1, 0x05}},
		{"DI 0..7 by FC 01 (00001..00008)", pdu(FCReadCoils, 0, 8), []byte{1, 1, 0x05}},
		{"DI word 40301", pdu(FCReadHolding, 300, 1), []byte{3, 2, 0, 0x05}},
		{"DO word 40303", pdu(FCReadHolding, 302, 1), []byte{3, 2, 0, 0x41}},
		{"module name 40211..40212", pdu(FCReadInput, 210, 2), []byte{4, 4, 0x60, 0x52, 0, 0}},
		{"DO word write: all off", pdu(FCWriteSingleReg, 302, 0), pdu(FCWriteSingleReg, 302, 0)},
		{"all off read back", pdu(FCReadCoils, 16, 8), []byte{1, 1, 0}},
		{"write to an input", pdu(FCWriteSingleCoil, 0, 0xFF00), []byte{0x85, 2}},
		{"FC 02 on the outputs", pdu(FCReadDiscreteInputs, 16, 1), []byte{0x82, 2}},
		{"the gap 8..15", pdu(FCReadCoils, 8, 1), []byte{0x81, 2}},
		{"past DO 7", pdu(FCReadCoils, 23, 2), []byte{0x81, 2}},
		{"coil value not 0xFF00/0x0000", pdu(FCWriteSingleCoil, 16, 0x1234), []byte{0x85, 3}},
		{"DO word with bits 8..15", pdu(FCWriteSingleReg, 302, 0x100), []byte{0x86, 3}},
		{"register 40001 not emulated", pdu(FCReadHolding, 0, 1), []byte{0x83, 2}},
		{"function 0x2B", []byte{0x2B, 0x0E, 1, 0}, []byte{0xAB, 1}},
	}
	for _, tt := range tests {
		got := c.must(2, tt.req)
		if string(got) != string(tt.want) {
			t.Errorf("%s: reply % x, want % x", tt.name, got, tt.want)
		}
	}
	// the furnace on unit 1 is still the sim model
	if got := c.must(1, pdu(FCReadInput, 0, 1)); string(got) != string([]byte{4, 2, 0, 250}) {
		t.Fatalf("sim furnace IR 0: % x", got)
	}
}

func TestModelsOverRTU(t *testing.T) {
	p := newModelPlant(t, plant.FurnaceEurotherm3200, plant.DIOADAM6052)
	c := startRTU(t, p)
	got, err := c.do(rtuADU(1, pdu(FCReadHolding, 1, 1)), 7, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := rtuADU(1, []byte{3, 2, 0, 250}); string(got) != string(want) {
		t.Fatalf("Eurotherm PV over RTU: % x, want % x", got, want)
	}
	got, err = c.do(rtuADU(1, pdu(FCWriteSingleReg, 26, 4000)), 8, 2*time.Second)
	if err != nil || string(got) != string(rtuADU(1, pdu(FCWriteSingleReg, 26, 4000))) {
		t.Fatalf("comms setpoint over RTU: % x, %v", got, err)
	}
	got, err = c.do(rtuADU(2, pdu(FCWriteSingleCoil, 22, 0xFF00)), 8, 2*time.Second)
	if err != nil || string(got) != string(rtuADU(2, pdu(FCWriteSingleCoil, 22, 0xFF00))) {
		t.Fatalf("ADAM DO 6 over RTU: % x, %v", got, err)
	}
	if !p.Coil(plant.CoilScrubber) {
		t.Fatal("DO 6 over RTU did not start the scrubber")
	}
	var rtuWrites []string
	for _, w := range p.Writes(0) {
		if w.Via == "rtu" {
			rtuWrites = append(rtuWrites, w.Channel)
		}
	}
	if strings.Join(rtuWrites, ",") != "comms_setpoint,coil:scrubber" {
		t.Fatalf("RTU write log channels %v", rtuWrites)
	}
}

func TestModelHandlersAllocateNothing(t *testing.T) {
	p := newModelPlant(t, plant.FurnaceEurotherm3200, plant.DIOADAM6052)
	h := NewHandler(p)
	buf := make([]byte, 0, 300)
	for _, r := range []struct {
		unit byte
		req  []byte
	}{
		{1, pdu(FCReadHolding, 1, 5)},
		{1, pdu(FCReadHolding, 0x8002, 10)},
		{2, pdu(FCReadCoils, 16, 8)},
		{2, pdu(FCReadHolding, 300, 1)},
	} {
		if n := testing.AllocsPerRun(100, func() { buf = h.Handle("tcp", r.unit, r.req, buf[:0]) }); n != 0 {
			t.Errorf("unit %d request % x: %v allocations", r.unit, r.req, n)
		}
	}
}

// missingPeer skips loudly, or fails under HCP_REQUIRE_PEERS=1 (the rule of
// device/devicetest, restated here: firmware-sim imports no product folder).
func missingPeer(t *testing.T, what, fix string) {
	t.Helper()
	msg := "PEER MISSING: " + what + " (" + fix + "); run `make ci` to install peers and run this test"
	if os.Getenv("HCP_REQUIRE_PEERS") == "1" {
		t.Fatal(msg + " — failing because HCP_REQUIRE_PEERS=1")
	}
	t.Skip(msg)
}

// mbpoll runs the libmodbus-based mbpoll (a Modbus master nobody here wrote)
// once against addr and returns its output.
func mbpoll(t *testing.T, bin, addr string, args ...string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(bin, append(append([]string{"-m", "tcp", "-p", port, "-0", "-1", "-o", "2"}, args[:len(args)-len(writeVals(args))]...), append([]string{host}, writeVals(args)...)...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mbpoll %v: %v\n%s", cmd.Args, err, out)
	}
	return string(out)
}

// writeVals is the trailing "--" group of args: the values to write.
func writeVals(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args[i+1:]
		}
	}
	return nil
}

var mbpollValue = regexp.MustCompile(`(?m)^\[(\d+)\]:\s+(\S+)`)

// mbpollValues parses mbpoll's "[ref]: value" lines.
func mbpollValues(t *testing.T, out string) map[int]string {
	t.Helper()
	m := map[int]string{}
	for _, g := range mbpollValue.FindAllStringSubmatch(out, -1) {
		ref, _ := strconv.Atoi(g[1])
		m[ref] = g[2]
	}
	if len(m) == 0 {
		t.Fatalf("no values in mbpoll output:\n%s", out)
	}
	return m
}

// TestPeerMbpollEurothermAndADAM has mbpoll read the Eurotherm model's PV (16-bit
// and float), write its comms setpoint, and switch an ADAM-6052 output.
func TestPeerMbpollEurothermAndADAM(t *testing.T) {
	if os.Getenv("HCP_HIDE_PEERS") == "1" { // device/devicetest's rule, restated
		missingPeer(t, "mbpoll (hidden: HCP_HIDE_PEERS=1)", "apt-get install mbpoll")
	}
	bin, err := exec.LookPath("mbpoll")
	if err != nil {
		missingPeer(t, "mbpoll not found on PATH", "apt-get install mbpoll")
	}
	p := newModelPlant(t, plant.FurnaceEurotherm3200, plant.DIOADAM6052)
	s := startTCP(t, p)
	addr := s.Addr().String()

	v := mbpollValues(t, mbpoll(t, bin, addr, "-a", "1", "-t", "4", "-r", "1", "-c", "5"))
	if v[1] != "250" || v[2] != "250" || v[5] != "250" {
		t.Fatalf("mbpoll read PV, TG.SP, WKG.SP %q %q %q, want 250 (25.0 °C)", v[1], v[2], v[5])
	}
	v = mbpollValues(t, mbpoll(t, bin, addr, "-a", "1", "-t", "4:float", "-B", "-r", strconv.Itoa(0x8000+2*plant.EuroPV)))
	if f, err := strconv.ParseFloat(v[0x8000+2*plant.EuroPV], 64); err != nil || f != 25 {
		t.Fatalf("mbpoll float PV %q, want 25", v[0x8000+2*plant.EuroPV])
	}
	mbpoll(t, bin, addr, "-a", "1", "-t", "4", "-r", strconv.Itoa(plant.EuroCommsSP), "--", "4500")
	mbpoll(t, bin, addr, "-a", "1", "-t", "4", "-r", strconv.Itoa(plant.EuroRemoteSelect), "--", "1")
	p.Step(time.Second)
	if s := p.Snapshot(); s.Furnace.Eurotherm.CommsSetpointC != 450 || !s.Furnace.Eurotherm.RemoteSelected || s.Furnace.WorkingSetpointC != 450 {
		t.Fatalf("after mbpoll's writes: comms setpoint %.1f, remote %t, working setpoint %.1f; want 450.0, true, 450.0",
			s.Furnace.Eurotherm.CommsSetpointC, s.Furnace.Eurotherm.RemoteSelected, s.Furnace.WorkingSetpointC)
	}
	mbpoll(t, bin, addr, "-a", "2", "-t", "0", "-r", strconv.Itoa(plant.ADAMDOBase+plant.CoilScrubber), "--", "1")
	if !p.Coil(plant.CoilScrubber) {
		t.Fatal("mbpoll's write of DO 6 did not start the scrubber")
	}
	v = mbpollValues(t, mbpoll(t, bin, addr, "-a", "2", "-t", "1", "-r", "0", "-c", "3"))
	if v[0] != "1" || v[2] != "0" {
		t.Fatalf("mbpoll DI 0..2 %v, want door closed 1, pump running 0", v)
	}
	for _, w := range p.Writes(0) {
		if w.Channel == "target_setpoint" {
			t.Fatalf("a host writing the comms setpoint wrote the target setpoint: %+v", w)
		}
	}
}

// BenchmarkTCPReadEurotherm reads PV..WKG.SP (1..5) from the Eurotherm model,
// the agent's poll of that controller, beside BenchmarkTCPReadInputs (the sim
// map's IR 0..8).
func BenchmarkTCPReadEurotherm(b *testing.B) {
	p, _ := plant.New(plant.Opts{FurnaceModel: plant.FurnaceEurotherm3200})
	s, err := ListenTCP(context.Background(), p, "127.0.0.1:0", TCPOpts{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := dialTCP(b, s.Addr().String())
	req := pdu(FCReadHolding, 1, 5)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.do(1, req, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
