package rig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hcp-edge/firmware-sim/control"
	"hcp-edge/firmware-sim/plant"
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

// TestRealModelsAndRelayWatchdog runs the rig with the Eurotherm 3200 and
// ADAM-6052 models and the relay watchdog, heats through the plant's register
// methods, toggles the heartbeat pin over the control socket with the relay
// written High, then stops toggling: the relay's coil drops by itself within
// the watchdog's timeout (plus the physics tick), and the element loses power
// although the controller, which has no comms watchdog, still asks for it.
func TestRealModelsAndRelayWatchdog(t *testing.T) {
	const T = 300 * time.Millisecond
	r, err := Start(context.Background(), Opts{
		Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: 60,
		FurnaceModel: plant.FurnaceEurotherm3200, DIOModel: plant.DIOADAM6052, RelayWatchdog: T,
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
	level := true
	if err := c.SetGPIO(ctx, plant.PinHeartbeat, level); err != nil {
		t.Fatal(err)
	}
	if err := c.SetGPIO(ctx, plant.PinRelay, true); err != nil {
		t.Fatal(err)
	}
	var last time.Time        // before the last heartbeat write: its edge is not earlier
	for i := 0; i < 10; i++ { // toggle every T/3 for a while: it holds
		time.Sleep(T / 3)
		level = !level
		last = time.Now()
		if err := c.SetGPIO(ctx, plant.PinHeartbeat, level); err != nil {
			t.Fatal(err)
		}
		if on, err := c.GPIO(ctx, plant.PinRelayFB); err != nil || !on {
			t.Fatalf("relay_fb %t (%v) at edge %d", on, err, i)
		}
	}
	s, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.FurnaceModel != plant.FurnaceEurotherm3200 || s.DIOModel != plant.DIOADAM6052 || s.RelayWatchdog == nil || s.RelayWatchdog.TimeoutMs != T.Milliseconds() {
		t.Fatalf("status models %q %q relay watchdog %+v", s.FurnaceModel, s.DIOModel, s.RelayWatchdog)
	}
	if !s.Furnace.HeaterActive || s.Furnace.OutputPct == 0 {
		t.Fatalf("not heating while the relay is held: active %t, output %.1f %%", s.Furnace.HeaterActive, s.Furnace.OutputPct)
	}
	// the heartbeat stops (the agent died): the coil drops by itself
	level, changed, err := c.WaitEdge(ctx, plant.PinRelayFB, true, 5*time.Second)
	if err != nil || !changed || level {
		t.Fatalf("relay_fb did not drop: level %t changed %t err %v", level, changed, err)
	}
	after := time.Since(last)
	t.Logf("relay_fb dropped %v after the last heartbeat write began (watchdog %v)", after.Round(time.Millisecond), T)
	if after < T {
		t.Fatalf("relay dropped %v after the last heartbeat write began, before its timeout of %v", after, T)
	}
	if after > T+time.Second {
		t.Fatalf("relay dropped only %v after the last heartbeat write (watchdog %v)", after, T)
	}
	s, err = c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Furnace.HeaterActive || s.Furnace.OutputPct != 0 {
		t.Fatalf("element still powered after the drop: active %t, output %.1f %%", s.Furnace.HeaterActive, s.Furnace.OutputPct)
	}
	wd := s.RelayWatchdog
	if s.Furnace.Eurotherm.WorkingOutputPct == 0 || wd.Drops != 1 {
		t.Fatalf("controller output %.1f %% (it should still ask: no watchdog), drops %d", s.Furnace.Eurotherm.WorkingOutputPct, wd.Drops)
	}
	// on the simulator's own clock: expiry exactly T after the last edge,
	// the drop within a physics tick or so of it
	if d := wd.LastDrop.ExpiredAt.Sub(wd.LastHeartbeatAt); d != T {
		t.Fatalf("expired %v after the last edge, want %v", d, T)
	}
	if lag := wd.LastDrop.At.Sub(wd.LastDrop.ExpiredAt); lag < 0 || lag > time.Second {
		t.Fatalf("dropped %v after expiry", lag)
	}
}
