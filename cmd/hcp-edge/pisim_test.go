package main

// TestPiSim (issue 25): the agent at a Raspberry Pi's speed, hardware in the
// loop. The armv7 binary of `make dist` runs under qemu-arm-static, then
// under qemu-arm-static in a CPU quota calibrated so that a CPU-bound loop
// (testdata/spin) runs about ten times slower than natively — roughly a
// Raspberry Pi 3 — each beside the native linux/amd64 binary of the same
// `make dist`, against the simulated rig and the real broker.

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hcp-edge/device/devicetest"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/executor"
	"hcp-edge/transport/wire"
)

const (
	// piSimTarget is the slow-down of the spin loop, against native, that the
	// quota pass calibrates for by default: about a Raspberry Pi 3 against
	// this machine (HCP_PI_SIM_TARGET sets another).
	piSimTarget = 10.0
	// piSimPeriodUS is the CFS period of the quota: short, so that the
	// throttling comes in slices of a few ms (a uniformly slow CPU) rather
	// than the default 100 ms period's long stalls.
	piSimPeriodUS = 10000
	// piSimSpinRounds sizes one timed run of the spin loop (~0.2 s natively).
	piSimSpinRounds = "400"
	// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat
	// (100 on every Linux the agent runs on).
	clockTicks = 100
)

// piPass is one configuration of the daemon and what it measured.
type piPass struct {
	key   string // its name in HCP_PI_SIM_PASSES
	name  string
	exe   string   // the daemon's binary
	emu   []string // what it runs under
	scale float64  // the simulator's, the engine's and the Raman model's time scale
	slow  float64  // the spin loop's slow-down against native

	ok       bool
	ready    time.Duration
	idleCPU  float64 // % of one core
	verdicts []string
	mos2     time.Duration // MoS2 submit to the final message
	trip     []time.Duration
	estop    []time.Duration
	fallback int // e-stops the CLI completed itself (no acknowledgement within 150 ms)
	event    []time.Duration
	daemon   string // what the daemon log shows beyond the trips asked for
}

