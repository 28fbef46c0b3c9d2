package gate

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"hcp-edge/configs"
	"hcp-edge/device/catalog"
	"hcp-edge/device/rig"
	"hcp-edge/session/capability"
)

// Classification is an L3 data classification, T1 (public) to T4
// (restricted).
type Classification string

// Data classifications.
const (
	T1 Classification = "T1"
	T2 Classification = "T2"
	T3 Classification = "T3"
	T4 Classification = "T4"
)

// Rank returns 1..4 for T1..T4 and 0 for anything else.
func (c Classification) Rank() int {
	if len(c) == 2 && c[0] == 'T' && c[1] >= '1' && c[1] <= '4' {
		return int(c[1] - '0')
	}
	return 0
}

// Config is the gate's configuration; the agent's configuration embeds it.
type Config struct {
	// BrokerUsers maps a broker (SASL) user name to the caller id it
	// authenticates. A task_submit whose caller_id differs is unauthorized.
	BrokerUsers map[string]string `yaml:"broker_users" json:"broker_users"`
	// Callers is the access control list, by caller id.
	Callers map[string]CallerACL `yaml:"callers" json:"callers"`
	// Capabilities holds per-capability policy, by capability name.
	Capabilities map[string]CapabilityPolicy `yaml:"capabilities,omitempty" json:"capabilities,omitempty"`
	// Escalations are the input-driven risk rules.
	Escalations []Escalation `yaml:"escalations,omitempty" json:"escalations,omitempty"`
	// GasHazards are the hazard classes of the rig's gas lines, by gas:
	// the layout's (set by the agent from its configuration, never
	// written in the gate section), which Hazards rules read.
	GasHazards map[string]rig.Hazard `yaml:"-" json:"-"`
	// Ranges are the semantic checks of {min, max, unit} objects.
	Ranges []RangeCheck `yaml:"ranges,omitempty" json:"ranges,omitempty"`
	// Unattended raises the risk of physical tasks outside attended hours.
	Unattended *Unattended `yaml:"unattended,omitempty" json:"unattended,omitempty"`
	// SharedEquipment raises the risk of a physical task whose resource
	// types are in use by another session.
	SharedEquipment *SharedEquipment `yaml:"shared_equipment,omitempty" json:"shared_equipment,omitempty"`
	// DefaultDataClassification applies to a task that declares none (T1
	// if empty).
	DefaultDataClassification Classification `yaml:"default_data_classification,omitempty" json:"default_data_classification,omitempty"`
	// DefaultMaxDuration bounds a session when neither the task nor the
	// capability declares a max_duration (1 h if zero).
	DefaultMaxDuration time.Duration `yaml:"default_max_duration,omitempty" json:"default_max_duration,omitempty"`
	// Quotas bound each caller's submits per minute and open sessions
	// (quota.go); the zero value has none. The agent's configuration starts
	// from DefaultQuotas.
	Quotas Quotas `yaml:"quotas,omitempty" json:"quotas,omitempty"`
}

// CallerACL is what one caller may do.
type CallerACL struct {
	// Capabilities the caller may invoke, by name; "*" is every one.
	Capabilities []string `yaml:"capabilities" json:"capabilities"`
	// MaxRiskLevel is the highest risk the caller is authorised for.
	MaxRiskLevel capability.RiskLevel `yaml:"max_risk_level" json:"max_risk_level"`
	// MaxDataClassification is the most sensitive data the caller may
	// submit.
	MaxDataClassification Classification `yaml:"max_data_classification" json:"max_data_classification"`
}

// CapabilityPolicy is the gate's policy for one capability.
type CapabilityPolicy struct {
	// RiskFloor is the static risk floor; derived from the declaration when
	// empty (see the package documentation).
	RiskFloor capability.RiskLevel `yaml:"risk_floor,omitempty" json:"risk_floor,omitempty"`
	// Permissions are the catalog permissions a session of the capability
	// holds; derived from the declaration when empty.
	Permissions []catalog.Permission `yaml:"permissions,omitempty" json:"permissions,omitempty"`
}

