package hil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"

	"hcp-edge/device"
	"hcp-edge/drivers/gpio"
	"hcp-edge/drivers/simgpio"
	"hcp-edge/firmware-sim/rig"
)

// The relay watchdog's timeout in these tests and the heartbeat's period (a
// sixth of it: a beat may be late by a write over the control socket and by
// the scheduler of a loaded machine). A drop must be seen within watchdogT
// plus one poll: the simulator acts within a physics tick (10 ms) and the
// driver's long poll on relay_fb returns at once on the change, so one poll is
// bounded here by the client's MaxPoll (200 ms, gpioClient).
const (
	watchdogT   = time.Second
	beatPeriod  = watchdogT / 6
	onePoll     = 200 * time.Millisecond
	childEnvVar = "HCP_HIL_HEARTBEAT_CHILD" // the control socket, in the child process
)

// startWatchdogRig starts a rig whose relay has the watchdog (no serial
// instruments: the test needs the GPIO only).
func startWatchdogRig(t *testing.T) *sim {
	t.Helper()
	return startRigOpts(t, rig.Opts{TimeScale: 300, RelayWatchdog: watchdogT})
}

// heartbeat starts a drivers/gpio Heartbeat on the simulator's heartbeat line.
func heartbeat(t *testing.T, ctx context.Context, c *simgpio.Client) *gpio.Heartbeat {
	t.Helper()
	o := gpio.DefaultHeartbeatOpts("heartbeat")
	o.OnError = func(err error) { t.Logf("heartbeat write failed: %v", err) }
	h, err := gpio.NewHeartbeat(c.Pin(simgpio.Heartbeat), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if err := h.Start(ctx, beatPeriod); err != nil {
		t.Fatalf("heartbeat start: %v", err)
	}
	return h
}

// holds checks, through the driver, that relay_fb stays High for d: a long
// poll from High that must end unchanged.
func holds(t *testing.T, ctx context.Context, c *simgpio.Client, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		l, changed, err := c.WaitChange(ctx, simgpio.RelayFB, pgpio.High, min(time.Until(end), onePoll))
		if err != nil || changed || l != pgpio.High {
			t.Fatalf("relay_fb %v (changed %t, %v) while the heartbeat ran", l, changed, err)
		}
	}
}

// dropped waits, through the driver, until relay_fb reads Low and returns
// when it saw it.
func dropped(t *testing.T, ctx context.Context, c *simgpio.Client) time.Time {
	t.Helper()
	for {
		l, _, err := c.WaitChange(ctx, simgpio.RelayFB, pgpio.High, onePoll)
		if err != nil {
			t.Fatalf("relay_fb: %v", err)
		}
		if l == pgpio.Low {
			return time.Now()
		}
	}
}

// TestHeartbeatHoldsRelay is the relay watchdog end to end in one process:
// drivers/gpio's Heartbeat and Output over drivers/simgpio across the control
// socket, against firmware-sim's watchdog. With the heartbeat running the
// relay stays energised; when it stops (Close) the relay drops within the
// timeout plus one poll, and the write log records the drop; a relay write
// without a heartbeat fails its read-back, and one with the heartbeat alive
// again re-energises it.
func TestHeartbeatHoldsRelay(t *testing.T) {
	s := startWatchdogRig(t)
	ctx := ctxFor(t)
	c := s.gpioClient()
	relay := s.relay(c)

	// No heartbeat yet: the start of the simulator counted as the last edge,
	// long enough ago once T has passed.
	time.Sleep(watchdogT)
	if err := relay.Set(ctx, true); !errors.Is(err, device.ErrReadback) {
		t.Fatalf("relay on without a heartbeat: %v; want %v", err, device.ErrReadback)
	}

	h := heartbeat(t, ctx, c)
	if err := relay.Set(ctx, true); err != nil {
		t.Fatalf("relay on with the heartbeat running: %v", err)
	}
	holds(t, ctx, c, 2*watchdogT)
	m := s.mark()

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	last := h.Stats().LastBeat
	seen := dropped(t, ctx, c)
	wd, ok := s.p.RelayWatchdog()
	if !ok || wd.Drops != 1 {
		t.Fatalf("watchdog state %+v", wd)
	}
	t.Logf("heartbeat stopped: last beat written %v before Close; relay_fb Low seen %v after the last beat, %v after Close (T %v); the simulator dropped it %v after expiry; %d beats written",
		stopped.Sub(last).Round(time.Millisecond), seen.Sub(last).Round(time.Millisecond), seen.Sub(stopped).Round(time.Millisecond),
		watchdogT, wd.LastDrop.At.Sub(wd.LastDrop.ExpiredAt), h.Stats().Beats)
	if d := seen.Sub(last); d > watchdogT+onePoll {
		t.Fatalf("relay dropped %v after the last beat; want within T + one poll (%v)", d, watchdogT+onePoll)
	}
	if d := wd.LastDrop.At.Sub(wd.LastHeartbeatAt); d < watchdogT {
		t.Fatalf("the simulator dropped the relay %v after the last edge it saw, before T", d)
	}
	s.expectWrites(m, []w{{"gpio", "watchdog", "relay", 0, true}})
	if on, err := relay.State(ctx); err != nil || on {
		t.Fatalf("relay state after the drop: %t, %v", on, err)
	}
	if lvl, err := c.Level(ctx, simgpio.Relay); err != nil || lvl != pgpio.High {
		t.Fatalf("relay output %v, %v: the watchdog drops the coil, not the agent's output", lvl, err)
	}

	// A new heartbeat alone does not restart it; a relay write with the
	// heartbeat alive does.
	heartbeat(t, ctx, c)
	holdsLow := func() {
		l, changed, err := c.WaitChange(ctx, simgpio.RelayFB, pgpio.Low, 2*beatPeriod)
		if err != nil || changed || l != pgpio.Low {
			t.Fatalf("relay_fb %v (changed %t, %v): re-energised by the heartbeat alone", l, changed, err)
		}
	}
	holdsLow()
	if err := relay.Set(ctx, true); err != nil {
		t.Fatalf("relay on again with the heartbeat alive: %v", err)
	}
	holds(t, ctx, c, watchdogT)
}

