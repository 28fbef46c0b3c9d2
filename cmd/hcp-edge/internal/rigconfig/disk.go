package rigconfig

import "time"

// Disk is agent.disk: the free-space watermark of the state directory and
// the reserve kept for the terminal steps of running sessions
// (internal/diskspace; docs/STATE.md, docs/SAFETY.md).
type Disk struct {
	// WatermarkMiB is the free space of the state directory's file system,
	// in MiB, below which the agent stops taking commands (they wait in
	// their queue) until space returns. Default 64; at least 1 and below
	// the file system's size.
	WatermarkMiB *int `yaml:"watermark_mib"`
	// ReserveMiB is the size of the reserve file (state_dir/disk-reserve),
	// in MiB, released when a write of the state file fails for want of
	// space so running sessions can record their end. Default 4; 0: none.
	ReserveMiB *int `yaml:"reserve_mib"`
	// PollEvery is how often the free space is read (default 1s).
	PollEvery time.Duration `yaml:"poll_every"`
}

// Defaults of agent.disk.
const (
	DefaultDiskWatermarkMiB = 64
	DefaultDiskReserveMiB   = 4
)

func (d *Disk) defaults() {
	if d.WatermarkMiB == nil {
		v := DefaultDiskWatermarkMiB
		d.WatermarkMiB = &v
	}
	if d.ReserveMiB == nil {
		v := DefaultDiskReserveMiB
		d.ReserveMiB = &v
	}
	if d.PollEvery == 0 {
		d.PollEvery = time.Second
	}
}

// Watermark is the watermark in bytes (after Defaults).
func (d Disk) Watermark() uint64 { return uint64(max(*d.WatermarkMiB, 0)) << 20 }

// Reserve is the reserve in bytes (after Defaults).
func (d Disk) Reserve() uint64 { return uint64(max(*d.ReserveMiB, 0)) << 20 }

func (d Disk) validate(bad func(key, format string, args ...any)) {
	if w := *d.WatermarkMiB; w < 1 {
		bad("agent.disk.watermark_mib", "%d: the watermark must be at least 1 MiB (0 would let the disk fill up before intake pauses)", w)
	}
	if r := *d.ReserveMiB; r < 0 {
		bad("agent.disk.reserve_mib", "%d is negative (0: no reserve)", r)
	}
	if d.PollEvery < 10*time.Millisecond || d.PollEvery > time.Minute {
		bad("agent.disk.poll_every", "%v is outside 10ms..1m", d.PollEvery)
	}
}
