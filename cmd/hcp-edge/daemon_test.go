package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/configs"
	"hcp-edge/device/devicetest"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/regmap/regmaptest"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
	"hcp-edge/internal/syncbuf"
	"hcp-edge/session/audit"
	"hcp-edge/transport/amqp/amqptest"
)

// hangGuard bounds every wait of these tests: a guard against hangs, never a
// performance assertion.
const hangGuard = 20 * time.Second

// pumpGuard bounds a wait for the simulated chamber to pump down, a process
// of the plant's on the scaled clock: under -race -count=5 on two loaded
// cores (load 8) one took longer than hangGuard (1783 Pa left of 1e5 after
// 20 s, TestDashboardInBrowser). Still a guard against hangs only.
const pumpGuard = 60 * time.Second

// bin is hcp-edge built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	devicetest.WidenParallel(parallelTests)
	dir, err := os.MkdirTemp("", "hcp-edge-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "hcp-edge")
	if b := os.Getenv("HCP_EDGE_BIN"); b != "" {
		// A binary built elsewhere, e.g. with the Makefile's flags for a
		// measurement (scripts/bench.sh: TestEStopLatency times the CLI's
		// start-up, which the flags change).
		if bin, err = filepath.Abs(b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "using %s (HCP_EDGE_BIN)\n", bin)
	} else {
		t0 := time.Now()
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "built %s in %v\n", bin, time.Since(t0).Round(time.Millisecond))
	}
	code := amqptest.Main(m) // m.Run, then the bench vhost deleted
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// parallelTests is how many of this package's parallel tests run at once
// unless -test.parallel says otherwise: each is a daemon, a simulated rig
// and a vhost of its own that spend their time waiting on the scaled
// clock, the broker and the daemon's subprocess, not on the CPU.
const parallelTests = 8

// env is one simulated rig (in-process) and one daemon (a subprocess).
type env struct {
	t       testing.TB
	r       *rig.Rig
	p       *plant.Plant
	dir     string // state dir
	cfg     string // config file
	sock    string
	daemon  *exec.Cmd
	exited  chan error
	logs    *syncbuf.Buffer // the daemon writes it while the test reads
	stopped bool
	simDir  string   // the rig-sim process's run directory when r is nil
	extra   []string // environment of the daemon and the CLI beyond the state paths (a parallel test cannot t.Setenv)
	// exe is the daemon's binary (empty: bin, the one TestMain built) and
	// emu the command it runs under (an emulator, a cgroup wrapper; nil:
	// none): the daemon is emu... exe run --config cfg. The CLI is always bin.
	exe string
	emu []string
}

// monitorYAML replaces the monitor section of the embedded config.
type monitorYAML struct{ kick, watchdog string }

func newEnv(t testing.TB, mon *monitorYAML) *env {
	t.Helper()
	return newEnvAt(t, mon, 300)
}

// newEnvAt is newEnv with the simulator, the session engine and the Raman
// model at scale sim seconds per wall second (sim.yaml's 300, or slower for
// a slow host: TestPiSim).
func newEnvAt(t testing.TB, mon *monitorYAML, scale float64) *env {
	t.Helper()
	r, err := rig.Start(context.Background(), rig.Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: scale,
		StartSerial: rig.SerialInstruments})
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	e := &env{t: t, r: r, p: r.Plant(), dir: t.TempDir()}
	e.sock = filepath.Join(e.dir, "control.sock")
	cfg := string(configs.SimYAML)
	rep := func(from, to string) {
		if !strings.Contains(cfg, from) {
			t.Fatalf("fixture: %q not in sim.yaml", from)
		}
		cfg = strings.Replace(cfg, from, to, 1)
	}
	rep("sim_dir: /tmp/hcp-rig-sim", "sim_dir: "+r.Dir())
	rep("address: 127.0.0.1:5020", "address: "+r.ModbusAddr().String())
	if scale != 300 {
		if n := strings.Count(cfg, "time_scale: 300"); n != 2 {
			t.Fatalf("fixture: %d time_scale: 300 in sim.yaml, want 2 (raman, agent)", n)
		}
		cfg = strings.ReplaceAll(cfg, "time_scale: 300", fmt.Sprintf("time_scale: %g", scale))
	}
	if mon != nil {
		rep("kick_every: 1s", "kick_every: "+mon.kick)
		rep("watchdog_timeout: 5s", "watchdog_timeout: "+mon.watchdog)
	}
	e.cfg = filepath.Join(e.dir, "hcp-edge.yaml")
	if err := os.WriteFile(e.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e.pumpDown()
	return e
}

