package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rabbitmq/amqp091-go"

	"hcp-edge/device/devicetest"
	"hcp-edge/internal/diskspace"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// Sizes of TestDiskFull's state directory (a tmpfs) and configuration.
const (
	diskFullSize      = 16 << 20 // the tmpfs
	diskFullWatermark = 4        // MiB, agent.disk.watermark_mib
	diskFullReserve   = 2        // MiB, agent.disk.reserve_mib
	diskFullFlood     = 600      // task_submits the caller floods with
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts
// it at cleanup; without root (or mount) the test stops through
// MissingPeer (skipped loudly, failing under HCP_REQUIRE_PEERS=1).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		devicetest.MissingPeer(t, "root, to mount a tmpfs as the state directory", "run the test as root, as make ci does in its container")
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		devicetest.MissingPeer(t, fmt.Sprintf("a tmpfs mount (%v: %s)", err, strings.TrimSpace(string(out))), "run as root with CAP_SYS_ADMIN")
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a filler file in dir until only leave bytes are free (0:
// until the file system refuses), and returns its path.
func fill(t *testing.T, dir, name string, leave uint64) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		free, _, err := diskspace.Statfs(dir)
		if err != nil {
			t.Fatal(err)
		}
		if leave > 0 && free <= leave {
			return path
		}
		n := uint64(len(buf))
		if leave > 0 && free-leave < n {
			n = free - leave
		}
		if _, err := f.Write(buf[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatal(err)
		}
	}
}

// queueDepth is the number of messages ready in queue q (a passive
// declaration on a channel of its own).
func queueDepth(t *testing.T, conn *amqp091.Connection, q string) int {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("passive declare %s: %v", q, err)
	}
	return st.Messages
}

