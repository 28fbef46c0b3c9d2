package reply

import (
	"time"

	"github.com/hcp-edge/hcp-edge/session/budget"
)

// Status is the daemon's answer to status (its JSON is the --json
// output).
type Status struct {
	At          time.Time         `json:"at"`
	Latched     bool              `json:"latched"`
	LatchReason string            `json:"latch_reason,omitempty"`
	Relay       string            `json:"relay"`
	Activity    string            `json:"activity"`          // "idle" or "in process (gases, heater)"
	TripAt      *time.Time        `json:"trip_at,omitempty"` // when the newest trip fired, while latched
	Readings    map[string]string `json:"readings"`
	Values      map[string]any    `json:"values"`
	Margins     []Margin          `json:"margins"`
	Trips       []Trip            `json:"trips"`
	Healthy     map[string]bool   `json:"healthy"`
	Uplink      *Uplink           `json:"uplink,omitempty"` // the broker uplink, when configured
	Disk        *Disk             `json:"disk,omitempty"`   // the state directory's free space
	// Budgets is the live resource usage of every running session against
	// its budgets.
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget is one running session's usage against its budgets.
type Budget struct {
	SessionID  string        `json:"session_id"`
	Capability string        `json:"capability"`
	State      string        `json:"state"`
	Report     budget.Report `json:"report"`
}

// Margin is one limited channel: its value, limits and the distance to
// the nearer one (negative: outside).
type Margin struct {
	Channel string  `json:"channel"`
	Value   float64 `json:"value"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Unit    string  `json:"unit"`
	Margin  float64 `json:"margin"`
	// Applies is false where the limit does not bind now (over_pressure of
	// an idle chamber, the ramp rate with the heater off): a negative
	// margin there is no violation. Context says why.
	Applies bool   `json:"applies"`
	Context string `json:"context,omitempty"`
}

// Trip is one trip event.
type Trip struct {
	Trip      string    `json:"trip"`
	Procedure string    `json:"procedure"`
	Channel   string    `json:"channel"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"` // when the monitor found the condition
}

// Op is the result of reset and arm.
type Op struct {
	Message string `json:"message"`
}