// TestPiSim runs, for the native build, the armv7 build under qemu-arm-static
// and the armv7 build under qemu-arm-static in a CPU quota (cgroup v2 cpu.max
// where the cpu controller is on a v2 hierarchy, else cgroup v1
// cpu.cfs_quota_us; root): the shipped capabilities through the broker
// (rig-status, a leak check on a tight and on a leaking chamber, the seed's
// MoS2 synthesis), each of which must end with the right verdict; then
// gas-leak trips (the simulator's gas-leak fault to the last gas line written
// safe, in the simulator's write log) and e-stops (the native CLI, start to
// every output read back safe), and the idle CPU of the daemon process over
// 10 s. It prints one table. The simulated rig is firmware-sim's rig (what
// rig-sim runs), native, in the test process.
//
//	make dist broker && HCP_PI_SIM=1 go test -run TestPiSim -v -timeout 20m ./cmd/hcp-edge/
//
// HCP_PI_SIM_PASSES: the passes run, a comma list of native, armv7 and quota
// (default all three; make ci runs quota alone, the slowest, nearest a Pi:
// the suite runs the native agent, and what completes at a tenth of the
// speed completes at a third); HCP_PI_SIM_N: trips and e-stops per pass
// (default 15); HCP_PI_SIM_QUOTA_SCALE:
// the quota pass's time scale (default 300, sim.yaml's); HCP_PI_SIM_TARGET:
// the slow-down the quota is calibrated for (default 10); HCP_PI_SIM_OUT: a
// file for the table; HCP_PI_SIM_DIST: the dist directory (default ../../dist).
func TestPiSim(t *testing.T) {
	if os.Getenv("HCP_PI_SIM") != "1" {
		t.Skip("a measurement at a Raspberry Pi's speed: HCP_PI_SIM=1 (make pi-sim) runs it")
	}
	qemu := devicetest.LookPath(t, "qemu-arm-static", "qemu-user-static")
	dist := os.Getenv("HCP_PI_SIM_DIST")
	if dist == "" {
		dist = "../../dist"
	}
	armBin, nativeBin := filepath.Join(dist, "linux-arm", "hcp-edge"), filepath.Join(dist, "linux-amd64", "hcp-edge")
	for _, f := range []string{armBin, nativeBin} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: run make dist first", err)
		}
	}
	if runtime.GOARCH != "amd64" {
		t.Skipf("the native pass runs dist/linux-amd64 (this is %s)", runtime.GOARCH)
	}
	n := 15
	if k, err := strconv.Atoi(os.Getenv("HCP_PI_SIM_N")); err == nil && k > 0 {
		n = k
	}
	quotaScale := 300.0
	if v, err := strconv.ParseFloat(os.Getenv("HCP_PI_SIM_QUOTA_SCALE"), 64); err == nil && v > 0 {
		quotaScale = v
	}
	target := piSimTarget
	if v, err := strconv.ParseFloat(os.Getenv("HCP_PI_SIM_TARGET"), 64); err == nil && v > 1 {
		target = v
	}
	cg := newCPUQuota(t)
	spin := buildSpin(t)

	// The slow-down factor, and the quota that brings it to piSimTarget.
	native := spin.best(t, 5, nil)
	emuSlow := float64(spin.best(t, 3, []string{qemu})) / float64(native)
	t.Logf("spin loop: native %v, under qemu-arm-static %.2f× slower", native.Round(time.Millisecond), emuSlow)
	quotaUS := max(1000, int(piSimPeriodUS*emuSlow/target))
	var quotaSlow float64
	for round := 1; ; round++ {
		quotaUS = min(max(quotaUS, 1000), piSimPeriodUS*runtime.NumCPU())
		if err := cg.set(quotaUS, piSimPeriodUS); err != nil {
			t.Fatal(err)
		}
		quotaSlow = float64(spin.best(t, 3, cg.wrap(qemu))) / float64(native)
		t.Logf("quota %d/%d µs (%.0f %% of one core): spin loop %.2f× slower than native", quotaUS, piSimPeriodUS,
			100*float64(quotaUS)/piSimPeriodUS, quotaSlow)
		if quotaSlow > 0.85*target && quotaSlow < 1.15*target || round == 4 {
			break
		}
		quotaUS = int(float64(quotaUS) * quotaSlow / target)
	}
	if quotaSlow < 0.7*target || quotaSlow > 1.3*target {
		// The passes still run and the table shows the factor reached; the
		// run did not measure the agent at the speed it claims.
		t.Errorf("the quota's slow-down %.2f× is not within 30 %% of %g× after calibrating", quotaSlow, target)
	}

	passes := []*piPass{
		{key: "native", name: "native (amd64)", exe: nativeBin, scale: 300, slow: 1},
		{key: "armv7", name: "armv7, qemu-arm-static", exe: armBin, emu: []string{qemu}, scale: 300, slow: emuSlow},
		{key: "quota", name: fmt.Sprintf("armv7, qemu + quota %d/%d µs", quotaUS, piSimPeriodUS), exe: armBin, emu: cg.wrap(qemu), scale: quotaScale, slow: quotaSlow},
	}
	if only := os.Getenv("HCP_PI_SIM_PASSES"); only != "" {
		passes = piPassesOnly(t, passes, only)
	}
	for _, p := range passes {
		p.ok = t.Run(strings.NewReplacer(" ", "_", ",", "", "/", "-").Replace(p.name), func(t *testing.T) { runPiPass(t, p, n) })
	}
	table := piSimTable(passes, n)
	t.Logf("pi-sim (%s, load average %s):\n%s", time.Now().UTC().Format("2006-01-02T15:04Z"), loadAvg(), table)
	if out := os.Getenv("HCP_PI_SIM_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// piPassesOnly keeps the passes named in only (HCP_PI_SIM_PASSES, a comma
// list of native, armv7 and quota); an unknown name fails the test.
func piPassesOnly(t *testing.T, passes []*piPass, only string) []*piPass {
	t.Helper()
	var kept []*piPass
	for _, k := range strings.Split(only, ",") {
		i := slices.IndexFunc(passes, func(p *piPass) bool { return p.key == strings.TrimSpace(k) })
		if i < 0 {
			t.Fatalf("HCP_PI_SIM_PASSES=%q: no pass %q (native, armv7, quota)", only, k)
		}
		kept = append(kept, passes[i])
	}
	return kept
}

// runPiPass runs one pass: the daemon as p says, through the broker.
func runPiPass(t *testing.T, p *piPass, n int) {
	b := newBrokerEnvWith(t, func() *env {
		e := newEnvAt(t, nil, p.scale)
		e.exe, e.emu = p.exe, p.emu
		return e
	})
	t0 := time.Now()
	b.start()
	p.ready = time.Since(t0)
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })

	// Idle: connected, disarmed, nothing running.
	time.Sleep(3 * time.Second)
	pid := b.daemon.Process.Pid
	c0, w0 := cpuTicks(t, pid), time.Now()
	time.Sleep(10 * time.Second)
	c1, w1 := cpuTicks(t, pid), time.Now()
	p.idleCPU = 100 * float64(c1-c0) / clockTicks / w1.Sub(w0).Seconds()
	t.Logf("idle CPU %.1f %% of one core over %v", p.idleCPU, w1.Sub(w0).Round(time.Millisecond))

	// The shipped capabilities, each with the right verdict.
	c := b.client(nil)
	out := completedOutputs(t, b.submitAndFinish(t, c, executor.RigStatusName, `{}`, brokerLongGuard))
	if out["furnace"] == nil || out["pressure"] == nil || out["interlock"] == nil {
		t.Fatalf("rig-status outputs %v", out)
	}
	p.verdicts = append(p.verdicts, "rig-status completed")
	b.arm()
	leak := func(what string, wantPass bool) {
		t.Helper()
		out := completedOutputs(t, b.submitAndFinish(t, c, executor.LeakCheckName, `{"max_rate_of_rise_pa_per_min":10}`, brokerLongGuard))
		rate, _ := out["rate_of_rise_pa_per_min"].(float64)
		t.Logf("leak-check, %s chamber: passed %v, rate of rise %.2f Pa/min", what, out["passed"], rate)
		if out["passed"] != wantPass || wantPass && !(rate > 0 && rate < 10) || !wantPass && !(rate > 10) {
			t.Fatalf("leak-check, %s chamber: %v", what, out)
		}
		p.verdicts = append(p.verdicts, fmt.Sprintf("leak %s: passed=%v (%.1f Pa/min)", what, out["passed"], rate))
	}
	leak("tight", true)
	if err := b.p.Inject(plant.FaultChamberLeak, "12"); err != nil {
		t.Fatal(err)
	}
	leak("leaking", false)
	if err := b.p.Clear(plant.FaultChamberLeak, "12"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil { // startMoS2 has a client of its own
		t.Fatal(err)
	}
	tm := time.Now()
	r := b.startMoS2(t)
	var got []*wire.Envelope
	guard := time.After(2 * brokerLongGuard)
	for done := false; !done; {
		select {
		case m, ok := <-r.task.Messages():
			if !ok {
				done = true
				break
			}
			if m.Type == wire.TypeEvent {
				// The event's timestamp (ms) to the caller client handing it over.
				p.event = append(p.event, time.Since(m.Timestamp))
			}
			got = append(got, m)
		case <-guard:
			t.Fatalf("MoS2 not finished after %v; got %d messages", 2*brokerLongGuard, len(got))
		}
	}
	p.mos2 = time.Since(tm)
	r.mu.Lock()
	all := append(append([]*wire.Envelope{}, r.early...), got...)
	r.mu.Unlock()
	if len(all) == 0 {
		t.Fatal("the caller processed no message")
	}
	checkStream(t, all, r.sid)
	grown := b.grown()
	verdict := checkCompleted(t, all[len(all)-1], r.ts, grown)
	p.verdicts = append(p.verdicts, fmt.Sprintf("MoS2 %s (%.2f layers grown, %v)", strings.ToLower(verdict), grown.Layers, p.mos2.Round(time.Second)))
	t.Logf("MoS2: %s in %v, %d events", verdict, p.mos2.Round(time.Millisecond), len(p.event))

	// Gas-leak trips: the leak detector's fault to the last gas line (three
	// MFC setpoints, three valves) written safe. The synthesis ended with the
	// chamber vented: pumped down first, as the operator would (with argon
	// flowing at atmosphere the monitor rightly trips over_pressure).
	b.pumpDown()
	for i := 0; i < n; i++ {
		b.rearm("pisim")
		b.makeUnsafe()
		mark, _ := b.p.WriteLogStats()
		onset := time.Now()
		if err := b.p.Inject(plant.FaultGasLeak, ""); err != nil {
			t.Fatal(err)
		}
		safeAt := waitGasLinesSafe(t, b.env, mark)
		p.trip = append(p.trip, safeAt.Sub(onset))
		if st := b.statusJSON(); !st.Latched || !strings.Contains(st.LatchReason, "gas_leak") {
			t.Fatalf("trip %d: status %+v", i, st)
		}
		if err := b.p.Clear(plant.FaultGasLeak, ""); err != nil {
			t.Fatal(err)
		}
	}
	// E-stops through the daemon by the native CLI, start to every output
	// read back safe. Each from a pumped-down chamber: an e-stop stops the
	// pump, and argon flowing into the closed chamber between e-stops would
	// at length trip over_pressure (rightly), which a slow host reaches.
	for i := 0; i < n; i++ {
		b.pumpDown()
		b.rearm("pisim")
		b.makeUnsafe()
		r := b.cli("estop", "--operator", "pisim", "--json", "--config", b.cfg)
		if r.code != 0 {
			t.Fatalf("e-stop %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		if rep := decodeReport(t, r.stdout); rep.Via != "daemon" {
			p.fallback++
			t.Logf("e-stop %d via %s: %s", i, rep.Via, strings.TrimSpace(r.stderr))
		}
		b.assertSafe(true)
		p.estop = append(p.estop, r.took)
	}
	t.Logf("trip p99 %v, e-stop p99 %v (%d by the CLI's fallback), event p99 %v",
		pctl(p.trip, 0.99), pctl(p.estop, 0.99), p.fallback, pctl(p.event, 0.99))
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
	p.daemon = daemonFindings(b.logs.String(), n)
	t.Logf("daemon log: %s", p.daemon)
	for _, line := range strings.Split(b.logs.String(), "\n") {
		if strings.Contains(line, "msg=trip ") && !strings.Contains(line, "trip=gas_leak_detected") {
			t.Logf("  %s", line)
		}
	}
}

// daemonFindings counts in a pass's daemon log what a slow host shows
// first: trips other than the n gas leaks the pass caused (a comms_loss trip
// is an instrument unread past the comms timeout), actions that waited for
// a fresh reading, and writes the instrument did not answer in time.
func daemonFindings(log string, n int) string {
	trips := map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		if i := strings.Index(line, "msg=trip trip="); i >= 0 {
			f := strings.Fields(line[i+len("msg=trip trip="):])
			if len(f) > 0 {
				trips[f[0]]++
			}
		}
	}
	trips["gas_leak_detected"] -= n
	var other []string
	for _, k := range slices.Sorted(maps.Keys(trips)) {
		if trips[k] != 0 {
			other = append(other, fmt.Sprintf("%s %d", k, trips[k]))
		}
	}
	if len(other) == 0 {
		other = []string{"none"}
	}
	return fmt.Sprintf("trips beyond the gas leaks: %s; fresh-reading waits %d; write retries %d", strings.Join(other, ", "),
		strings.Count(log, "the action waited for a fresh reading"), strings.Count(log, "did not answer the write in time"))
}