// TestDiskFull (issue 24): the state directory is a 16 MiB tmpfs
// (agent.disk: watermark 4 MiB, reserve 2 MiB). While a MoS2 session runs
// and the caller floods 600 task_submits, a filler file first takes the
// free space below the watermark (intake must pause before any write
// fails), then all of it (writes fail; the reserve is released). Through
// it: no command is dead-lettered, the commands wait in their queue, the
// uplink never reconnects, status answers and names the alarm, the trip
// monitor stays healthy, and the e-stop drives every output safe. A third
// filler then takes the space the released reserve left, so a session
// still running can record nothing: its end waits for space. Once the filler is
// removed, intake resumes by itself, every command is handled, every
// session is terminal with its final message delivered (the outbox
// drains), and the caller receives the MoS2 session's final message.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a full disk under the real daemon and broker")
	}
	b := newBrokerEnv(t) // skips loudly without a broker, fails under HCP_REQUIRE_PEERS=1
	dir := mountTmpfs(t, diskFullSize)
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	anchor := "  recovery_grace: 5m"
	i := strings.Index(string(cfg), anchor)
	if i < 0 {
		t.Fatalf("fixture: %q not in sim.yaml", anchor)
	}
	i += strings.IndexByte(string(cfg[i:]), '\n') + 1
	s := string(cfg[:i]) + fmt.Sprintf("  disk:\n    watermark_mib: %d\n    reserve_mib: %d\n    poll_every: 100ms\n",
		diskFullWatermark, diskFullReserve) + string(cfg[i:])
	if err := os.WriteFile(b.cfg, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	b.extra = append(b.extra, "HCP_STATE_DIR="+dir) // after environ's own: the last one counts
	edge := amqptest.Dial(t, b.edgeURL())
	cmdQ, _ := wire.CommandQueue(b.calleeID)
	dlq, _ := tamqp.DeadLetterQueue(b.calleeID)

	b.start()
	b.arm()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	if st := b.statusJSON(); st.Disk == nil || st.Disk.Low || !st.Disk.ReserveHeld {
		t.Fatalf("status at start: disk %+v", st.Disk)
	}
	run := b.startMoS2(t)

	// The flood: rig-status submits from alpha's login, published straight
	// to hcp.commands with confirms.
	var flood sync.WaitGroup
	flood.Add(1)
	floodErr := make(chan error, 1)
	go func() {
		defer flood.Done()
		floodErr <- publishFlood(b.conn, b.calleeID, b.callerID, diskFullFlood)
	}()
	time.Sleep(300 * time.Millisecond)

	// Phase A: below the watermark, above zero. Intake pauses before any
	// write fails.
	filler := fill(t, dir, "filler-a", (diskFullWatermark-1)<<20)
	low := waitDisk(t, b.env, "low", func(d *diskView) bool { return d.Low })
	t.Logf("phase A: %s", low.Reason)
	flood.Wait()
	if err := <-floodErr; err != nil {
		t.Fatal(err)
	}
	waiting := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if waiting = queueDepth(t, edge, cmdQ); waiting > 0 {
			break
		}
	}
	t.Logf("phase A: %d commands wait in %s", waiting, cmdQ)

	// Phase B: the disk is full. The reserve goes to the session's writes.
	filler2 := fill(t, dir, "filler-b", 0)
	// The session's next write fails and releases the reserve.
	released := waitDiskFor(t, b.env, "reserve released by a failed write", brokerLongGuard, func(d *diskView) bool { return !d.ReserveHeld })
	t.Logf("phase B: reserve released, %d bytes free", released.Free)
	time.Sleep(time.Second)
	t0 := time.Now()
	st := b.statusJSON()
	took := time.Since(t0)
	if st.Disk == nil || !st.Disk.Low {
		t.Fatalf("status while full: disk %+v", st.Disk)
	}
	for name, ok := range st.Healthy {
		if !ok {
			t.Errorf("trip monitor: %s unhealthy while the disk is full", name)
		}
	}
	t.Logf("phase B: status --json in %v (CLI included); disk %+v", took, *st.Disk)
	// Phase C: the space the reserve left is taken too. A session that
	// runs now can record nothing more: its end waits for space.
	runningAtC := b.sessionByID(run.sid).State == "RUNNING"
	filler3 := fill(t, dir, "filler-c", 0)
	t.Logf("phase C: the disk is full again; the MoS2 session was running: %t", runningAtC)
	time.Sleep(2 * time.Second)
	// With this rig's configuration, as a technician's CLI has the
	// installed one: should the daemon not finish within the CLI's bound (a
	// loaded machine: under make test-under-load it once took 1.48 s), the
	// CLI's fallback drives this rig's outputs, not the embedded default's.
	r := b.mustCLI("estop", "--operator", "olga", "--json", "--config", b.cfg)
	rep := decodeReport(t, r.stdout)
	if !rep.AllConfirmed {
		t.Errorf("e-stop while the disk is full: %+v", rep)
	}
	if rep.Via != "daemon" {
		// The CLI drove the outputs itself; the daemon's own e-stop must
		// still have latched the interlock, disk full or not.
		t.Logf("phase C: the CLI fell back after the daemon's bound:\n%s", r.stderr)
		b.waitLatched(true)
	} else if !rep.Latched {
		t.Errorf("e-stop while the disk is full: not latched: %+v", rep)
	}
	b.assertSafe(true)
	t.Logf("phase C: e-stop in %v, every output safe", r.took)
	if n := queueDepth(t, edge, dlq); n != 0 {
		t.Errorf("%d commands dead-lettered while the disk is full", n)
	}

	// Space returns: intake resumes by itself.
	for _, p := range []string{filler, filler2, filler3} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	freed := time.Now()
	waitDisk(t, b.env, "ok again", func(d *diskView) bool { return !d.Low && d.ReserveHeld })
	t.Logf("intake resumed %v after the space was freed", time.Since(freed).Round(time.Millisecond))
	fin := run.finish(t, brokerLongGuard)
	last := fin[len(fin)-1]
	if last.Type != wire.TypeTaskFailed && last.Type != wire.TypeTaskCompleted {
		t.Errorf("MoS2 session's final message is %s", last.Type)
	}
	t.Logf("MoS2 session %s ended with %s, delivered to the caller", run.sid, last.Type)
	deadline := time.Now().Add(brokerLongGuard)
	for queueDepth(t, edge, cmdQ) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s never drained", cmdQ)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.waitUplinkFor("drained", brokerLongGuard, func(u *uplinkStatus) bool { return u.Connected && u.Backlog == 0 })
	accepted := 0
	for _, s := range b.sessionsJSON() {
		if !terminalState(s.State) {
			t.Errorf("session %s (%s) is %s after the disk recovered", s.ID, s.Capability, s.State)
		}
		accepted++
	}
	dead := queueDepth(t, edge, dlq)
	logs := b.logs.String()
	for _, l := range strings.Split(logs, "\n") {
		for _, k := range []string{"short of space", "disk reserve released", "end of a session", "inbox consumer cancelled",
			"consumes again", "has space again", "connection lost", "not deleted yet"} {
			if strings.Contains(l, k) {
				t.Logf("daemon: %s", l)
				break
			}
		}
	}
	lost := strings.Count(logs, "amqp: connection lost")
	alarms := strings.Count(logs, "state directory short of space")
	held := strings.Count(logs, "command held unacked")
	t.Logf("daemon log: %d lines, %d at ERROR", strings.Count(logs, "\n"), strings.Count(logs, "level=ERROR"))
	t.Logf("after: %d commands dead-lettered, %d reconnects (connection lost), %d alarm lines, %d held deliveries, %d sessions all terminal, outbox drained",
		dead, lost, alarms, held, accepted)
	if dead != 0 {
		t.Errorf("%d commands dead-lettered in %s", dead, dlq)
	}
	if lost != 0 {
		t.Errorf("the uplink lost its connection %d times while the broker was fine", lost)
	}
	// bbolt may commit the end into pages its freelist already holds; when
	// it could not, the end must have been recorded once space returned.
	if strings.Contains(logs, "the end of a session cannot be recorded") &&
		!strings.Contains(logs, "the end of a session is recorded after the state directory took writes again") {
		t.Errorf("a session's end failed for want of space and was never recorded")
	}
	if alarms < 1 || alarms > 2 {
		t.Errorf("%d ERROR lines of the alarm: want one per alarm", alarms)
	}
	fmt.Printf("disk full: dead-lettered %d, reconnects %d, alarm lines %d, sessions %d (all terminal), commands %d\n",
		dead, lost, alarms, accepted, diskFullFlood)
}

