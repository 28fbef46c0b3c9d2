package envelope

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Sentinel errors of the envelope. Typed errors match them with errors.Is.
var (
	// ErrViolation: an action would leave the safety envelope; it was refused
	// before any instrument was called. The error is a *Violation.
	ErrViolation = errors.New("envelope: action violates the safety envelope")
	// ErrUnauthorized: the Authorizer refused the action's token.
	ErrUnauthorized = errors.New("envelope: action not authorised")
	// ErrInvalidConfig: an envelope configuration is refused. The error joins
	// one *ConfigError per problem.
	ErrInvalidConfig = errors.New("envelope: invalid configuration")
	// ErrAudit: the audit log could not record an entry; a write that cannot be
	// audited is not executed.
	ErrAudit = errors.New("envelope: audit record failed")
	// ErrRateLimited: a tool was invoked more often than its catalog rate
	// limit allows; nothing was executed.
	ErrRateLimited = errors.New("envelope: tool rate limit exceeded")
	// ErrIncomplete: a snapshot lacks a fresh, valid reading of an
	// instrument, so a tool that reports it cannot answer truthfully.
	ErrIncomplete = errors.New("envelope: snapshot incomplete")
	// ErrUnknownZone: an envelope configuration names a heated zone the
	// rig does not have (a limit or trip threshold on <zone>.setpoint,
	// <zone>.temperature, ..., or a gas interlock's zone). The error is a
	// *ConfigError, which is also ErrInvalidConfig.
	ErrUnknownZone = errors.New("envelope: no such heated zone")
)

// Rule names the envelope rule a Violation or a coverage entry refers to.
type Rule string

// Rules. The prohibited actions' rules double as their names in
// Config.ProhibitedActions.
const (
	RuleUnknownChannel Rule = "unknown_channel"        // no such channel on the rig
	RuleInterlockOwned Rule = "interlock_owned_output" // the output belongs to the interlock (Arm/Halt only)
	RuleNotFinite      Rule = "not_finite"             // NaN or infinite value
	RuleMin            Rule = "min"                    // below the channel's hard minimum
	RuleMax            Rule = "max"                    // above the channel's hard maximum
	RuleRate           Rule = "max_rate_of_change"     // changes faster than allowed since the last accepted value
	RuleStale          Rule = "stale_reading"          // a reading the decision needs is missing, old or invalid
	RuleHeater         Rule = "heater_requires_vacuum_or_inert_flow"
	RuleGasPressure    Rule = "gas_requires_low_pressure" // a gas with an interlock needs the chamber below a pressure
	RuleGasSwitch      Rule = "gas_requires_output_on"    // ... an output (scrubber) on
	RuleGasInput       Rule = "gas_requires_input"        // ... an input (door closed, exhaust OK) at a level
	RuleGasTemperature Rule = "gas_requires_temperature"  // ... the furnace hot (min_temperature)
	RuleRequiredOutput Rule = "output_required_by_gas"    // switching off an output a flowing gas requires
	RuleMixing         Rule = "simultaneous_gas_mixing_without_purge"
	RuleVentHot        Rule = "venting_while_hot"
	RuleVentGas        Rule = "venting_with_gas_flowing"
	RuleVentPumping    Rule = "venting_while_pumping"
	RuleVentPurge      Rule = "venting_without_purge" // a flammable, toxic or corrosive line used since the last purge
	RuleLatched        Rule = "latched"               // a trip or e-stop latched the interlock: safe outputs only
)

// prohibitedRules are the names Config.ProhibitedActions accepts.
var prohibitedRules = []Rule{RuleMixing, RuleVentHot, RuleVentGas, RuleVentPumping, RuleVentPurge}

// Violation is the typed refusal of an action: the rule that fired, the
// channel, the limit and the offending value in Unit (the envelope's
// configured unit for the channel, or the unit of the reading the rule
// compares), and a sentence for humans. An action is refused, never clamped.
type Violation struct {
	Rule    Rule
	Channel string
	Limit   float64
	Value   float64
	Unit    string
	Reason  string
	// Waited is how long the interlock waited for a fresh reading before
	// it refused (stale_reading after the wait bound; see awaitFresh).
	Waited time.Duration
}

func (v *Violation) Error() string {
	s := "envelope: " + v.Channel + ": " + string(v.Rule)
	if v.Unit != "" {
		s += " (value " + fmtNum(v.Value) + " " + v.Unit + ", limit " + fmtNum(v.Limit) + " " + v.Unit + ")"
	}
	if v.Reason != "" {
		s += ": " + v.Reason
	}
	return s
}

// Is makes errors.Is(err, ErrViolation) true.
func (v *Violation) Is(target error) bool { return target == ErrViolation }

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// ConfigError is one problem of an envelope configuration, naming where it is
// (e.g. "parameters.furnace.setpoint.max" or "channel switch.pump").
type ConfigError struct {
	Path   string
	Reason string
	// Err, if set, is the sentinel of the problem's class (ErrUnknownZone).
	Err error
}

func (e *ConfigError) Error() string { return fmt.Sprintf("envelope config: %s: %s", e.Path, e.Reason) }

// appendConfigError appends a *ConfigError (not inlined: a copy at each
// call site costs the armv7 binary more than the call).
//
//go:noinline
func appendConfigError(errs []error, path, format string, args ...any) []error {
	return append(errs, &ConfigError{Path: path, Reason: fmt.Sprintf(format, args...)})
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }
