package profile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Expectation is one setting of a Modbus unit that the profile depends on,
// or one identity item it reports: read (never written) before anything is
// driven and compared with what the profile expects. A mismatch refuses the
// start (and fails `hcp-edge probe`), naming the setting as the manual
// names it.
type Expectation struct {
	// Setting names the setting as the manual does ("decimal point
	// (dEC.P)", "ramp units (rmP.U)").
	Setting string `yaml:"setting"`
	// Table is holding_register (the default) or input_register.
	Table   string `yaml:"table,omitempty"`
	Address *int   `yaml:"address"`
	// Equals is the raw value the profile needs; OneOf, the raw values it
	// accepts. With neither, the item is informative (an identity the
	// profile does not restrict): reported, never a mismatch.
	Equals *int64   `yaml:"equals,omitempty"`
	OneOf  []int64  `yaml:"one_of,omitempty,flow"`
	Means  []string `yaml:"means,omitempty,flow"` // the manual's name of raw value i (0, 1, 2...), for reports
	// Hex: report the raw value in hexadecimal (an identity code).
	Hex bool `yaml:"hex,omitempty"`

	line int
}

// Line is the expectation's line in its profile file.
func (e Expectation) Line() int { return e.line }

// Informative reports whether the item restricts nothing.
func (e Expectation) Informative() bool { return e.Equals == nil && len(e.OneOf) == 0 }

// Accepts reports whether raw satisfies the expectation.
func (e Expectation) Accepts(raw int64) bool {
	if e.Equals != nil {
		return raw == *e.Equals
	}
	return len(e.OneOf) == 0 || slices.Contains(e.OneOf, raw)
}

// Describe renders a raw value of the setting: its name in the manual
// where the profile gives one ("1 (nnn.n)").
func (e Expectation) Describe(raw int64) string {
	s := strconv.FormatInt(raw, 10)
	if e.Hex {
		s = fmt.Sprintf("0x%04X", raw)
	}
	if raw >= 0 && raw < int64(len(e.Means)) && e.Means[raw] != "" {
		s += " (" + e.Means[raw] + ")"
	}
	return s
}

// Expected renders what the profile accepts.
func (e Expectation) Expected() string {
	switch {
	case e.Equals != nil:
		return e.Describe(*e.Equals)
	case len(e.OneOf) > 0:
		parts := make([]string, len(e.OneOf))
		for i, r := range e.OneOf {
			parts[i] = e.Describe(r)
		}
		return "one of " + strings.Join(parts, ", ")
	}
	return "any (reported)"
}

// ExpectTable is the table of the expectation (holding_register by default).
func (e Expectation) ExpectTable() string {
	if e.Table == "" {
		return "holding_register"
	}
	return e.Table
}

// checkExpect checks the expectations of a Modbus profile.
func (v *validator) checkExpect(p *Profile) {
	seen := map[string]int{}
	for i := range p.Expect {
		e := &p.Expect[i]
		e.line = v.line("expect", i)
		key := func(k string) string { return fmt.Sprintf("expect[%d].%s", i, k) }
		at := func(k string) int { return v.line("expect", i, k) }
		if e.Setting == "" {
			v.add(e.line, key("setting"), "missing: name the setting as the manual does")
		} else if j, dup := seen[e.Setting]; dup {
			v.add(at("setting"), key("setting"), "%q is also expect[%d]", e.Setting, j)
		} else {
			seen[e.Setting] = i
		}
		switch e.ExpectTable() {
		case "holding_register", "input_register":
		default:
			v.add(at("table"), key("table"), "%q: a setting is read from a holding_register or an input_register", e.Table)
		}
		if e.Address == nil {
			v.add(e.line, key("address"), "missing")
		} else if *e.Address < 0 || *e.Address > 65535 {
			v.add(at("address"), key("address"), "%d outside 0..65535", *e.Address)
		}
		if e.Equals != nil && len(e.OneOf) > 0 {
			v.add(at("one_of"), key("one_of"), "give equals or one_of, not both")
		}
	}
}
