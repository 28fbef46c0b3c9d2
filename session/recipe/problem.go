package recipe

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the package.
var (
	// ErrInvalid is matched by every refused recipe: the error Load
	// returns is a Problems listing every problem found.
	ErrInvalid = errors.New("invalid recipe")
	// ErrTooLarge is a recipe file above MaxSize bytes (it is not parsed).
	ErrTooLarge = errors.New("recipe file too large")
	// ErrDuplicate is a second recipe with the name and version of another
	// one but different content.
	ErrDuplicate = errors.New("same recipe name and version with different content")
)

// Rules name what a Problem breaks (Problem.Rule). An envelope refusal is
// "envelope." followed by the envelope's own rule (envelope.Rule), e.g.
// "envelope.max" or "envelope.gas_requires_low_pressure".
const (
	RuleSyntax          = "syntax"           // not YAML, or not the shape of a recipe
	RuleTooLarge        = "too_large"        // file above MaxSize
	RuleUnknownKey      = "unknown_key"      // a key the format does not have here
	RuleUnknownPhase    = "unknown_phase"    // a phase kind the executor does not implement
	RuleMissing         = "missing"          // a required key is absent
	RuleType            = "type"             // a value of the wrong type or out of its own domain
	RuleVersion         = "version"          // not a semantic version
	RuleInput           = "input"            // a bad input declaration or default
	RuleUndeclaredInput = "undeclared_input" // {input: NAME} names no declared input
	RuleUnit            = "unit"             // a referenced input's unit is not the parameter's
	RuleUnbounded       = "unbounded"        // a hold or wait without a finite bound
	RuleOrder           = "order"            // phases in an order the process cannot run
	RuleRig             = "rig"              // a gas line or instrument this rig does not have
	RuleVentHot         = "vent_hot"         // heating not followed by cooling before a vent
	RuleGasOpen         = "gas_open"         // a reactive gas still open at a cool or a vent
	RuleGasCold         = "gas_cold"         // a gas with a min_temperature left open while the furnace cools below it
	RuleReactivePurge   = "reactive_purge"   // a purge with a reactive gas
	RuleNotPurged       = "not_purged"       // a reactive gas not purged out before a vent
	RuleNoCleanup       = "no_cleanup"       // the cleanup section is missing
	RuleCorners         = "corners"          // too many input corners to enumerate
	RuleDuplicate       = "duplicate"        // same name and version, different content
	RuleEnvelopePrefix  = "envelope."        // prefix of the envelope's rules
)

// Problem is one finding of Load or Check, placed at the line of the YAML
// key it concerns.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"` // 0: the file as a whole
	Column  int    `json:"column,omitempty"`
	Key     string `json:"key,omitempty"`  // dotted key path, e.g. phases[4].ramp.temperature_c
	Rule    string `json:"rule,omitempty"` // one of the Rule constants
	Message string `json:"message"`
}

// String formats p as FILE:LINE: KEY: MESSAGE (the line and key when
// known), the form of `hcp-edge config check`.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is every problem of one or more recipes. As an error (what Load
// returns) it matches ErrInvalid, and ErrTooLarge or ErrDuplicate when one
// of its problems is of that rule.
type Problems []Problem

// Error lists the problems, one FILE:LINE: key: message a line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalid) true, and ErrTooLarge or
// ErrDuplicate for a list holding such a problem.
func (ps Problems) Is(target error) bool {
	switch target {
	case ErrInvalid:
		return true
	case ErrTooLarge:
		return ps.has(RuleTooLarge)
	case ErrDuplicate:
		return ps.has(RuleDuplicate)
	}
	return false
}

func (ps Problems) has(rule string) bool {
	for _, p := range ps {
		if p.Rule == rule {
			return true
		}
	}
	return false
}
