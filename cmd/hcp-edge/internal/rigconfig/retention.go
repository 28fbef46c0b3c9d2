package rigconfig

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"hcp-edge/session/capability"
	"hcp-edge/session/retention"
)

// Retention is the retention: section: how long closed sessions keep
// their events, checkpoints, results and artifacts, per data class, and
// the state directory's ceiling (session/retention; docs/STATE.md).
// Durations are ISO 8601 (days, hours, minutes, seconds: "P90D",
// "PT12H"), as in the capability declarations and the recipes, at most a
// year.
type Retention struct {
	// Default is the retention of a class without its own line (default
	// P90D).
	Default string `yaml:"default"`
	// Classes are the retentions of data classes T1..T4 that differ from
	// Default (a lab raises T3/T4 per its policy).
	Classes map[string]string `yaml:"classes"`
	// MaxStateMiB is the ceiling of the state directory in MiB (what
	// retention can remove: the state file's pages in use but the audit
	// log's, the artifacts, the results): above it the oldest closed
	// sessions go first (default 256).
	MaxStateMiB *int `yaml:"max_state_mib"`
	// MinAge protects sessions closed more recently from the ceiling
	// (default P1D).
	MinAge string `yaml:"min_age"`
	// Every is the time between two passes of the pruner (default PT1H;
	// PT1M..P1D).
	Every string `yaml:"every"`
}

// Defaults of the retention section.
const (
	DefaultRetention   = "P90D"
	DefaultMaxStateMiB = 256
	DefaultMinAge      = "P1D"
	DefaultPruneEvery  = "PT1H"
)

func (r *Retention) defaults() {
	if r.Default == "" {
		r.Default = DefaultRetention
	}
	if r.MaxStateMiB == nil {
		v := DefaultMaxStateMiB
		r.MaxStateMiB = &v
	}
	if r.MinAge == "" {
		r.MinAge = DefaultMinAge
	}
	if r.Every == "" {
		r.Every = DefaultPruneEvery
	}
}

// key is the configuration key of a retention.PolicyError's key.
func (r Retention) key(k string) string {
	switch k {
	case "default":
		return "retention.default"
	case "max_bytes":
		return "retention.max_state_mib"
	case "min_age":
		return "retention.min_age"
	}
	return "retention.classes." + k
}

// Policy is the section as a retention.Policy (after Defaults); an
// unparsable duration is an error naming its key.
func (r Retention) Policy() (retention.Policy, error) {
	var errs []error
	dur := func(key, s string) time.Duration {
		d, err := capability.ParseDuration(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v (ISO 8601, e.g. P90D)", key, err))
		}
		return d
	}
	p := retention.Policy{Default: dur("retention.default", r.Default), MinAge: dur("retention.min_age", r.MinAge),
		Classes: map[string]time.Duration{}}
	for _, k := range slices.Sorted(maps.Keys(r.Classes)) {
		p.Classes[k] = dur("retention.classes."+k, r.Classes[k])
	}
	if r.MaxStateMiB != nil {
		p.MaxBytes = int64(*r.MaxStateMiB) << 20
	}
	return p, errors.Join(errs...)
}

// PruneEvery is the time between two passes (after Defaults and
// Validate).
func (r Retention) PruneEvery() time.Duration {
	d, _ := capability.ParseDuration(r.Every)
	return d
}

// CheckRetention checks the section against the longest max_duration of
// the capabilities (0: not known): every retention positive and not
// shorter than that session; each problem "retention.KEY: reason".
func (r Retention) CheckRetention(longest time.Duration, which string) []error {
	p, err := r.Policy()
	if err != nil {
		return unjoin(err)
	}
	var out []error
	for _, e := range unjoin(p.Validate(longest)) {
		var pe *retention.PolicyError
		if errors.As(e, &pe) {
			if pe.Key == "max_bytes" {
				continue // retention.max_state_mib is checked by validate
			}
			reason := pe.Reason
			if which != "" && strings.Contains(reason, "max_duration") {
				reason += " of " + which + ": a session's data would go before it could end"
			}
			out = append(out, fmt.Errorf("%s: %s", r.key(pe.Key), reason))
		} else if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// Longest returns the longest max_duration among caps and its
// capability's name@version ("" when none declares one).
func Longest(caps []*capability.Capability) (time.Duration, string) {
	var d time.Duration
	var which string
	for _, c := range caps {
		if c.MaxDuration > d {
			d, which = c.MaxDuration, c.Name+"@"+c.Version
		}
	}
	return d, which
}

func (r Retention) validate(bad func(key, format string, args ...any)) {
	for _, e := range r.CheckRetention(0, "") {
		k, m, _ := strings.Cut(e.Error(), ": ")
		bad(k, "%s", m)
	}
	if m := *r.MaxStateMiB; m < 1 {
		bad("retention.max_state_mib", "%d: the ceiling must be at least 1 MiB", m)
	}
	if d, err := capability.ParseDuration(r.MinAge); err == nil && d <= 0 {
		bad("retention.min_age", "%v: must be positive (a result just delivered is never pruned for size)", d)
	}
	if d, err := capability.ParseDuration(r.Every); err != nil {
		bad("retention.every", "%v (ISO 8601, e.g. PT1H)", err)
	} else if d < time.Minute || d > 24*time.Hour {
		bad("retention.every", "%v is outside PT1M..P1D", d)
	}
}