// Escalation raises the risk of a task when one of its inputs crosses a
// threshold or takes a listed value.
type Escalation struct {
	// Name identifies the rule in decisions and the audit log.
	Name string `yaml:"name" json:"name"`
	// Capability restricts the rule to one capability ("" is every one).
	Capability string `yaml:"capability,omitempty" json:"capability,omitempty"`
	// Path is the dotted path of the input ("temperature_range.max"). An
	// absent input does not fire the rule.
	Path string `yaml:"path" json:"path"`
	// AtOrAbove fires the rule when the number at Path is at or above it.
	AtOrAbove *float64 `yaml:"at_or_above,omitempty" json:"at_or_above,omitempty"`
	// Unit is AtOrAbove's temperature unit (celsius, kelvin, fahrenheit):
	// the input's own unit is read from the "unit" member of the object
	// holding Path (DefaultUnit if absent) and converted. Empty: no units.
	Unit string `yaml:"unit,omitempty" json:"unit,omitempty"`
	// DefaultUnit is the input's unit when it names none (celsius if empty).
	DefaultUnit string `yaml:"default_unit,omitempty" json:"default_unit,omitempty"`
	// Equals fires the rule when the string at Path (or any string of an
	// array at Path) is one of these.
	Equals []string `yaml:"equals,omitempty" json:"equals,omitempty"`
	// Hazards fires the rule when the string at Path names a gas whose
	// hazard class, in the rig's layout, is one of these (toxic,
	// flammable, oxidising, corrosive).
	Hazards []rig.Hazard `yaml:"hazards,omitempty" json:"hazards,omitempty"`
	// Level is the risk the task has at least when the rule fires.
	Level capability.RiskLevel `yaml:"level" json:"level"`
}

// RangeCheck is a semantic check of a {min, max, unit} object that JSON
// Schema cannot express: min <= max (both present) and, for temperatures,
// a known unit and nothing below absolute zero.
type RangeCheck struct {
	Capability  string `yaml:"capability,omitempty" json:"capability,omitempty"`
	Path        string `yaml:"path" json:"path"`                                     // dotted path of the object
	Temperature bool   `yaml:"temperature,omitempty" json:"temperature,omitempty"`   // check the unit and absolute zero
	DefaultUnit string `yaml:"default_unit,omitempty" json:"default_unit,omitempty"` // celsius if empty
}

// Unattended is the unattended-hours context rule: a task of a capability
// that involves physical resources, submitted outside every attended
// window, is at least Level.
type Unattended struct {
	Level    capability.RiskLevel `yaml:"level" json:"level"`
	Timezone string               `yaml:"timezone,omitempty" json:"timezone,omitempty"` // IANA name; UTC if empty
	Attended []Window             `yaml:"attended" json:"attended"`
}

// Window is a weekly attended window: on Days, from Start to End ("08:00",
// "18:00"; End after Start).
type Window struct {
	Days  []string `yaml:"days" json:"days"` // mon, tue, wed, thu, fri, sat, sun
	Start string   `yaml:"start" json:"start"`
	End   string   `yaml:"end" json:"end"`
}

// SharedEquipment is the busy-equipment context rule.
type SharedEquipment struct {
	Level capability.RiskLevel `yaml:"level" json:"level"`
}

// DefaultConfig returns the policy of the shipped capabilities: the CVD
// rules of the spec (the input escalations of configs/gate/escalations.yaml,
// DefaultEscalations; min <= max), R4 outside attended hours (Monday to
// Friday 08:00–18:00 UTC) and when shared equipment is busy. It has no
// users and no callers.
func DefaultConfig() Config {
	all := []catalog.Permission{catalog.PermissionRead, catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas}
	return Config{
		BrokerUsers: map[string]string{},
		Callers:     map[string]CallerACL{},
		Capabilities: map[string]CapabilityPolicy{
			"cvd-material-synthesis": {RiskFloor: capability.R3, Permissions: all},
			"leak-check":             {RiskFloor: capability.R2, Permissions: []catalog.Permission{catalog.PermissionRead, catalog.PermissionOperate}},
			"rig-status":             {RiskFloor: capability.R1, Permissions: []catalog.Permission{catalog.PermissionRead}},
		},
		Escalations: DefaultEscalations(),
		Ranges:      []RangeCheck{{Capability: "cvd-material-synthesis", Path: "temperature_range", Temperature: true}},
		Unattended: &Unattended{Level: capability.R4, Timezone: "UTC", Attended: []Window{
			{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Start: "08:00", End: "18:00"}}},
		SharedEquipment:           &SharedEquipment{Level: capability.R4},
		DefaultDataClassification: T1,
		DefaultMaxDuration:        time.Hour,
	}
}

// DefaultEscalations are the built-in input escalations, read from their
// data (configs.GateEscalations, configs/gate/escalations.yaml: the
// process inputs they name are the capabilities' data, not Go), a fresh
// copy each call. The file ships inside the binary and its test proves it
// valid: a file that does not decode is a build defect, and panics.
func DefaultEscalations() []Escalation {
	var f struct {
		Escalations []Escalation `yaml:"escalations"`
	}
	d := yaml.NewDecoder(bytes.NewReader(configs.GateEscalations))
	d.KnownFields(true)
	if err := d.Decode(&f); err != nil {
		panic(fmt.Sprintf("gate: configs/gate/escalations.yaml: %v", err))
	}
	return f.Escalations
}

