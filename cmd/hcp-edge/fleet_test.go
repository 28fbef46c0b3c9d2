package main

// The fleet benchmark (make fleet, scripts/fleet.sh): N agents, each a
// daemon process with its own simulated rig, callee id and broker login, on
// the local cluster; one caller drives them all by callee_id. Not part of
// make test or make ci: it skips unless HCP_FLEET names the fleet sizes.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/executor"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/caller"
	"hcp-edge/transport/wire"
)

// fleetEnv names the fleet sizes to run, comma-separated (e.g. 1,20).
const fleetEnv = "HCP_FLEET"

// fleetGuard bounds one phase of one fleet size (a hang guard).
const fleetGuard = 15 * time.Minute

// fleetUser is agent i's broker login (scripts/fleet.sh provisions them).
func fleetUser(i int) string { return fmt.Sprintf("hcp-edge-fleet-%02d", i) }

// fleetPass is every fleet login's password (development only).
const fleetPass = "hcp-edge-fleet-dev"

// fleetRow is one fleet size's figures.
type fleetRow struct {
	n                   int
	statusSessions      int
	statusTook          time.Duration
	mos2Sessions        int
	mos2Took            time.Duration
	events              int
	p50, p99, maxLat    time.Duration
	agentRSS, agentMax  float64 // MiB, mean and max over agents of each one's peak
	brokerRSS           float64 // MiB, the three nodes at the end
	brokerRSS0          float64 // MiB, before the agents started
	driverRSS           float64 // MiB, this process: the in-process rigs and the caller
	queues, quorumQueue int
	queueMem            float64 // KiB per quorum queue (list_queues memory, mean)
	// CPU seconds used during the two phases: the three broker nodes, all
	// agents, and this process (the in-process rigs and the caller).
	cpuBroker, cpuAgents, cpuDriver float64
	failures                        []string // MoS2 sessions that ended task_failed
}

// TestFleet: see the file comment. Per fleet size: N daemons start (each on
// the cluster with HCP_AMQP_URLS of its own login, starting at a random
// node), then every agent runs 5 rig-status sessions back to back, all
// agents at once (sessions per second); then one MoS2 session per agent at
// once, each approved by its operator (the event stream under load). The
// caller measures each message's latency from its timestamp (set when the
// agent created it) to its arrival in the caller's task channel.
func TestFleet(t *testing.T) {
	spec := os.Getenv(fleetEnv)
	if spec == "" {
		t.Skip("the fleet benchmark runs under make fleet (HCP_FLEET=1,20)")
	}
	var sizes []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 99 {
			t.Fatalf("%s=%q: want sizes 1..99, comma-separated", fleetEnv, spec)
		}
		sizes = append(sizes, n)
	}
	requireCluster(t)
	var rows []fleetRow
	for _, n := range sizes {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			rows = append(rows, runFleet(t, n))
		})
	}
	printFleet(rows)
}

// latencies collects message latencies from all tasks.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) drain(t *testing.T, task *caller.Task) []*wire.Envelope {
	var out []*wire.Envelope
	timeout := time.After(fleetGuard)
	for {
		select {
		case m, ok := <-task.Messages():
			if !ok {
				return out
			}
			d := time.Since(m.Timestamp)
			l.mu.Lock()
			l.d = append(l.d, d)
			l.mu.Unlock()
			out = append(out, m)
		case <-timeout:
			t.Errorf("task not finished after %v", fleetGuard)
			return out
		}
	}
}

func (l *latencies) pct(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), l.d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// rssMiB is a process's resident set (VmRSS) in MiB, 0 when gone.
func rssMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// cpuSeconds is a process's user+system CPU time (/proc/PID/stat, 100 Hz
// ticks), 0 when gone.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 (state) on
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64) // utime, field 14
	k, _ := strconv.ParseFloat(f[12], 64) // stime, field 15
	return (u + k) / 100
}

// brokerPids are the cluster's Erlang VMs (their pid files under
// HCP_CLUSTER_DIR).
func brokerPids() []int {
	dir := os.Getenv("HCP_CLUSTER_DIR")
	if dir == "" {
		dir = "/var/tmp/hcp-cluster"
	}
	var out []int
	for i := 1; i <= 3; i++ {
		b, err := os.ReadFile(fmt.Sprintf("%s/n%d/pid", dir, i))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// brokerRSS sums the resident sets of the cluster's Erlang VMs (their pid
// files under HCP_CLUSTER_DIR).
func brokerRSS() float64 {
	total := 0.0
	for _, pid := range brokerPids() {
		total += rssMiB(pid)
	}
	return total
}

// queueMemory reads list_queues on node 1: how many queues of the fleet
// (prefix), how many quorum, and their mean memory in KiB.
func queueMemory(t *testing.T, prefix string) (queues, quorum int, kib float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", clusterScript, "ctl", "1", "-q", "list_queues", "-p", "hcp",
		"name", "type", "memory", "--no-table-headers").CombinedOutput()
	if err != nil {
		t.Logf("list_queues: %v\n%s", err, out)
		return 0, 0, 0
	}
	sum := 0.0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || !strings.Contains(f[0], prefix) {
			continue
		}
		queues++
		if f[1] == "quorum" {
			quorum++
			m, _ := strconv.ParseFloat(f[2], 64)
			sum += m
		}
	}
	if quorum > 0 {
		kib = sum / float64(quorum) / 1024
	}
	return queues, quorum, kib
}

