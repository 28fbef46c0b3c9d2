package modbussim

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// The two-zone rig's RS-485 line: two Eurotherm 3200s, the sulfur zone's
// at unit 1 and the growth zone's at unit 2, on one pty.

func newTwoZonePlant(t *testing.T) *plant.Plant {
	t.Helper()
	p, err := plant.New(plant.Opts{Rig: plant.RigMoS2TwoZone, FurnaceModel: plant.FurnaceEurotherm3200, DIOModel: plant.DIOADAM6052})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestRTUZoneLine talks to both controllers through the pty with frames
// built here from Modbus over Serial Line V1.02 (rtuADU: address, PDU,
// CRC-16 low byte first): each answers its own address only, a frame for
// a third is nobody's, a broadcast reaches both.
func TestRTUZoneLine(t *testing.T) {
	p := newTwoZonePlant(t)
	c := startRTU(t, p)
	tgSP := uint16(plant.EuroTargetSP)
	tests := []struct {
		name string
		raw  []byte
		want []byte // nil: no reply
	}{
		{"unit 1 (sulfur) writes TG.SP 180.0", rtuADU(1, pdu(FCWriteSingleReg, tgSP, 1800)), rtuADU(1, pdu(FCWriteSingleReg, tgSP, 1800))},
		{"unit 1 reads it back", rtuADU(1, pdu(FCReadHolding, tgSP, 1)), rtuADU(1, []byte{3, 2, 0x07, 0x08})},
		{"unit 2 (growth) keeps its own", rtuADU(2, pdu(FCReadHolding, tgSP, 1)), rtuADU(2, []byte{3, 2, 0, 250})},
		{"unit 2 writes TG.SP 750.0", rtuADU(2, pdu(FCWriteSingleReg, tgSP, 7500)), rtuADU(2, pdu(FCWriteSingleReg, tgSP, 7500))},
		{"unit 3 is nobody on this line", rtuADU(3, pdu(FCReadHolding, tgSP, 1)), nil},
		{"unit 1 after the foreign frame", rtuADU(1, pdu(FCReadInput, tgSP, 1)), rtuADU(1, []byte{4, 2, 0x07, 0x08})},
		{"unit 2 identity", rtuADU(2, pdu(FCReadHolding, plant.EuroInstIdent, 1)), rtuADU(2, []byte{3, 2, 0x32, 0x16})},
		{"coils are not a 3200's", rtuADU(2, pdu(FCReadCoils, 0, 1)), rtuADU(2, []byte{0x81, 1})},
		{"unit 1 refuses TG.SP 1300.0", rtuADU(1, pdu(FCWriteSingleReg, tgSP, 13000)), rtuADU(1, []byte{0x86, 3})},
		{"broadcast SP.RAT 5.0 unanswered", rtuADU(0, pdu(FCWriteSingleReg, plant.EuroSPRate, 50)), nil},
		{"unit 1 took the broadcast", rtuADU(1, pdu(FCReadHolding, plant.EuroSPRate, 1)), rtuADU(1, []byte{3, 2, 0, 50})},
		{"unit 2 took the broadcast", rtuADU(2, pdu(FCReadHolding, plant.EuroSPRate, 1)), rtuADU(2, []byte{3, 2, 0, 50})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil {
				got, err := c.do(tt.raw, 0, 150*time.Millisecond)
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("expected silence, got % x %v", got, err)
				}
				return
			}
			got, err := c.do(tt.raw, len(tt.want), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got % x want % x", got, tt.want)
			}
		})
	}
	s := p.Snapshot()
	if s.Zones["sulfur"].Eurotherm.TargetSetpointC != 180 || s.Zones["growth"].Eurotherm.TargetSetpointC != 750 {
		t.Errorf("zones %+v", s.Zones)
	}
	devs := map[string]int{}
	for _, w := range p.Writes(0) {
		if w.Via == "rtu" {
			devs[w.Device]++
		}
	}
	// sulfur: TG.SP, the refused TG.SP, the broadcast; growth: TG.SP, the broadcast
	if devs["furnace-sulfur"] != 3 || devs["furnace-growth"] != 2 || len(devs) != 2 {
		t.Errorf("rtu writes per device %v", devs)
	}

	// a silent sulfur controller leaves the growth zone's answering
	if err := p.Inject(plant.FaultSilent, "furnace-sulfur"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.do(rtuADU(1, pdu(FCReadHolding, tgSP, 1)), 0, 150*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("silent sulfur controller answered % x %v", got, err)
	}
	want := rtuADU(2, []byte{3, 2, 0x1D, 0x4C})
	if got, err := c.do(rtuADU(2, pdu(FCReadHolding, tgSP, 1)), len(want), 2*time.Second); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("growth controller: % x %v", got, err)
	}
	p.ClearAll()
	if err := p.Inject(plant.FaultCorrupt, "furnace-growth"); err != nil {
		t.Fatal(err)
	}
	got, err := c.do(rtuADU(2, pdu(FCReadHolding, tgSP, 1)), len(want), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseRTUFrame(got); !errors.Is(err, ErrCRC) {
		t.Fatalf("corrupt reply has a good CRC: % x", got)
	}
}

