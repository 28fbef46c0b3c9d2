package control

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
)

func start(t *testing.T) (*plant.Plant, *Client, string) {
	t.Helper()
	p, err := plant.New(plant.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "control.sock")
	s, err := Listen(p, sock, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(sock)
	t.Cleanup(func() {
		_ = c.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		_ = p.Close()
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Errorf("socket left behind: %v", err)
		}
	})
	return p, c, sock
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestSocketMode(t *testing.T) {
	_, _, sock := start(t)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
}

func TestFaults(t *testing.T) {
	p, c, _ := start(t)
	tests := []struct {
		name, fault, target string
		wantStatus          int // 0: ok
	}{
		{"estop", "estop", "", 0},
		{"silent furnace", "silent", "furnace", 0},
		{"silent needs target", "silent", "", http.StatusBadRequest},
		{"silent unknown device", "silent", "toaster", http.StatusBadRequest},
		{"stuck open h2s", "mfc-stuck-open", "h2s", 0},
		{"unknown fault", "meteor", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Inject(ctx(t), tt.fault, tt.target)
			var ae *APIError
			switch {
			case tt.wantStatus == 0 && err != nil:
				t.Fatal(err)
			case tt.wantStatus != 0 && (!errors.As(err, &ae) || ae.Status != tt.wantStatus):
				t.Fatalf("err %v, want status %d", err, tt.wantStatus)
			}
		})
	}
	fs, err := c.Faults(ctx(t))
	if err != nil || len(fs) != 3 {
		t.Fatalf("faults %+v %v", fs, err)
	}
	if !p.FaultActive("silent", "furnace") || bool(p.EstopPin().Read()) {
		t.Fatal("faults not in effect")
	}
	if err := c.Clear(ctx(t), "estop", ""); err != nil {
		t.Fatal(err)
	}
	if !bool(p.EstopPin().Read()) {
		t.Fatal("estop still low")
	}
	if err := c.Clear(ctx(t), "all", ""); err != nil {
		t.Fatal(err)
	}
	if fs, _ := c.Faults(ctx(t)); len(fs) != 0 {
		t.Fatalf("after clear all: %+v", fs)
	}
}

func TestGPIO(t *testing.T) {
	p, c, _ := start(t)
	if l, err := c.GPIO(ctx(t), "relay"); err != nil || l {
		t.Fatalf("relay %v %v", l, err)
	}
	if err := c.SetGPIO(ctx(t), "relay", true); err != nil {
		t.Fatal(err)
	}
	if !p.Relay() || !bool(p.RelayFeedbackPin().Read()) {
		t.Fatal("relay not energised")
	}
	var ae *APIError
	if err := c.SetGPIO(ctx(t), "estop", true); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("driving an input: %v", err)
	}
	if _, err := c.GPIO(ctx(t), "nope"); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("unknown pin: %v", err)
	}
	// long poll: times out unchanged, then sees the edge
	l, changed, err := c.WaitEdge(ctx(t), "leak", true, 50*time.Millisecond)
	if err != nil || changed || !l {
		t.Fatalf("timeout poll: %v %v %v", l, changed, err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = p.Inject("gas-leak", "")
	}()
	l, changed, err = c.WaitEdge(ctx(t), "leak", true, 3*time.Second)
	if err != nil || !changed || l {
		t.Fatalf("edge poll: %v %v %v", l, changed, err)
	}
	ws, err := c.Writes(ctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Channel != "relay" || !ws[0].Accepted || ws[1].Accepted || ws[1].Device != "gpio" {
		t.Fatalf("write log %+v", ws)
	}
	if ws2, _ := c.Writes(ctx(t), ws[0].Seq); len(ws2) != 1 {
		t.Fatalf("since: %+v", ws2)
	}
}

func TestStatus(t *testing.T) {
	p, c, _ := start(t)
	_ = p.FurnaceWriteHolding("tcp", plant.HRSetpoint, []uint16{5000})
	s, err := c.Status(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Furnace.SetpointC != 500 || len(s.Writes) != 1 || s.ChamberPa < 100000 || len(s.MFCs) != 3 || !s.GPIO["estop"] {
		t.Fatalf("status %+v", s)
	}
}

func TestPrecursor(t *testing.T) {
	p, c, _ := start(t)
	if pr, err := c.Precursor(ctx(t)); err != nil || pr != plant.MoO3 {
		t.Fatalf("default precursor %q %v", pr, err)
	}
	if err := c.SetPrecursor(ctx(t), plant.WO3); err != nil {
		t.Fatal(err)
	}
	if p.Precursor() != plant.WO3 {
		t.Fatalf("plant precursor %q", p.Precursor())
	}
	var ae *APIError
	if err := c.SetPrecursor(ctx(t), "V2O5"); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("unknown precursor: %v", err)
	}
	if _, err := c.Do(ctx(t), http.MethodPut, "/precursor", map[string]int{"precursor": 3}, nil); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("bad body: %v", err)
	}
	var r PrecursorReply
	if _, err := c.Do(ctx(t), http.MethodGet, "/precursor", nil, &r); err != nil || r.Precursor != plant.WO3 || r.Material != plant.WS2 {
		t.Fatalf("GET /precursor %+v %v", r, err)
	}
	s, err := c.Status(ctx(t))
	if err != nil || s.Precursor != plant.WO3 || s.Material != "" || s.Film != (plant.Film{}) {
		t.Fatalf("status precursor %q material %q film %+v: %v", s.Precursor, s.Material, s.Film, err)
	}
	if ws, _ := c.Writes(ctx(t), 0); len(ws) != 0 {
		t.Fatalf("the precursor reached the write log: %+v", ws)
	}
}

