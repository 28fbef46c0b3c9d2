package uplink

import (
	"hcp-edge/cmd/hcp-edge/internal/metrics"
)

// MetricsState is the uplink at a scrape: the Supervisor's snapshot.
func (u *Uplink) MetricsState() metrics.Uplink {
	s := u.sup.State()
	return metrics.Uplink{Connected: s.Connected, Blocked: s.Blocked, Reconnects: s.Reconnects,
		Backlog: s.Backlog, Telemetry: s.Telemetry, OldestAge: s.OldestAge}
}
