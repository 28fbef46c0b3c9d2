package rig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hcp-edge/hcp-edge/firmware-sim/control"
	"github.com/hcp-edge/hcp-edge/firmware-sim/plant"
)

func TestStartClose(t *testing.T) {
	dir := t.TempDir()
	r, err := Start(context.Background(), Opts{Dir: dir, ModbusAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{RTUName, ControlName} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{RTUName, ControlName} {
		if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", n, err)
		}
	}
}

func TestStartWithPrecursor(t *testing.T) {
	r, err := Start(context.Background(), Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", Precursor: plant.WO3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if got := r.Plant().Precursor(); got != plant.WO3 {
		t.Fatalf("precursor %q", got)
	}
	if _, err := Start(context.Background(), Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", Precursor: "V2O5"}); !errors.Is(err, plant.ErrUnknownPrecursor) {
		t.Fatalf("V2O5: %v", err)
	}
}

// TestRealModelsAndRelayHeartbeat runs the rig with the Eurotherm 3200 and
// ADAM-6052 models and a relay heartbeat, heats through the plant's register
// methods, beats the relay over the control socket, then stops beating: the
// relay drops by itself within the heartbeat (plus the physics tick), and
// the element loses power although the controller, which has no comms
// watchdog, still asks for it.
func TestRealModelsAndRelayHeartbeat(t *testing.T) {
	const beat = 300 * time.Millisecond
	r, err := Start(context.Background(), Opts{
		Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: 60,
		FurnaceModel: plant.FurnaceEurotherm3200, DIOModel: plant.DIOADAM6052, RelayHeartbeat: beat,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	p := r.Plant()
	for _, w := range []struct{ addr, v int }{{plant.EuroTargetSP, 6000}, {plant.EuroAutoManual, 0}} {
		if err := p.EurothermWrite("tcp", w.addr, []uint16{uint16(w.v)}); err != nil {
			t.Fatal(err)
		}
	}
	c := control.NewClient(r.ControlPath())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last time.Time
	for i := 0; i < 10; i++ { // beat every beat/3 for a while: it holds
		if err := c.SetGPIO(ctx, plant.PinRelay, true); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		time.Sleep(beat / 3)
		if on, err := c.GPIO(ctx, plant.PinRelay); err != nil || !on {
			t.Fatalf("relay %t (%v) at beat %d", on, err, i)
		}
	}
	s, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.FurnaceModel != plant.FurnaceEurotherm3200 || s.DIOModel != plant.DIOADAM6052 || s.RelayHeartbeatMs != beat.Milliseconds() {
		t.Fatalf("status models %q %q heartbeat %d ms", s.FurnaceModel, s.DIOModel, s.RelayHeartbeatMs)
	}
	if !s.Furnace.HeaterActive || s.Furnace.OutputPct == 0 {
		t.Fatalf("not heating while the relay is held: active %t, output %.1f %%", s.Furnace.HeaterActive, s.Furnace.OutputPct)
	}
	// the beats stop (the agent died): the relay drops by itself
	level, changed, err := c.WaitEdge(ctx, plant.PinRelayFB, true, 5*time.Second)
	if err != nil || !changed || level {
		t.Fatalf("relay_fb did not drop: level %t changed %t err %v", level, changed, err)
	}
	after := time.Since(last)
	t.Logf("relay_fb dropped %v after the last heartbeat write (heartbeat %v)", after.Round(time.Millisecond), beat)
	if after < beat-20*time.Millisecond {
		t.Fatalf("relay dropped %v after the last beat, before its heartbeat of %v", after, beat)
	}
	if after > beat+time.Second {
		t.Fatalf("relay dropped only %v after the last beat (heartbeat %v)", after, beat)
	}
	s, err = c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Furnace.HeaterActive || s.Furnace.OutputPct != 0 {
		t.Fatalf("element still powered after the drop: active %t, output %.1f %%", s.Furnace.HeaterActive, s.Furnace.OutputPct)
	}
	if s.Furnace.Eurotherm.WorkingOutputPct == 0 || s.RelayHeartbeatDrops != 1 {
		t.Fatalf("controller output %.1f %% (it should still ask: no watchdog), drops %d", s.Furnace.Eurotherm.WorkingOutputPct, s.RelayHeartbeatDrops)
	}
}
