package reply

import (
	"time"
)

// Tool is one tool's statistics (the --json output and the file).
type Tool struct {
	Tool       string            `json:"tool"`
	Version    string            `json:"version"`
	Calls      uint64            `json:"calls"`
	Succeeded  uint64            `json:"succeeded"`
	Refused    uint64            `json:"refused"`
	Failed     uint64            `json:"failed"`
	TowardSafe uint64            `json:"toward_safe"`
	RefusedBy  map[string]uint64 `json:"refused_by,omitempty"` // by rule
	P50        float64           `json:"p50_ms"`
	P99        float64           `json:"p99_ms"`
	Max        float64           `json:"max_ms"`
	Mean       float64           `json:"mean_ms"`
	// FreshWaits counts the calls that waited for a fresh reading before the
	// interlock judged them (late, not stale); MaxFreshWait is the longest.
	FreshWaits   uint64  `json:"fresh_waits,omitempty"`
	MaxFreshWait float64 `json:"max_fresh_wait_ms,omitempty"`
}

// Tools is the daemon's answer to tools.
type Tools struct {
	At time.Time `json:"at"`
	// Source says where the figures come from: "daemon", or the file the
	// daemon left when it stopped (set by the CLI).
	Source string `json:"source,omitempty"`
	Tools  []Tool `json:"tools"`
}