// runFleet runs one fleet size and returns its figures.
func runFleet(t *testing.T, n int) fleetRow {
	row := fleetRow{n: n, brokerRSS0: brokerRSS()}
	suffix := strings.ReplaceAll(uuid.NewString(), "-", "")[:6]
	callerID := "fleet-" + suffix
	amqpConn := requireCluster(t)
	envs := make([]*brokerEnv, n)
	t0 := time.Now()
	for i := range envs {
		b := newBrokerEnvAs(t, amqpConn, fmt.Sprintf("fleet-%s-%02d", suffix, i+1), callerID)
		b.callerURLs = amqptest.ClusterURLs(amqptest.AlphaUser, "harness-alpha-dev")
		b.deleteQueuesOn(b.callerURLs)
		t.Setenv("HCP_AMQP_URLS", strings.Join(amqptest.ClusterURLs(fleetUser(i+1), fleetPass), ","))
		b.start()
		b.arm()
		envs[i] = b
	}
	for _, b := range envs {
		b.waitUplinkFor("connected", fleetGuard, func(u *uplinkStatus) bool { return u.Connected })
	}
	t.Logf("N=%d: %d agents started and connected in %v", n, n, time.Since(t0).Round(time.Millisecond))

	// Peak RSS per agent, sampled every second while the phases run.
	peaks := make([]float64, n)
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	var once sync.Once
	stopSampler := func() { once.Do(func() { close(stop); sampler.Wait() }) }
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			for i, b := range envs {
				peaks[i] = max(peaks[i], rssMiB(b.daemon.Process.Pid))
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	defer stopSampler()

	for i := range envs { // each agent publishes as its own login
		envs[0].calleeUsers = append(envs[0].calleeUsers, fleetUser(i+1))
	}
	c := envs[0].client(nil)
	var lat latencies
	cpu := func() (broker, agents, driver float64) {
		for _, pid := range brokerPids() {
			broker += cpuSeconds(pid)
		}
		for _, b := range envs {
			agents += cpuSeconds(b.daemon.Process.Pid)
		}
		return broker, agents, cpuSeconds(os.Getpid())
	}
	cb0, ca0, cd0 := cpu()
	// Phase 1: 5 rig-status sessions per agent, back to back, all agents at once.
	const perAgent = 5
	rs := &wire.TaskSubmit{Capability: executor.RigStatusName, Intent: "fleet rig-status", Inputs: []byte(`{"include":["furnace","interlock"]}`)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	completed := 0
	t1 := time.Now()
	for _, b := range envs {
		wg.Add(1)
		go func(callee string) {
			defer wg.Done()
			for k := 0; k < perAgent; k++ {
				task, err := c.SubmitTo(context.Background(), callee, rs)
				if err != nil {
					t.Error(err)
					return
				}
				lat.drain(t, task)
				if f := task.Final(); f != nil && f.Type == wire.TypeTaskCompleted {
					mu.Lock()
					completed++
					mu.Unlock()
				} else {
					t.Errorf("rig-status on %s ended with %v", callee, f)
				}
			}
		}(b.calleeID)
	}
	wg.Wait()
	row.statusSessions, row.statusTook = completed, time.Since(t1)

	// Phase 2: one MoS2 session per agent at once, each approved.
	ts := seedSubmit(t)
	t2 := time.Now()
	completed = 0
	for _, b := range envs {
		task, err := c.SubmitTo(context.Background(), b.calleeID, ts)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs := lat.drain(t, task)
			f := task.Final()
			mu.Lock()
			defer mu.Unlock()
			row.events += len(msgs)
			switch {
			case f != nil && f.Type == wire.TypeTaskCompleted:
				completed++
			case f != nil && f.Type == wire.TypeTaskFailed:
				// A measurement, not a verdict: on a starved machine the
				// envelope refuses actions on stale readings (fail closed).
				tf, _ := f.TaskFailed()
				row.failures = append(row.failures, fmt.Sprintf("%s: %s: %s", b.calleeID, tf.ErrorCode, tf.ErrorMessage))
			default:
				t.Errorf("MoS2 on %s ended with %v", b.calleeID, f)
			}
		}()
	}
	for _, b := range envs {
		p := b.waitSessionFor(fleetGuard, "pending approval", func(s sessionView) bool { return s.State == "PENDING" && s.ApprovalID != "" })
		b.mustCLI("approve", p.ApprovalID, "--operator", "olga")
	}
	wg.Wait()
	row.mos2Sessions, row.mos2Took = completed, time.Since(t2)
	row.p50, row.p99, row.maxLat = lat.pct(0.50), lat.pct(0.99), lat.pct(1)
	cb1, ca1, cd1 := cpu()
	row.cpuBroker, row.cpuAgents, row.cpuDriver = cb1-cb0, ca1-ca0, cd1-cd0
	stopSampler()

	for _, p := range peaks {
		row.agentRSS += p / float64(n)
		row.agentMax = max(row.agentMax, p)
	}
	row.brokerRSS = brokerRSS()
	row.driverRSS = rssMiB(os.Getpid())
	row.queues, row.quorumQueue, row.queueMem = queueMemory(t, suffix)
	t.Logf("N=%d: %+v; caller %+v", n, row, c.Stats())
	for _, b := range envs {
		if err := b.stop(); err != nil {
			lines := strings.Split(strings.TrimSpace(b.logs.String()), "\n")
			t.Errorf("daemon %s exit: %v; its log ends:\n%s", b.calleeID, err, strings.Join(lines[max(0, len(lines)-25):], "\n"))
		}
	}
	return row
}

// loadAvg is the machine's 1-minute load average (/proc/loadavg).
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// printFleet prints the table and the growth from the first size to the last.
func printFleet(rows []fleetRow) {
	if len(rows) == 0 {
		return
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nFLEET (agents as processes, rigs in-process at time scale 300, shipped monitor rates, 3-node RabbitMQ 3.10.8 cluster, quorum queues; load average at the end %s)\n",
		loadAvg())
	fmt.Fprintf(&sb, "%4s %14s %10s %12s %8s %9s %9s %9s %9s %9s %10s %10s %10s %8s\n",
		"N", "rig-status/s", "MoS2/s", "MoS2 wall", "events", "events/s", "lat p50", "lat p99", "agent RSS", "agent max", "broker RSS", "(+growth)", "driver RSS", "KiB/qq")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%4d %14.2f %10.3f %12v %8d %9.1f %9v %9v %8.1fM %8.1fM %9.0fM %+9.0fM %9.0fM %8.0f\n",
			r.n, float64(r.statusSessions)/r.statusTook.Seconds(), float64(r.mos2Sessions)/r.mos2Took.Seconds(),
			r.mos2Took.Round(100*time.Millisecond), r.events, float64(r.events)/r.mos2Took.Seconds(),
			r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond), r.agentRSS, r.agentMax,
			r.brokerRSS, r.brokerRSS-r.brokerRSS0, r.driverRSS, r.queueMem)
	}
	fmt.Fprintf(&sb, "CPU seconds used by both phases (wall = rig-status + MoS2 phase):\n")
	for _, r := range rows {
		wall := (r.statusTook + r.mos2Took).Seconds()
		fmt.Fprintf(&sb, "  N=%-3d wall %6.1fs  brokers %6.1fs (%4.2f cores)  agents %6.1fs (%.2f s per agent)  rigs+caller %6.1fs\n",
			r.n, wall, r.cpuBroker, r.cpuBroker/wall, r.cpuAgents, r.cpuAgents/float64(r.n), r.cpuDriver)
	}
	for _, r := range rows {
		if len(r.failures) > 0 {
			fmt.Fprintf(&sb, "  N=%d: %d of %d MoS2 sessions failed:\n    %s\n", r.n, len(r.failures), r.n, strings.Join(r.failures, "\n    "))
		}
	}
	a, z := rows[0], rows[len(rows)-1]
	if z.n > a.n {
		fmt.Fprintf(&sb, "growth N=%d -> N=%d (x%d agents): rig-status/s x%.2f, events/s x%.2f, p50 x%.2f, p99 x%.2f, agent RSS x%.2f, broker RSS growth %+.0f MiB -> %+.0f MiB (%.1f MiB per agent)\n",
			a.n, z.n, z.n/a.n,
			(float64(z.statusSessions)/z.statusTook.Seconds())/(float64(a.statusSessions)/a.statusTook.Seconds()),
			(float64(z.events)/z.mos2Took.Seconds())/(float64(a.events)/a.mos2Took.Seconds()),
			float64(z.p50)/float64(max(a.p50, 1)), float64(z.p99)/float64(max(a.p99, 1)), z.agentRSS/a.agentRSS,
			a.brokerRSS-a.brokerRSS0, z.brokerRSS-z.brokerRSS0, (z.brokerRSS-z.brokerRSS0)/float64(z.n))
	}
	fmt.Print(sb.String())
}
