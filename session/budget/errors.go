package budget

import (
	"errors"
	"fmt"
	"strconv"
)

// Code is the L4 error code of a session failed for an overrun budget: an
// hcp-edge extension (docs/PROTOCOL-NOTES.md, "Resource budgets").
const Code = "budget_exceeded"

// Sentinel errors of the package.
var (
	// ErrExceeded is matched by every *ExceededError.
	ErrExceeded = errors.New("budget exceeded")
	// ErrInvalid is matched by every refused budget specification (a
	// task's constraints.budgets or a capability's policy).
	ErrInvalid = errors.New("invalid budget")
)

// Budget names a kind of budget.
type Budget string

// The budgets.
const (
	WallTime     Budget = "wall_time"     // process time since RUNNING, in seconds
	GasVolume    Budget = "gas_volume"    // per gas, in scc
	HeaterEnergy Budget = "heater_energy" // in seconds at full power
	Actions      Budget = "actions"       // actuator actions executed
)

// Unit returns the unit b is counted in.
func (b Budget) Unit() string {
	switch b {
	case WallTime:
		return "s"
	case GasVolume:
		return "scc"
	case HeaterEnergy:
		return "full_power_s"
	case Actions:
		return "actions"
	}
	return ""
}

// ExceededError is a budget whose usage passed its limit. It matches
// ErrExceeded.
type ExceededError struct {
	Budget Budget  `json:"budget"`
	Gas    string  `json:"gas,omitempty"` // the gas of a gas_volume budget
	Unit   string  `json:"unit"`
	Limit  float64 `json:"limit"`
	Used   float64 `json:"used"`
}

func (e *ExceededError) Error() string {
	what := string(e.Budget)
	if e.Gas != "" {
		what += " of " + e.Gas
	}
	return fmt.Sprintf("budget %s exceeded: %s %s used, limit %s %s", what,
		strconv.FormatFloat(e.Used, 'f', -1, 64), e.Unit, strconv.FormatFloat(e.Limit, 'f', -1, 64), e.Unit)
}

// Is makes errors.Is(err, ErrExceeded) true.
func (e *ExceededError) Is(target error) bool { return target == ErrExceeded }