// TestHeartbeatProcessKilled runs the heartbeat and the relay in a child
// process (this test binary re-run as TestHeartbeatChild), as the agent
// would, and SIGKILLs it: nothing in the child gets to run, and the
// simulator's watchdog alone drops the relay within the timeout plus one poll
// of the kill.
func TestHeartbeatProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and waits for the watchdog (-short)")
	}
	s := startWatchdogRig(t)
	ctx := ctxFor(t)
	c := s.gpioClient()

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHeartbeatChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnvVar+"="+s.r.ControlPath())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "child: ") {
				if line == "child: ready" {
					ready <- nil
				} else {
					ready <- errors.New(line)
				}
				break
			}
		}
		for sc.Scan() { // drain
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the child never got the relay energised")
	}
	if !s.p.Relay() {
		t.Fatal("child ready but the simulator's relay is not energised")
	}
	holds(t, ctx, c, 2*watchdogT)
	m := s.mark()
	before, _ := s.p.RelayWatchdog()

	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	kill := time.Now()
	killed = true
	seen := dropped(t, ctx, c)
	wd, _ := s.p.RelayWatchdog()
	t.Logf("child SIGKILLed: relay_fb Low seen %v after the kill (T %v, beat period %v); last beat %v before the kill; the simulator dropped it %v after expiry; %d heartbeat edges seen",
		seen.Sub(kill).Round(time.Millisecond), watchdogT, beatPeriod, kill.Sub(wd.LastHeartbeatAt).Round(time.Millisecond),
		wd.LastDrop.At.Sub(wd.LastDrop.ExpiredAt), wd.HeartbeatEdges)
	if d := seen.Sub(kill); d > watchdogT+onePoll {
		t.Fatalf("relay dropped %v after the kill; want within T + one poll (%v)", d, watchdogT+onePoll)
	}
	if wd.Drops != before.Drops+1 || wd.HeartbeatEdges < 2*uint64(watchdogT/beatPeriod) {
		t.Fatalf("watchdog state %+v (before the kill %+v)", wd, before)
	}
	s.expectWrites(m, []w{{"gpio", "watchdog", "relay", 0, true}})
}

// TestHeartbeatChild is the child process of TestHeartbeatProcessKilled: on
// the socket in HCP_HIL_HEARTBEAT_CHILD it starts the heartbeat, energises
// the relay through drivers/gpio, says "child: ready" and waits to be killed.
// Run alone it skips.
func TestHeartbeatChild(t *testing.T) {
	sock := os.Getenv(childEnvVar)
	if sock == "" {
		t.Skip("the child of TestHeartbeatProcessKilled")
	}
	o := simgpio.DefaultOpts()
	o.Socket = sock
	c, err := simgpio.New(o)
	if err != nil {
		fmt.Println("child: simgpio:", err)
		return
	}
	hb, err := gpio.NewHeartbeat(c.Pin(simgpio.Heartbeat), gpio.DefaultHeartbeatOpts("heartbeat"))
	if err == nil {
		err = hb.Start(context.Background(), beatPeriod)
	}
	if err != nil {
		fmt.Println("child: heartbeat:", err)
		return
	}
	relay, err := gpio.NewOutput(c.Pin(simgpio.Relay), c.Pin(simgpio.RelayFB), gpio.DefaultOutputOpts("relay"))
	if err == nil {
		err = relay.Set(context.Background(), true)
	}
	if err != nil {
		fmt.Println("child: relay:", err)
		return
	}
	fmt.Println("child: ready")
	time.Sleep(time.Minute) // until killed; the parent's hang guard is shorter
}