// waitGasLinesSafe waits for the write log after mark to hold every gas
// line written safe (each MFC's setpoint 0, each gas valve closed) and
// returns when the last of them was written.
func waitGasLinesSafe(t *testing.T, e *env, mark uint64) time.Time {
	t.Helper()
	want := []string{"mfc-ar/setpoint", "mfc-h2/setpoint", "mfc-h2s/setpoint", "dio/coil:ar_valve", "dio/coil:h2_valve", "dio/coil:h2s_valve"}
	deadline := time.Now().Add(hangGuard)
	for {
		seen := map[string]time.Time{}
		for _, w := range e.p.Writes(mark) {
			k := w.Device + "/" + w.Channel
			if _, ok := seen[k]; !ok && w.Accepted && w.Value == 0 {
				seen[k] = w.At
			}
		}
		var last time.Time
		missing := []string{}
		for _, k := range want {
			at, ok := seen[k]
			if !ok {
				missing = append(missing, k)
			} else if at.After(last) {
				last = at
			}
		}
		if len(missing) == 0 {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("gas-leak trip: %v not written safe within %v\n%s", missing, hangGuard, e.logs)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// cpuTicks is utime + stime of pid (qemu-user runs the guest in its own
// process: the emulated daemon's CPU is counted there).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	u, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	s, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %v %v", pid, err1, err2)
	}
	return u + s
}

// pctl is the p-th percentile of d (nearest rank; the max for p99 of fewer
// than 100 samples).
func pctl(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// piSimTable is the passes side by side, in Markdown.
func piSimTable(passes []*piPass, n int) string {
	var b strings.Builder
	row := func(name string, cell func(p *piPass) string) {
		b.WriteString("| " + name)
		for _, p := range passes {
			b.WriteString(" | " + cell(p))
		}
		b.WriteString(" |\n")
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }
	failed := func(p *piPass, s string) string {
		if !p.ok {
			return s + " (pass FAILED)"
		}
		return s
	}
	row("figure", func(p *piPass) string { return p.name })
	b.WriteString("|---")
	for range passes {
		b.WriteString("|---")
	}
	b.WriteString("|\n")
	row("spin loop slow-down vs native", func(p *piPass) string { return fmt.Sprintf("%.2f×", p.slow) })
	row("time scale (rig, engine)", func(p *piPass) string { return fmt.Sprintf("%g", p.scale) })
	row("capabilities", func(p *piPass) string { return failed(p, strings.Join(p.verdicts, "; ")) })
	row(fmt.Sprintf("gas-leak trip p50 / p99, ms (n=%d)", n), func(p *piPass) string {
		return failed(p, fmt.Sprintf("%s / %s", ms(pctl(p.trip, 0.5)), ms(pctl(p.trip, 0.99))))
	})
	row(fmt.Sprintf("e-stop p50 / p99, ms (n=%d, native CLI)", n), func(p *piPass) string {
		return failed(p, fmt.Sprintf("%s / %s (%d by fallback)", ms(pctl(p.estop, 0.5)), ms(pctl(p.estop, 0.99)), p.fallback))
	})
	row("event latency p50 / p99, ms (MoS2)", func(p *piPass) string {
		return failed(p, fmt.Sprintf("%s / %s (%d events)", ms(pctl(p.event, 0.5)), ms(pctl(p.event, 0.99)), len(p.event)))
	})
	row("daemon log", func(p *piPass) string { return failed(p, p.daemon) })
	row("idle CPU, % of one host core (10 s)", func(p *piPass) string { return failed(p, fmt.Sprintf("%.1f", p.idleCPU)) })
	row("daemon ready (exec to control socket)", func(p *piPass) string { return failed(p, ms(p.ready)) })
	return b.String()
}

// spinBins are testdata/spin built for this machine and for linux/arm GOARM=7.
type spinBins struct{ native, arm string }

func buildSpin(t *testing.T) spinBins {
	t.Helper()
	dir := t.TempDir()
	s := spinBins{native: filepath.Join(dir, "spin-native"), arm: filepath.Join(dir, "spin-arm")}
	for _, b := range []struct {
		out string
		env []string
	}{{s.native, []string{"CGO_ENABLED=0"}}, {s.arm, []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm", "GOARM=7"}}} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", b.out, "./testdata/spin")
		cmd.Env = append(os.Environ(), b.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build spin: %v\n%s", err, out)
		}
	}
	return s
}

// best runs the spin loop runs times (the armv7 build under emu, the
// native one when emu is nil) and returns the shortest of its own timings:
// on a shared machine the other processes only ever add to a CPU-bound
// run, so the shortest is the steadiest estimate of each side of the ratio.
func (s spinBins) best(t *testing.T, runs int, emu []string) time.Duration {
	t.Helper()
	var d []time.Duration
	for i := 0; i < runs; i++ {
		argv := []string{s.native, piSimSpinRounds}
		if emu != nil {
			argv = append(append(slices.Clone(emu), s.arm), piSimSpinRounds)
		}
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatalf("spin %v: %v", argv, err)
		}
		ns, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
		if err != nil {
			t.Fatalf("spin output %q: %v", out, err)
		}
		d = append(d, time.Duration(ns))
	}
	return slices.Min(d)
}

// cpuQuota is a cgroup of its own with the cpu controller, removed at cleanup.
type cpuQuota struct {
	dir string
	v2  bool
}

// newCPUQuota makes the cgroup: on a v2 hierarchy whose controllers include
// cpu (/sys/fs/cgroup, or the hybrid layout's /sys/fs/cgroup/unified) with
// cpu.max, else on the v1 cpu hierarchy with cpu.cfs_quota_us. Without one it
// writes to (root, a delegated cgroup) it stops through MissingPeer.
func newCPUQuota(t *testing.T) *cpuQuota {
	t.Helper()
	name := fmt.Sprintf("hcp-pisim-%d", os.Getpid())
	var tried []string
	try := func(q *cpuQuota, probe string) bool {
		if err := os.Mkdir(q.dir, 0o755); err != nil {
			tried = append(tried, err.Error())
			return false
		}
		if _, err := os.Stat(filepath.Join(q.dir, probe)); err != nil {
			tried = append(tried, err.Error())
			_ = os.Remove(q.dir)
			return false
		}
		t.Cleanup(func() {
			for i := 0; i < 50; i++ { // the daemon's exit empties it a moment after Wait
				if err := os.Remove(q.dir); err == nil || os.IsNotExist(err) {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Errorf("cgroup %s not removed", q.dir)
		})
		t.Logf("CPU quota through cgroup %s", q.dir)
		return true
	}
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		ctrl, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
		if err != nil || !slices.Contains(strings.Fields(string(ctrl)), "cpu") {
			continue
		}
		_ = os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+cpu"), 0o644)
		if q := (&cpuQuota{dir: filepath.Join(root, name), v2: true}); try(q, "cpu.max") {
			return q
		}
	}
	for _, root := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
		if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
			continue
		}
		if q := (&cpuQuota{dir: filepath.Join(root, name)}); try(q, "cpu.cfs_quota_us") {
			return q
		}
	}
	devicetest.MissingPeer(t, fmt.Sprintf("a cgroup with the cpu controller to create (v2 cpu.max or v1 cpu.cfs_quota_us; %v)", tried),
		"run as root on Linux")
	return nil
}

// set limits the group to quotaUS of CPU time in every periodUS.
func (q *cpuQuota) set(quotaUS, periodUS int) error {
	if q.v2 {
		return os.WriteFile(filepath.Join(q.dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quotaUS, periodUS)), 0o644)
	}
	// The period first: cfs_quota_us must stay within what the period allows.
	_ = os.WriteFile(filepath.Join(q.dir, "cpu.cfs_quota_us"), []byte("-1"), 0o644)
	if err := os.WriteFile(filepath.Join(q.dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(periodUS)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(q.dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(quotaUS)), 0o644)
}

// wrap is emu run inside the group: a shell moves itself into it, then
// execs emu and the arguments that follow (the pid stays the same).
func (q *cpuQuota) wrap(emu ...string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ >"$0" && exec "$@"`, filepath.Join(q.dir, "cgroup.procs")}, emu...)
}
