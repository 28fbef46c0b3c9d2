package reply

import (
	"fmt"
)

// Uplink is the uplink's part of status --json.
type Uplink struct {
	Broker string `json:"broker"`
	// Endpoint is the broker endpoint connected to (or last tried).
	Endpoint  string `json:"endpoint,omitempty"`
	Connected bool   `json:"connected"`
	Blocked   bool   `json:"blocked,omitempty"`
	TLS       bool   `json:"tls"`
	Backlog   int    `json:"outbox_backlog"`
	Telemetry int    `json:"outbox_telemetry"`
	OldestAge string `json:"outbox_oldest_age,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// Line is the uplink's line of the human status.
func (s *Uplink) Line() string {
	if s == nil {
		return "uplink: none (no agent.amqp.url / HCP_AMQP_URL)"
	}
	state := "connected"
	switch {
	case !s.Connected:
		state = "DISCONNECTED"
	case s.Blocked:
		state = "connected, BLOCKED by the broker"
	}
	out := fmt.Sprintf("uplink: %s %s (tls %t), outbox %d waiting", s.Broker, state, s.TLS, s.Backlog)
	if s.OldestAge != "" {
		out += ", oldest " + s.OldestAge
	}
	if !s.Connected && s.LastError != "" {
		out += "; last error: " + s.LastError
	}
	return out
}
