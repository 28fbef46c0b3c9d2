package reply

import (
	"time"

	"hcp-edge/session/budget"
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
	Clock       *Clock            `json:"clock,omitempty"`  // the system clock's synchronisation
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

// Clock is the system clock's synchronisation as the kernel reports it
// (adjtimex), and whether new sessions are held until it is synchronised
// (agent.hold_until_clock_synced).
type Clock struct {
	Sync        string  `json:"sync"` // "synchronised", "not synchronised" or "unknown (why)"
	Synced      bool    `json:"synced"`
	SyncedOnce  bool    `json:"synced_once"` // seen synchronised since the agent started
	Holding     bool    `json:"holding"`     // new sessions are refused until it is
	HoldEnabled bool    `json:"hold_enabled"`
	MaxErrorMS  float64 `json:"max_error_ms"` // the kernel's maximum error
}

// Line is the clock's line of `hcp-edge status`.
func (c *Clock) Line() string {
	switch {
	case c == nil:
		return "clock: not reported"
	case c.Holding:
		return "clock: " + c.Sync + ": NEW SESSIONS HELD until it is (agent.hold_until_clock_synced); interlock, monitor and e-stop run"
	case !c.Synced && c.SyncedOnce:
		return "clock: " + c.Sync + " now (was synchronised since start: sessions not held)"
	case !c.Synced && !c.HoldEnabled:
		return "clock: " + c.Sync + " (sessions not held: agent.hold_until_clock_synced is false)"
	}
	return "clock: " + c.Sync
}