// diskView is the disk's part of status --json.
type diskView = struct {
	Low         bool   `json:"low"`
	Free        uint64 `json:"free_bytes"`
	ReserveHeld bool   `json:"reserve_held"`
	Reason      string `json:"reason,omitempty"`
}

// waitDisk polls status --json until ok accepts its disk part (hang guard).
func waitDisk(t *testing.T, e *env, what string, ok func(*diskView) bool) *diskView {
	t.Helper()
	return waitDiskFor(t, e, what, hangGuard, ok)
}

// waitDiskFor is waitDisk with a guard of its own.
func waitDiskFor(t *testing.T, e *env, what string, guard time.Duration, ok func(*diskView) bool) *diskView {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		st := e.statusJSON()
		if d := st.Disk; d != nil {
			v := diskView{Low: d.Low, Free: d.Free, ReserveHeld: d.ReserveHeld, Reason: d.Reason}
			if ok(&v) {
				return &v
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("disk never %s: %+v", what, st.Disk)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// terminalState reports whether an L2 state name is terminal.
func terminalState(s string) bool {
	switch s {
	case "COMPLETED", "FAILED", "ABORTED", "REJECTED":
		return true
	}
	return false
}

// publishFlood publishes n rig-status task_submits as alpha to callee,
// with publisher confirms.
func publishFlood(conn *amqp091.Connection, callee, callerID string, n int) error {
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var confs []*amqp091.DeferredConfirmation
	for i := 0; i < n; i++ {
		id := uuid.NewString()
		body := fmt.Sprintf(`{"hcp_version":"1.0","message_id":%q,"timestamp":%q,"session_id":null,"type":"task_submit","payload":{"capability":"rig-status","caller_id":%q,"intent":"flood %d","inputs":{}}}`,
			id, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), callerID, i)
		p := amqp091.Publishing{ContentType: wire.ContentType, ContentEncoding: wire.ContentEncoding, DeliveryMode: wire.DeliveryMode,
			MessageId: id, Type: "task_submit", Timestamp: time.Now(), UserId: amqptest.AlphaUser, Body: []byte(body)}
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, wire.CommandsExchange, callee, false, false, p)
		if err != nil {
			return err
		}
		confs = append(confs, c)
	}
	for _, c := range confs {
		ok, err := c.WaitContext(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("flood: a submit was nacked")
		}
	}
	return nil
}
