package agent

import (
	"log/slog"

	"hcp-edge/cmd/hcp-edge/internal/metrics"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/internal/diskspace"
)

// openDisk starts the state directory's free-space watcher (agent.disk):
// below the watermark the uplink stops taking commands, status, the
// dashboard, the metrics and sd_notify's STATUS say so, and the reserve is
// released when a write of the state file fails for want of space; alarm
// gets every change (the disk alarm's alert).
func openDisk(f rigconfig.File, socket string, log *slog.Logger, alarm func(diskspace.State)) (*diskspace.Watcher, error) {
	w, err := diskspace.New(diskspace.Opts{
		Dir:       f.Agent.StateDir,
		Watermark: f.Agent.Disk.Watermark(),
		Reserve:   f.Agent.Disk.Reserve(),
		Every:     f.Agent.Disk.PollEvery,
		Logger:    log.With("component", "disk"),
		OnChange:  func(s diskspace.State) { notifyDisk(s, socket, log); alarm(s) },
	})
	if err != nil {
		return nil, err
	}
	w.Start()
	return w, nil
}

// diskNotifyStatus is sd_notify's STATUS line: the control socket, after
// the alarm while the disk is low.
func diskNotifyStatus(s diskspace.State, socket string) string {
	status := "control socket " + socket
	if s.Low {
		status = "DISK LOW, command intake paused: " + s.Reason + "; " + status
	}
	return status
}

// notifyDisk puts the alarm in sd_notify's STATUS (no-op outside systemd).
func notifyDisk(s diskspace.State, socket string, log *slog.Logger) {
	if _, err := sdNotify("STATUS=" + diskNotifyStatus(s, socket)); err != nil {
		log.Warn("systemd notify failed", "err", err)
	}
}

// diskStatus is the disk's part of status (nil without a watcher).
func diskStatus(w *diskspace.Watcher) *reply.Disk {
	if w == nil {
		return nil
	}
	s := w.State()
	out := &reply.Disk{Low: s.Low, Free: s.Free, Total: s.Total, Watermark: s.Watermark, Reserve: s.Reserve,
		ReserveHeld: s.ReserveHeld, Reason: s.Reason}
	if !s.Since.IsZero() {
		t := s.Since
		out.Since = &t
	}
	return out
}

// diskMetrics is the metrics' reading of w.
func diskMetrics(w *diskspace.Watcher) func() metrics.Disk {
	return func() metrics.Disk {
		s := w.State()
		return metrics.Disk{Low: s.Low, Free: s.Free, Watermark: s.Watermark, ReserveHeld: s.ReserveHeld, Alarms: s.Alarms,
			WriteFailures: s.WriteFailures}
	}
}
