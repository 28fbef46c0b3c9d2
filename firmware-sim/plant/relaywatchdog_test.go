package plant

import (
	"context"
	"errors"
	"testing"
	"time"

	"periph.io/x/conn/v3/gpio"
)

// newWatchdogTest is a plant with the relay watchdog at timeout on a fake
// clock, the furnace's own comms watchdog off (a controller without one),
// heater enabled and the Ar line valve's coil on, so that the relay alone
// decides heater power and valve power.
func newWatchdogTest(t *testing.T, timeout time.Duration) (*Plant, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{RelayWatchdog: timeout, Now: clk.Now, MaxWrites: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	mustWrite(t, p, HRWatchdogTimeout, 0)
	mustWrite(t, p, HRHeaterEnable, 1)
	if err := p.DIOWriteCoils("tcp", CoilArValve, []bool{true}); err != nil {
		t.Fatal(err)
	}
	return p, clk
}

// powered reports what the relay permits: heater power and Ar valve power.
func powered(t *testing.T, p *Plant) (heater, valve bool) {
	t.Helper()
	s := p.Snapshot()
	return s.Furnace.HeaterActive, s.MFCs["ar"].ValveOpen
}

// watchdogWrites returns the write-log entries the watchdog made.
func watchdogWrites(p *Plant) []Write {
	var out []Write
	for _, w := range p.Writes(0) {
		if w.Via == "watchdog" {
			out = append(out, w)
		}
	}
	return out
}

func TestRelayWatchdogOffIsTodaysRelay(t *testing.T) {
	p, clk := newTest(t, false)
	if err := p.SetGPIO(PinRelay, true); err != nil {
		t.Fatal(err)
	}
	if err := p.SetGPIO(PinHeartbeat, true); err != nil {
		t.Fatalf("heartbeat is an output even without the watchdog: %v", err)
	}
	clk.Add(time.Hour)
	p.Step(time.Second)
	if !p.Relay() || !bool(p.RelayFeedbackPin().Read()) {
		t.Fatal("relay dropped without a watchdog")
	}
	if _, ok := p.RelayWatchdog(); ok {
		t.Fatal("watchdog state reported with the watchdog off")
	}
	if s := p.Snapshot(); s.RelayWatchdog != nil || !s.GPIO[PinHeartbeat] {
		t.Fatalf("snapshot: watchdog %+v, gpio %v", s.RelayWatchdog, s.GPIO)
	}
	ws := p.Writes(0)
	if len(ws) != 1 || ws[0].Channel != PinRelay {
		t.Fatalf("write log %+v; want only the relay write (heartbeats are counted, not logged)", ws)
	}
}

func TestRelayWatchdogRule(t *testing.T) {
	const T = time.Second
	p, clk := newWatchdogTest(t, T)
	hb := p.HeartbeatPin()
	level := gpio.Low
	toggle := func() {
		t.Helper()
		level = !level
		if err := hb.Out(level); err != nil {
			t.Fatal(err)
		}
	}

	// Plant start counts as an edge: the relay can be energised at once.
	if err := p.RelayPin().Out(gpio.High); err != nil {
		t.Fatal(err)
	}
	if h, v := powered(t, p); !h || !v || !p.Relay() {
		t.Fatalf("after energising: heater %t valve %t relay %t", h, v, p.Relay())
	}

	// Toggling every T/2 for 10 T keeps it energised.
	for i := 0; i < 20; i++ {
		clk.Add(T / 2)
		toggle()
		p.Step(100 * time.Millisecond)
		if !p.Relay() {
			t.Fatalf("relay dropped while the heartbeat toggled (toggle %d)", i)
		}
	}
	lastEdge := clk.Now()

	// Writing the same level again is not an edge.
	clk.Add(T / 2)
	if err := hb.Out(level); err != nil {
		t.Fatal(err)
	}
	clk.Add(T/2 - time.Millisecond)
	p.Step(100 * time.Millisecond)
	if !p.Relay() {
		t.Fatal("relay dropped before T had passed since the last edge")
	}
	clk.Add(time.Millisecond)
	if p.RelayFeedbackPin().Read() != gpio.Low || p.Relay() {
		t.Fatal("relay_fb still High T after the last edge")
	}
	if p.RelayPin().Read() != gpio.High {
		t.Fatal("the relay output lost the level the agent wrote: only the coil drops")
	}
	if h, v := powered(t, p); h || v {
		t.Fatalf("after the drop: heater %t valve %t", h, v)
	}
	st, ok := p.RelayWatchdog()
	if !ok || st.Drops != 1 || st.Alive || st.HeartbeatEdges != 20 || !st.LastHeartbeatAt.Equal(lastEdge) ||
		!st.LastDrop.ExpiredAt.Equal(lastEdge.Add(T)) || !st.LastDrop.At.Equal(lastEdge.Add(T)) || st.TimeoutMs != 1000 {
		t.Fatalf("state %+v", st)
	}
	if ws := watchdogWrites(p); len(ws) != 1 || ws[0].Device != "gpio" || ws[0].Channel != PinRelay ||
		ws[0].Value != 0 || !ws[0].Accepted || !ws[0].At.Equal(lastEdge.Add(T)) {
		t.Fatalf("watchdog entries %+v", ws)
	}

	// The heartbeat resumes: no automatic restart.
	for i := 0; i < 4; i++ {
		clk.Add(T / 4)
		toggle()
		p.Step(100 * time.Millisecond)
	}
	if p.Relay() {
		t.Fatal("relay re-energised by the heartbeat alone")
	}
	// The agent drives relay High again (already High: the write counts).
	if err := p.SetGPIO(PinRelay, true); err != nil {
		t.Fatal(err)
	}
	if !p.Relay() || p.RelayFeedbackPin().Read() != gpio.High {
		t.Fatal("relay not re-energised by a High write with the heartbeat alive")
	}
	if h, v := powered(t, p); !h || !v {
		t.Fatalf("after re-energising: heater %t valve %t", h, v)
	}
	if len(watchdogWrites(p)) != 1 {
		t.Fatal("a second drop was recorded")
	}
}

func TestRelayWatchdogRefusesToEnergiseWithoutHeartbeat(t *testing.T) {
	p, clk := newWatchdogTest(t, 500*time.Millisecond)
	clk.Add(500 * time.Millisecond) // start was the last edge
	m, _ := p.WriteLogStats()
	if err := p.SetGPIO(PinRelay, true); err != nil {
		t.Fatalf("the write itself is accepted: %v", err)
	}
	if p.Relay() || p.RelayFeedbackPin().Read() != gpio.Low || p.RelayPin().Read() != gpio.High {
		t.Fatal("relay energised with no heartbeat edge within the timeout")
	}
	ws := p.Writes(m)
	if len(ws) != 1 || ws[0].Via != "gpio" || !ws[0].Accepted || ws[0].Value != 1 {
		t.Fatalf("write log %+v", ws)
	}
	if st, _ := p.RelayWatchdog(); st.Drops != 0 {
		t.Fatalf("a coil that never energised counted as a drop: %+v", st)
	}
	// One edge, then the High write energises it.
	if err := p.SetGPIO(PinHeartbeat, true); err != nil {
		t.Fatal(err)
	}
	if err := p.SetGPIO(PinRelay, true); err != nil || !p.Relay() {
		t.Fatalf("relay %t, %v", p.Relay(), err)
	}
	// Low drops it as without the watchdog, and is no watchdog drop.
	if err := p.SetGPIO(PinRelay, false); err != nil || p.Relay() {
		t.Fatalf("relay %t, %v", p.Relay(), err)
	}
	clk.Add(time.Second)
	if st, _ := p.RelayWatchdog(); st.Drops != 0 || len(watchdogWrites(p)) != 0 {
		t.Fatalf("drop recorded for a relay the agent switched off: %+v", st)
	}
}

func TestRelayWatchdogStartEnergised(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{RelayWatchdog: time.Second, RelayEnergised: true, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Relay() {
		t.Fatal("not energised at start")
	}
	clk.Add(time.Second)
	p.Step(time.Second)
	if p.Relay() || p.Snapshot().GPIO[PinRelayFB] {
		t.Fatal("an energised start with no heartbeat did not drop after the timeout")
	}
}

func TestRelayWatchdogNegativeRefused(t *testing.T) {
	if _, err := New(Opts{RelayWatchdog: -time.Second}); !errors.Is(err, ErrIllegalValue) {
		t.Fatalf("err %v", err)
	}
}

// TestRelayWatchdogDropWakesWaiters runs the physics on the real clock: a
// waiter on relay_fb (as the control API's long poll) sees the drop within
// the timeout plus about one tick, with nothing else touching the plant.
func TestRelayWatchdogDropWakesWaiters(t *testing.T) {
	const T = 100 * time.Millisecond
	p, err := New(Opts{RelayWatchdog: T, Tick: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.SetGPIO(PinHeartbeat, true); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := p.SetGPIO(PinRelay, true); err != nil || !p.Relay() {
		t.Fatalf("relay %t, %v", p.Relay(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, changed, err := p.WaitGPIO(ctx, PinRelayFB, true)
	took := time.Since(t0)
	if err != nil || !changed || l {
		t.Fatalf("wait: level %t changed %t err %v", l, changed, err)
	}
	st, _ := p.RelayWatchdog()
	late := st.LastDrop.At.Sub(st.LastDrop.ExpiredAt)
	t.Logf("drop seen by the waiter %v after the last edge (T %v); the plant dropped it %v after expiry", took, T, late)
	if took < T {
		t.Fatalf("dropped after %v, before T", took)
	}
	if late < 0 || late > time.Second { // a hang guard: one tick is 5 ms, a loaded machine may wait longer
		t.Fatalf("drop %v after expiry", late)
	}
}

// TestRelayWatchdogDropPrecedesPhysics: when the physics catches up over a
// stretch of wall time in which the heartbeat expired, the relay is dropped
// before the step, so the heater gets no power in it.
func TestRelayWatchdogDropPrecedesPhysics(t *testing.T) {
	heat := func(expire bool) float64 {
		p, clk := newWatchdogTest(t, time.Second)
		mustWrite(t, p, HRSetpoint, 5000) // 500 °C
		if err := p.SetGPIO(PinRelay, true); err != nil || !p.Relay() {
			t.Fatalf("relay %t, %v", p.Relay(), err)
		}
		if expire {
			clk.Add(time.Second)
		}
		p.Step(time.Minute)
		return p.Snapshot().Furnace.ElementC
	}
	if on, off := heat(false), heat(true); on < AmbientC+10 || off > AmbientC+1e-6 {
		t.Fatalf("element after a minute: %.2f °C with the relay held, %.2f °C after expiry", on, off)
	}
}
