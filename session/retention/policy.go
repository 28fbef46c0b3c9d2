package retention

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Classes are the data classifications a Policy may name.
var Classes = []string{"T1", "T2", "T3", "T4"}

// Defaults of a Policy (docs/STATE.md, "Retention").
const (
	// DefaultRetention keeps a closed session 90 days.
	DefaultRetention = 90 * 24 * time.Hour
	// DefaultMaxBytes is the state directory's ceiling: 256 MiB, half the
	// state file's own limit (store.DefaultOpts).
	DefaultMaxBytes = 256 << 20
	// DefaultMinAge is the youngest a closed session may be to go for the
	// size ceiling: a day, so the results of today's runs stay whatever
	// the disk.
	DefaultMinAge = 24 * time.Hour
)

// Policy is how long closed sessions keep their data, and how large the
// state directory may grow.
type Policy struct {
	// Default is the retention of a class not in Classes (and of a session
	// without a classification).
	Default time.Duration
	// Classes are the retentions of the classes that have their own
	// (keys T1..T4).
	Classes map[string]time.Duration
	// MaxBytes is the state directory's ceiling, counted as Pruner.Size
	// does (what retention can remove: not the audit log); 0: none.
	MaxBytes int64
	// MinAge protects sessions closed more recently from the ceiling.
	MinAge time.Duration
}

// For returns the retention of a session of data class class.
func (p Policy) For(class string) time.Duration {
	if d, ok := p.Classes[class]; ok {
		return d
	}
	return p.Default
}

// Validate checks p against the longest max_duration of the sessions it
// will judge (0: unknown): every retention positive and not shorter than
// that, known class names, a ceiling and MinAge not negative. Every
// problem is a *PolicyError, all joined.
func (p Policy) Validate(longestSession time.Duration) error {
	var errs []error
	check := func(key string, d time.Duration) {
		switch {
		case d <= 0:
			errs = append(errs, &PolicyError{Key: key, Reason: fmt.Sprintf("%v: a retention must be positive", d)})
		case longestSession > 0 && d < longestSession:
			errs = append(errs, &PolicyError{Key: key, Reason: fmt.Sprintf("%v is shorter than the longest session's max_duration (%v)", d, longestSession)})
		}
	}
	check("default", p.Default)
	for _, k := range slices.Sorted(maps.Keys(p.Classes)) {
		if !slices.Contains(Classes, k) {
			errs = append(errs, &PolicyError{Key: k, Reason: "not a data classification T1..T4"})
			continue
		}
		check(k, p.Classes[k])
	}
	if p.MaxBytes < 0 {
		errs = append(errs, &PolicyError{Key: "max_bytes", Reason: fmt.Sprintf("%d is negative", p.MaxBytes)})
	}
	if p.MinAge < 0 {
		errs = append(errs, &PolicyError{Key: "min_age", Reason: fmt.Sprintf("%v is negative", p.MinAge)})
	}
	return errors.Join(errs...)
}
