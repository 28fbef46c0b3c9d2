package main

import "time"

// statusResult is the daemon's answer to status (its JSON is the --json
// output).
type statusResult struct {
	At          time.Time         `json:"at"`
	Latched     bool              `json:"latched"`
	LatchReason string            `json:"latch_reason,omitempty"`
	Relay       string            `json:"relay"`
	Readings    map[string]string `json:"readings"`
	Values      map[string]any    `json:"values"`
	Margins     []marginView      `json:"margins"`
	Trips       []tripView        `json:"trips"`
	Healthy     map[string]bool   `json:"healthy"`
	Uplink      *uplinkStatus     `json:"uplink,omitempty"` // the broker uplink, when configured
}

// marginView is one limited channel: its value, limits and the distance to
// the nearer one (negative: outside).
type marginView struct {
	Channel string  `json:"channel"`
	Value   float64 `json:"value"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Unit    string  `json:"unit"`
	Margin  float64 `json:"margin"`
}

// tripView is one trip event.
type tripView struct {
	Trip      string `json:"trip"`
	Procedure string `json:"procedure"`
	Channel   string `json:"channel"`
	Reason    string `json:"reason"`
}