// TestTCPOnTwoZoneRig: the zones are on their RS-485 line, not behind the
// TCP unit 1 of the one-furnace rigs; the I/O module stays at unit 2.
func TestTCPOnTwoZoneRig(t *testing.T) {
	p := newTwoZonePlant(t)
	s := startTCP(t, p)
	c := dialTCP(t, s.Addr().String())
	if got := c.must(1, pdu(FCReadHolding, plant.EuroTargetSP, 1)); !bytes.Equal(got, []byte{0x83, ExGatewayTargetFailed}) {
		t.Errorf("TCP unit 1: % x", got)
	}
	if got := c.must(2, pdu(FCWriteSingleCoil, plant.ADAMDOBase+plant.CoilArValve, 0xFF00)); got[0] != FCWriteSingleCoil || !p.Coil(plant.CoilArValve) {
		t.Errorf("TCP unit 2 (ADAM-6052): % x", got)
	}
}

// TestPeerMbpollZoneLine has mbpoll (libmodbus, a master nobody here
// wrote) talk RTU over the pty to both controllers: it writes the sulfur
// zone's TG.SP at unit 1 and reads both zones' back.
func TestPeerMbpollZoneLine(t *testing.T) {
	if os.Getenv("HCP_HIDE_PEERS") == "1" { // device/devicetest's rule, restated
		missingPeer(t, "mbpoll (hidden: HCP_HIDE_PEERS=1)", "apt-get install mbpoll")
	}
	bin, err := exec.LookPath("mbpoll")
	if err != nil {
		missingPeer(t, "mbpoll not found on PATH", "apt-get install mbpoll")
	}
	p := newTwoZonePlant(t)
	c := startRTU(t, p)
	dev := c.f.Name()
	run := func(args ...string) string {
		t.Helper()
		args = append([]string{"-m", "rtu", "-b", "19200", "-P", "even", "-0", "-1", "-o", "2"}, args...)
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("mbpoll %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	reg := strconv.Itoa(plant.EuroTargetSP)
	run("-a", "1", "-t", "4", "-r", reg, dev, "1850")
	if v := mbpollValues(t, run("-a", "1", "-t", "4", "-r", reg, dev)); v[plant.EuroTargetSP] != "1850" {
		t.Errorf("unit 1 TG.SP %v, want 1850", v)
	}
	if v := mbpollValues(t, run("-a", "2", "-t", "4", "-r", reg, dev)); v[plant.EuroTargetSP] != "250" {
		t.Errorf("unit 2 TG.SP %v, want 250 (untouched)", v)
	}
	fl := strconv.Itoa(plant.EuroFloatBase + 2*plant.EuroPV)
	if v := mbpollValues(t, run("-a", "2", "-t", "4:float", "-B", "-r", fl, dev)); v[plant.EuroFloatBase+2*plant.EuroPV] != "25" {
		t.Errorf("unit 2 float PV %v, want 25", v)
	}
	if s := p.Snapshot(); s.Zones["sulfur"].Eurotherm.TargetSetpointC != 185 || s.Zones["growth"].Eurotherm.TargetSetpointC != 25 {
		t.Errorf("zones after mbpoll: %+v", s.Zones)
	}
}

// TestHandleZoneAllocs: a zone's read allocates nothing, as the other
// units' (TestHandlerAllocs).
func TestHandleZoneAllocs(t *testing.T) {
	p := newTwoZonePlant(t)
	h := NewHandler(p)
	req := pdu(FCReadHolding, plant.EuroPV, 5)
	buf := make([]byte, 0, 300)
	if n := testing.AllocsPerRun(100, func() { buf = h.HandleZone("rtu", 1, req, buf[:0]) }); n != 0 {
		t.Fatalf("%v allocations per read", n)
	}
	if buf[0] != FCReadHolding || buf[1] != 10 {
		t.Fatalf("reply % x", buf)
	}
}