// TestSpectrumFaultsAndTruth: the spectrum faults go through the control
// API like the others, and the status reports the film's truth.
func TestSpectrumFaultsAndTruth(t *testing.T) {
	p, c, _ := start(t)
	for _, f := range [][2]string{{plant.FaultRamanFluorescence, "2"}, {plant.FaultRamanSpikes, ""}, {plant.FaultRamanMixed, ""}} {
		if err := c.Inject(ctx(t), f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	var ae *APIError
	if err := c.Inject(ctx(t), plant.FaultRamanSaturation, "-3"); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("bad full well: %v", err)
	}
	if got := p.SpectrumFaults(); got != (plant.SpectrumFaults{Fluorescence: 2, Spikes: 3, MixedCoverage: true}) {
		t.Fatalf("spectrum faults %+v", got)
	}
	s, err := c.Status(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Truth.LayerCount != 0 || s.Truth.Coverage[0] != 1 {
		t.Fatalf("truth of a bare sample %+v", s.Truth)
	}
}

// TestRelayWatchdogOverAPI drives the heartbeat and relay through the API on
// a plant with the relay watchdog: the status carries its state, and the
// long poll on relay_fb sees the drop when the heartbeat stops.
func TestRelayWatchdogOverAPI(t *testing.T) {
	p, err := plant.New(plant.Opts{RelayWatchdog: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "control.sock")
	s, err := Listen(p, sock, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(sock)
	t.Cleanup(func() { _ = c.Close(); _ = s.Close(); _ = p.Close() })
	if err := c.SetGPIO(ctx(t), plant.PinHeartbeat, true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetGPIO(ctx(t), plant.PinRelay, true); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx(t))
	if err != nil || st.RelayWatchdog == nil || !st.RelayWatchdog.Alive || st.RelayWatchdog.HeartbeatEdges != 1 || !st.GPIO[plant.PinRelayFB] {
		t.Fatalf("status %+v, %v", st.RelayWatchdog, err)
	}
	l, changed, err := c.WaitEdge(ctx(t), plant.PinRelayFB, true, 3*time.Second)
	if err != nil || !changed || l {
		t.Fatalf("relay_fb poll: level %v changed %v %v", l, changed, err)
	}
	ws, err := c.Writes(ctx(t), 0)
	if err != nil || len(ws) != 2 || ws[1].Via != "watchdog" || ws[1].Channel != plant.PinRelay || ws[1].Value != 0 {
		t.Fatalf("writes %+v, %v", ws, err)
	}
}
