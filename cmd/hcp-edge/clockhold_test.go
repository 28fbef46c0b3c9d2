package main

import (
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/clocksync"
	"hcp-edge/session/executor"
	"hcp-edge/transport/wire"
)

// TestClockHold: the daemon with agent.hold_until_clock_synced (the
// default on a rig) reads the kernel's clock-sync state at start and shows
// it in status. While the kernel says the clock is not synchronised (this
// machine's answer decides which half runs: containers and CI machines
// usually are not), a new session is refused with task_rejected
// resource_unavailable "clock not synchronised", and the e-stop still
// reaches every output; when it is synchronised, the session runs.
func TestClockHold(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the daemon against the simulator")
	}
	e := newEnv(t, nil)
	e.replaceInConfig("hold_until_clock_synced: false", "hold_until_clock_synced: true")
	e.start()
	kernel := clocksync.Read()
	st := e.statusJSON()
	if st.Clock == nil || !st.Clock.HoldEnabled || st.Clock.Synced != (kernel.Known && kernel.Synced) {
		t.Fatalf("status clock %+v, the kernel says %v", st.Clock, kernel)
	}
	status := e.mustCLI("status").stdout
	t.Logf("this machine: %s", st.Clock.Line())
	task := localTask(t, executor.RigStatusName, `{}`)
	if st.Clock.SyncedOnce {
		if !strings.Contains(status, "clock: synchronised") {
			t.Fatalf("status:\n%s", status)
		}
		if r := e.mustCLI("submit", task, "--watch"); decodeFinal(t, r).Type != wire.TypeTaskCompleted {
			t.Fatalf("synchronised clock: rig-status did not complete:\n%s", r.stdout)
		}
		return
	}
	if !st.Clock.Holding || !strings.Contains(status, "NEW SESSIONS HELD") {
		t.Fatalf("unsynchronised clock, hold enabled: %+v\n%s", st.Clock, status)
	}
	r := e.cli("submit", task, "--watch")
	env := decodeFinal(t, r)
	rej, err := env.TaskRejected()
	if err != nil || rej.ReasonCode != "resource_unavailable" || rej.ReasonMessage != clocksync.HoldReason {
		t.Fatalf("held submit: exit %d, %+v %v\n%s", r.code, rej, err, r.stdout)
	}
	// The safety side does not wait for the clock.
	if r := e.cli("estop", "--operator", "alice", "--json"); r.code != 0 || !decodeReport(t, r.stdout).AllConfirmed {
		t.Fatalf("e-stop while the clock is held: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	e.assertSafe(true)
}
