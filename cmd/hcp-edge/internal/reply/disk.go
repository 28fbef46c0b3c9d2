package reply

import (
	"fmt"
	"time"
)

// Disk is the state directory's part of status --json: its free space
// against agent.disk.watermark_mib, and the alarm.
type Disk struct {
	// Low is the alarm: command intake is paused (commands wait in their
	// queue) until free space returns above the watermark.
	Low       bool   `json:"low"`
	Free      uint64 `json:"free_bytes"`
	Total     uint64 `json:"total_bytes"`
	Watermark uint64 `json:"watermark_bytes"`
	// Reserve is the size of the reserve for the terminal steps of running
	// sessions; ReserveHeld says whether it is allocated.
	Reserve     uint64     `json:"reserve_bytes"`
	ReserveHeld bool       `json:"reserve_held"`
	Since       *time.Time `json:"since,omitempty"`
	Reason      string     `json:"reason,omitempty"`
}

// Line is the disk's line of the human status.
func (d *Disk) Line() string {
	if d == nil {
		return ""
	}
	mib := func(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	if d.Low {
		return fmt.Sprintf("disk: LOW, command intake paused: %s (free %s, watermark %s, reserve held %t)", d.Reason, mib(d.Free), mib(d.Watermark), d.ReserveHeld)
	}
	return fmt.Sprintf("disk: ok, free %s of %s (watermark %s)", mib(d.Free), mib(d.Total), mib(d.Watermark))
}
