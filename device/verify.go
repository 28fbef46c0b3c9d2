package device

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrMismatch: the unit's identity or one of the settings its profile depends
// on (decimals, ramp units, setpoint source, output mode...) differs from what
// the profile expects. Nothing is driven on such a unit: the technician fixes
// the unit or the profile, never the agent.
var ErrMismatch = errors.New("device: unit does not match its profile")

// Finding is one identity item or setting read from a unit and compared with
// its profile.
type Finding struct {
	// Instrument names the instrument, as its String does ("furnace", "mfc-ar").
	Instrument string `json:"instrument"`
	// Setting names what was read, as the manual names it where it has a name
	// ("decimal point (dEC.P)", "ramp units (rmP.U)", "setpoint source",
	// "continuous output (COM)", "model (TID)").
	Setting string `json:"setting"`
	// Found is what the unit reports; Expected is what the profile needs.
	Found    string `json:"found"`
	Expected string `json:"expected"`
	// OK is true when Found satisfies Expected. A finding that is only
	// informative (a firmware version the profile does not restrict) is OK.
	OK bool `json:"ok"`
}

// String renders the finding for a log line or a refusal.
func (f Finding) String() string {
	if f.OK {
		return fmt.Sprintf("%s: %s = %s", f.Instrument, f.Setting, f.Found)
	}
	return fmt.Sprintf("%s: %s is %s, the profile expects %s", f.Instrument, f.Setting, f.Found, f.Expected)
}

// Verifier is implemented by an instrument that can read back its identity
// and the settings its profile depends on. Verify only reads: it never
// changes a unit's setting (a probe must leave the unit as it found it). It
// returns every finding it could read; err is non-nil only when the unit
// could not be read at all (a timeout, a frame error), never for a mismatch.
type Verifier interface {
	Verify(ctx context.Context) ([]Finding, error)
}

// Mismatches returns the findings that are not OK.
func Mismatches(fs []Finding) []Finding {
	var bad []Finding
	for _, f := range fs {
		if !f.OK {
			bad = append(bad, f)
		}
	}
	return bad
}

// MismatchError wraps ErrMismatch with every finding that is not OK, or
// returns nil when all are.
func MismatchError(fs []Finding) error {
	bad := Mismatches(fs)
	if len(bad) == 0 {
		return nil
	}
	parts := make([]string, len(bad))
	for i, f := range bad {
		parts[i] = f.String()
	}
	return fmt.Errorf("%w: %s", ErrMismatch, strings.Join(parts, "; "))
}