// kinds counts the conditions an escalation gives (one is valid).
func kinds(e Escalation) int {
	n := 0
	for _, given := range []bool{e.AtOrAbove != nil, len(e.Equals) > 0, len(e.Hazards) > 0} {
		if given {
			n++
		}
	}
	return n
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday,
	"wed": time.Wednesday, "thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// window is a compiled Window.
type window struct {
	days       [7]bool
	start, end int // minutes since midnight
	text       string
}

func parseClock(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("time %q: want HH:MM", s)
	}
	return t.Hour()*60 + t.Minute(), nil
}

func knownUnit(u string) bool { return u == "celsius" || u == "kelvin" || u == "fahrenheit" }

// check validates c, returning every problem joined.
func (c *Config) check() ([]window, *time.Location, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...)))
	}
	for user, caller := range c.BrokerUsers {
		if user == "" || caller == "" {
			bad("broker_users: empty user or caller (%q → %q)", user, caller)
		}
	}
	for id, acl := range c.Callers {
		if acl.MaxRiskLevel.Rank() == 0 {
			bad("callers.%s.max_risk_level: %q is not R1–R5", id, acl.MaxRiskLevel)
		}
		if acl.MaxDataClassification.Rank() == 0 {
			bad("callers.%s.max_data_classification: %q is not T1–T4", id, acl.MaxDataClassification)
		}
	}
	for name, p := range c.Capabilities {
		if p.RiskFloor != "" && p.RiskFloor.Rank() == 0 {
			bad("capabilities.%s.risk_floor: %q is not R1–R5", name, p.RiskFloor)
		}
		for _, perm := range p.Permissions {
			if !slices.Contains([]catalog.Permission{catalog.PermissionRead, catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas}, perm) {
				bad("capabilities.%s.permissions: unknown %q", name, perm)
			}
		}
	}
	for i, e := range c.Escalations {
		where := fmt.Sprintf("escalations[%d] (%s)", i, e.Name)
		switch {
		case e.Name == "":
			bad("%s: no name", where)
		case e.Path == "" || strings.Contains(e.Path, ".."):
			bad("%s: path %q", where, e.Path)
		case e.Level.Rank() == 0:
			bad("%s: level %q is not R1–R5", where, e.Level)
		case kinds(e) != 1:
			bad("%s: give exactly one of at_or_above, equals and hazards", where)
		case e.Unit != "" && !knownUnit(e.Unit), e.DefaultUnit != "" && !knownUnit(e.DefaultUnit):
			bad("%s: unit %q / default_unit %q: want celsius, kelvin or fahrenheit", where, e.Unit, e.DefaultUnit)
		}
		for j, h := range e.Hazards {
			if !h.Valid() {
				bad("escalations[%d].hazards[%d]: %q is not a hazard class (%s)", i, j, h, rig.HazardWords)
			}
		}
	}
	for i, r := range c.Ranges {
		if r.Path == "" || (r.DefaultUnit != "" && !knownUnit(r.DefaultUnit)) {
			bad("ranges[%d]: path %q, default_unit %q", i, r.Path, r.DefaultUnit)
		}
	}
	if c.SharedEquipment != nil && c.SharedEquipment.Level.Rank() == 0 {
		bad("shared_equipment.level: %q is not R1–R5", c.SharedEquipment.Level)
	}
	if c.DefaultDataClassification != "" && c.DefaultDataClassification.Rank() == 0 {
		bad("default_data_classification: %q is not T1–T4", c.DefaultDataClassification)
	}
	if c.DefaultMaxDuration < 0 {
		bad("default_max_duration: negative")
	}
	c.Quotas.check(bad)
	var wins []window
	loc := time.UTC
	if u := c.Unattended; u != nil {
		if u.Level.Rank() == 0 {
			bad("unattended.level: %q is not R1–R5", u.Level)
		}
		if u.Timezone != "" {
			l, err := time.LoadLocation(u.Timezone)
			if err != nil {
				bad("unattended.timezone: %v", err)
			} else {
				loc = l
			}
		}
		for i, w := range u.Attended {
			var cw window
			var err1, err2 error
			cw.start, err1 = parseClock(w.Start)
			cw.end, err2 = parseClock(w.End)
			if err := errors.Join(err1, err2); err != nil || cw.end <= cw.start {
				bad("unattended.attended[%d]: %v (end must be after start)", i, err)
				continue
			}
			if len(w.Days) == 0 {
				bad("unattended.attended[%d]: no days", i)
			}
			for _, d := range w.Days {
				wd, ok := weekdays[strings.ToLower(d)]
				if !ok {
					bad("unattended.attended[%d]: day %q: want mon … sun", i, d)
					continue
				}
				cw.days[wd] = true
			}
			cw.text = strings.Join(w.Days, ",") + " " + w.Start + "–" + w.End
			wins = append(wins, cw)
		}
	}
	return wins, loc, errors.Join(errs...)
}