// replaceInConfig replaces the first from in the env's configuration file
// with to; a from the file does not hold fails the test (the fixture moved).
func (e *env) replaceInConfig(from, to string) {
	e.t.Helper()
	b, err := os.ReadFile(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if !strings.Contains(string(b), from) {
		e.t.Fatalf("fixture: %q not in the configuration", from)
	}
	if err := os.WriteFile(e.cfg, []byte(strings.Replace(string(b), from, to, 1)), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// pumpDown brings the chamber below the over_pressure threshold (a vented
// chamber at 1013 mbar trips over_pressure, 900 mbar) through the
// simulator's own panel, as an operator would before starting the agent.
func (e *env) pumpDown() {
	e.t.Helper()
	if err := e.p.DIOWriteCoils("test", 0, []bool{true, true}); err != nil { // pump, gate valve
		e.t.Fatal(err)
	}
	deadline := time.Now().Add(pumpGuard)
	for e.p.ChamberPressure() > 100 { // 1 mbar
		if time.Now().After(deadline) {
			e.t.Fatalf("chamber did not pump down: %.0f Pa", e.p.ChamberPressure())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) environ() []string {
	sim := e.simDir
	if e.r != nil {
		sim = e.r.Dir()
	}
	return append(append(os.Environ(), "HCP_STATE_DIR="+e.dir, "HCP_CONTROL_SOCKET="+e.sock, "HCP_RIG_SIM_DIR="+sim), e.extra...)
}

// start runs the daemon and waits until its control socket answers.
func (e *env) start() {
	e.t.Helper()
	e.logs = &syncbuf.Buffer{}
	exe := e.exe
	if exe == "" {
		exe = bin
	}
	argv := append(append(append([]string{}, e.emu...), exe), "run", "--config", e.cfg)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = e.environ()
	cmd.Stdout, cmd.Stderr = e.logs, e.logs
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.daemon, e.exited = cmd, make(chan error, 1)
	go func() { e.exited <- cmd.Wait() }()
	e.t.Cleanup(func() {
		if e.stopped {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.exited:
		case <-time.After(hangGuard):
			_ = cmd.Process.Kill()
			<-e.exited
		}
		if e.t.Failed() {
			e.t.Logf("daemon log:\n%s", e.logs)
		}
	})
	t0 := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := control.Do(ctx, e.sock, control.Request{Op: control.OpStatus}, 500*time.Millisecond)
		cancel()
		if err == nil {
			e.t.Logf("daemon ready after %v (exec to control socket answering)", time.Since(t0).Round(time.Millisecond))
			return
		}
		select {
		case err := <-e.exited:
			e.stopped = true
			e.t.Fatalf("daemon exited at start: %v\n%s", err, e.logs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Since(t0) > hangGuard {
			e.t.Fatalf("daemon not ready: %v\n%s", err, e.logs)
		}
	}
}

// stop sends SIGTERM and returns the daemon's exit error.
func (e *env) stop() error {
	e.t.Helper()
	_ = e.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-e.exited:
		e.stopped = true
		return err
	case <-time.After(hangGuard):
		e.t.Fatalf("daemon did not stop on SIGTERM\n%s", e.logs)
	}
	return nil
}

type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// cli runs hcp-edge with args against this env.
func (e *env) cli(args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(t0)}
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		r.code = xe.ExitCode()
	case err != nil:
		e.t.Fatalf("hcp-edge %v: %v", args, err)
	}
	return r
}

func (e *env) mustCLI(args ...string) result {
	e.t.Helper()
	r := e.cli(args...)
	if r.code != 0 {
		e.t.Fatalf("hcp-edge %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// makeUnsafe puts outputs in non-safe states through the simulator's panel
// (the sessions that would do it do not exist yet): coils on, scrubber off,
// heater enabled, an MFC flowing.
func (e *env) makeUnsafe() {
	e.t.Helper()
	if err := e.p.DIOWriteCoils("test", 2, []bool{true, true, false, false, false}); err != nil { // ar, h2 on; h2s, vent, scrubber off
		e.t.Fatal(err)
	}
	if err := e.p.FurnaceWriteHolding("test", 2, []uint16{1}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.p.SetMFCSetpoint("ar", 100); err != nil {
		e.t.Fatal(err)
	}
}

// assertSafe checks the plant: relay off, coils at their safe levels, heater
// disabled, every MFC held.
func (e *env) assertSafe(mfcs bool) {
	e.t.Helper()
	s := e.p.Snapshot()
	var bad []string
	if s.GPIO["relay"] {
		bad = append(bad, "relay energised")
	}
	for name, on := range s.Coils {
		if on != (name == "scrubber") {
			bad = append(bad, fmt.Sprintf("coil %s=%v", name, on))
		}
	}
	if s.Furnace.HeaterEnable {
		bad = append(bad, "heater enabled")
	}
	if mfcs {
		for gas, m := range s.MFCs {
			if !m.Hold || m.SetpointSCCM != 0 {
				bad = append(bad, fmt.Sprintf("mfc %s hold=%v setpoint=%v", gas, m.Hold, m.SetpointSCCM))
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		e.t.Fatalf("not safe: %v", bad)
	}
}

func decodeReport(t testing.TB, s string) safeReport {
	t.Helper()
	var r safeReport
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("estop --json output: %v\n%s", err, s)
	}
	return r
}

func TestEStopThroughDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the rig and the daemon")
	}
	e := newEnv(t, nil)
	e.start()

	e.mustCLI("arm", "--operator", "alice")
	if !e.p.Relay() {
		t.Fatal("arm: relay not energised")
	}
	e.makeUnsafe()
	mark, _ := e.p.WriteLogStats()
	r := e.mustCLI("estop", "--operator", "alice", "--json")
	rep := decodeReport(t, r.stdout)
	if rep.Via != "daemon" || !rep.AllConfirmed || !rep.Latched {
		t.Fatalf("report %+v", rep)
	}
	t.Logf("e-stop through the daemon: %v from CLI start to read-backs confirmed", r.took)
	e.assertSafe(true)
	got := map[string]bool{}
	for _, w := range e.p.Writes(mark) {
		if w.Accepted {
			got[fmt.Sprintf("%s/%s=%g", w.Device, w.Channel, w.Value)] = true
		}
	}
	for _, want := range []string{"gpio/relay=0", "furnace/heater_enable=0", "dio/coil:ar_valve=0", "dio/coil:h2_valve=0",
		"dio/coil:scrubber=1", "dio/coil:pump=0", "mfc-ar/hold=1", "mfc-ar/setpoint=0"} {
		if !got[want] {
			t.Errorf("write log after the e-stop lacks %s (has %v)", want, got)
		}
	}

	// status --json shows the latch; arm is refused while latched.
	var st statusResult
	if err := json.Unmarshal([]byte(e.mustCLI("status", "--json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Latched || !strings.Contains(st.LatchReason, "alice") || len(st.Margins) == 0 || len(st.Healthy) == 0 {
		t.Fatalf("status after e-stop: %+v", st)
	}
	if r := e.cli("arm", "--operator", "alice"); r.code != 1 || !strings.Contains(r.stderr, "latched") {
		t.Fatalf("arm while latched: exit %d, %s", r.code, r.stderr)
	}
	if r := e.cli("reset"); r.code != 2 {
		t.Fatalf("reset without --operator: exit %d", r.code)
	}
	e.mustCLI("reset", "--operator", "bob")
	if err := json.Unmarshal([]byte(e.mustCLI("status", "--json").stdout), &st); err != nil || st.Latched {
		t.Fatalf("status after reset: %+v, %v", st, err)
	}
	human := e.mustCLI("status").stdout
	for _, want := range []string{"not latched", "furnace.temperature", "chamber.pressure", "INSTRUMENT"} {
		if !strings.Contains(human, want) {
			t.Errorf("status table lacks %q:\n%s", want, human)
		}
	}
	e.mustCLI("arm", "--operator", "bob")
	if !e.p.Relay() {
		t.Fatal("re-arm: relay not energised")
	}

	// SIGTERM: the shutdown policy (safe_state) leaves the relay off.
	if err := e.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, e.logs)
	}
	if e.p.Relay() {
		t.Fatal("relay energised after a safe_state shutdown")
	}
	// The daemon is down: status names the socket and the fix.
	if r := e.cli("status"); r.code != 1 || !strings.Contains(r.stderr, e.sock) || !strings.Contains(r.stderr, "hcp-edge run") {
		t.Fatalf("status with the daemon down: exit %d\n%s", r.code, r.stderr)
	}

	// The audit log has the e-stop, the reset and the arming, in an intact chain.
	db, err := bolt.Open(filepath.Join(e.dir, stateFile), 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	alog, err := audit.Open(db, audit.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := alog.Verify(context.Background())
	if err != nil {
		t.Fatalf("audit chain: %v", err)
	}
	var all []byte
	_ = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("audit")).ForEach(func(_, v []byte) error { all = append(all, v...); return nil })
	})
	for _, want := range []string{`"decision":"halted"`, "estop by alice", `"decision":"reset"`, `"operator":"bob"`, `"decision":"armed"`, "agent shutdown"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("audit log (%d entries) lacks %s", n, want)
		}
	}
}

func TestEStopWithDaemonHung(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the rig and the daemon")
	}
	e := newEnv(t, nil)
	e.start()
	e.mustCLI("arm", "--operator", "alice")
	e.makeUnsafe()
	if err := e.daemon.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	r := e.cli("estop", "--operator", "alice", "--json", "--config", e.cfg)
	_ = e.daemon.Process.Signal(syscall.SIGCONT)
	rep := decodeReport(t, r.stdout)
	t.Logf("e-stop with the daemon hung: exit %d after %v (fallback)\n%s", r.code, r.took, r.stderr)
	if rep.Via != "fallback" || !strings.Contains(r.stderr, "did not acknowledge within 150ms") {
		t.Fatalf("report %+v\n%s", rep, r.stderr)
	}
	// The relay, the coils and the heater must be confirmed whatever happens
	// to the serial ports (held exclusively by the hung daemon unless root).
	confirmed := map[string]bool{}
	for _, o := range rep.Outputs {
		confirmed[o.Instrument] = o.Confirmed
	}
	for _, must := range []string{"relay", "furnace", "dio/pump", "dio/ar_valve", "dio/h2_valve", "dio/scrubber"} {
		if !confirmed[must] {
			t.Errorf("%s not confirmed safe by the fallback: %+v", must, rep.Outputs)
		}
	}
	mfcsOK := confirmed["mfc-ar"] && confirmed["mfc-h2"] && confirmed["mfc-h2s"]
	if mfcsOK != (r.code == 0) {
		t.Errorf("exit %d with MFCs confirmed=%v", r.code, mfcsOK)
	}
	if !mfcsOK {
		t.Logf("MFC ports not reachable from the fallback (exclusive open): %+v", rep.Outputs)
	}
	e.assertSafe(mfcsOK)
	// Resumed, the daemon must serve its control socket again (it may have
	// latched a comms_loss trip meanwhile: that is the safe outcome).
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rep, err := control.Do(ctx, e.sock, control.Request{Op: control.OpStatus}, time.Second)
		cancel()
		if err == nil && rep.OK {
			break
		}
		if time.Now().After(deadline) {
			// SIGQUIT makes the Go runtime print every goroutine's stack to the
			// daemon's stderr (e.logs): the failure then explains itself.
			_ = e.daemon.Process.Signal(syscall.SIGQUIT)
			time.Sleep(time.Second)
			t.Fatalf("the daemon does not answer after SIGCONT: %v %+v\n%s", err, rep, e.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDeadAgentDropsHeater(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the rig and the daemon")
	}
	const watchdog = time.Second
	e := newEnv(t, &monitorYAML{kick: "200ms", watchdog: "1s"})
	e.start()
	e.mustCLI("arm", "--operator", "alice")

	// The heater through a separate driver on its own Modbus connection (the
	// session engine that would do it does not exist yet).
	o := modbus.DefaultOpts()
	o.Transport, o.Address, o.Timeout = modbus.TransportTCP, e.r.ModbusAddr().String(), time.Second
	bus, err := modbus.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	f, err := regmaptest.SimFurnace(bus)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	// Alive: three watchdog periods without a write from the test; the
	// daemon's kicks keep the heater on. On a machine so loaded that no kick
	// got through for a whole timeout (the daemon logs each failed kick),
	// the firmware must drop the heater, and did right: its record must show
	// that gap, and the test tries again (three times at most).
	const tries = 3
	for try := 1; ; try++ {
		if err := f.SetHeater(ctx, true); err != nil {
			t.Fatal(err)
		}
		if s := e.p.Snapshot().Furnace; s.WatchdogTimeoutMs != 1000 || !s.HeaterActive {
			t.Fatalf("furnace after heater on: watchdog %d ms, active %v", s.WatchdogTimeoutMs, s.HeaterActive)
		}
		time.Sleep(3 * watchdog)
		s := e.p.Snapshot().Furnace
		if s.HeaterEnable && !s.WatchdogExpired {
			break
		}
		trip := s.WatchdogTrip
		if gap := trip.ExpiredAt.Sub(trip.LastKick); trip.ExpiredAt.IsZero() || gap < watchdog ||
			!strings.Contains(e.logs.String(), "furnace watchdog kick failed") || try == tries {
			t.Fatalf("heater dropped with the daemon alive (try %d): %+v\n%s", try, s, e.logs)
		}
		t.Logf("try %d: no kick reached the controller for %v (the daemon logged failed kicks on this loaded machine); the heater dropped as it must; again",
			try, trip.ExpiredAt.Sub(trip.LastKick).Round(time.Millisecond))
	}
	// Dead: SIGKILL, no shutdown path runs; the controller must drop the
	// heater by itself within its watchdog timeout.
	if err := e.daemon.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-e.exited
	e.stopped = true
	for {
		s := e.p.Snapshot().Furnace
		if !s.HeaterEnable && s.WatchdogExpired && s.OutputPct == 0 {
			break
		}
		if time.Since(killed) > watchdog+hangGuard/4 {
			t.Fatalf("heater still enabled %v after SIGKILL: %+v", time.Since(killed), s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	dropped := time.Now()
	// The firmware's own record of the expiry, on its clock: not early (the
	// timeout had run out since the last kick), and at its first check past
	// the deadline (the check before it was still within the timeout) —
	// whenever this test got to look, however busy the machine.
	trip := e.p.Snapshot().Furnace.WatchdogTrip
	t.Logf("dead agent: heater dropped %v after the last kick (previous check at %v; seen by the test %v after SIGKILL; watchdog %v)",
		trip.ExpiredAt.Sub(trip.LastKick).Round(time.Millisecond), trip.CheckedBefore.Sub(trip.LastKick).Round(time.Millisecond),
		dropped.Sub(killed).Round(time.Millisecond), watchdog)
	// The expiry is the one this kill caused: the firmware recorded it after
	// the kill. (Not "the last kick before the kill": a kick the daemon wrote
	// just before it died can be taken in by the simulator after the kill on a
	// loaded machine — 10 ms later once under make ci — and a dead process
	// sends nothing, so that kick is still the daemon's last.)
	if trip.ExpiredAt.IsZero() || !trip.ExpiredAt.After(killed) {
		t.Fatalf("watchdog trip %+v: not after the kill at %v", trip, killed)
	}
	if d := trip.ExpiredAt.Sub(trip.LastKick); d < watchdog {
		t.Errorf("heater dropped %v after the last kick: before the %v watchdog ran out", d, watchdog)
	}
	if d := trip.CheckedBefore.Sub(trip.LastKick); d >= watchdog {
		t.Errorf("the firmware checked %v after the last kick without dropping the heater: past the %v watchdog", d, watchdog)
	}
}
