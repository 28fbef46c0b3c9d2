package alicat

import (
	"fmt"
	"strconv"
	"strings"

	"hcp-edge/device"
	"hcp-edge/drivers/profile"
)

// RoleTotalizer is the role ParseDescription gives a totalizer column: not a
// profile role (the profile declares no totalizer; a frame may carry one
// more number before the gas).
const RoleTotalizer profile.Role = "totalizer"

// Firmware is a controller's firmware version as VE reports it
// ("10v20.0-R24": major 10, minor 20). Major is 0 when the text is not of
// that shape (a GP unit's "GP").
type Firmware struct {
	Raw          string
	Major, Minor int
}

// AtLeast reports whether the firmware is major v minor or later.
func (f Firmware) AtLeast(major, minor int) bool {
	return f.Major > major || f.Major == major && f.Minor >= minor
}

func (f Firmware) String() string { return f.Raw }

// ParseVersion parses a VE reply ("A   10v20.0-R24 Jan  9 2025,15:04:07" on
// 8v17 and 10v20, "A 10v05.0-R24"): the unit id, then the version, then
// anything (a build date). The version must read <major>v<minor>: any
// other answer is an error wrapping device.ErrFrame, never a firmware. A
// real unit's late LSS answer "A U", read as the reply to VE, must not
// pass for firmware "U" (0v0), which would skip the checks of 10v05 and
// later.
func ParseVersion(b []byte, id byte) (Firmware, error) {
	f := strings.Fields(string(b))
	if err := answered(b, id, f); err != nil {
		return Firmware{}, err
	}
	if len(f) < 2 {
		return Firmware{}, fmt.Errorf("version reply %q: %w", truncate(string(b)), device.ErrFrame)
	}
	maj, rest, _ := strings.Cut(f[1], "v")
	end := leadingDigits(rest)
	if maj == "" || len(maj) > 3 || leadingDigits(maj) != len(maj) || end == 0 || end > 3 {
		return Firmware{}, fmt.Errorf("version reply %q: want a firmware version like 10v20.0-R24: %w", truncate(string(b)), device.ErrFrame)
	}
	a, _ := strconv.Atoi(maj)
	minor, _ := strconv.Atoi(rest[:end])
	return Firmware{Raw: f[1], Major: a, Minor: minor}, nil
}

// leadingDigits returns how many ASCII digits s begins with.
func leadingDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// answered checks a reply's unit id and turns "<id> ?" into
// device.ErrRejected.
func answered(b []byte, id byte, f []string) error {
	if len(f) == 0 || f[0] != string(id) {
		return fmt.Errorf("reply %q: not from unit %c: %w", truncate(string(b)), id, device.ErrFrame)
	}
	if len(f) == 2 && f[1] == "?" {
		return fmt.Errorf("controller answered %q: %w", truncate(string(b)), device.ErrRejected)
	}
	return nil
}

// Setpoint sources an LSS query answers (Alicat BC series manual, "Setpoint
// Source"; the Serial Primer's "Setpoint Source", 10v05).
const (
	SourceAnalog       = "A" // the analog input; digital setpoints are not accepted
	SourceSavedDigital = "S" // digital, saved to non-volatile memory at every change
	SourceDigital      = "U" // digital, unsaved: the setpoint at power-up is not changed
)

// ParseSetpointSource parses an LSS reply ("A U"): the source's letter,
// upper-cased (A, S or U).
func ParseSetpointSource(b []byte, id byte) (string, error) {
	f := strings.Fields(string(b))
	if err := answered(b, id, f); err != nil {
		return "", err
	}
	if len(f) != 2 {
		return "", fmt.Errorf("setpoint source reply %q: %w", truncate(string(b)), device.ErrFrame)
	}
	src := strings.ToUpper(f[1])
	switch src {
	case SourceAnalog, SourceSavedDigital, SourceDigital:
		return src, nil
	}
	return "", fmt.Errorf("setpoint source reply %q: unknown source %q: %w", truncate(string(b)), f[1], device.ErrFrame)
}

// ParseEngineeringUnit parses a DCU reply ("A 12 SCCM"): the unit's code and
// label.
func ParseEngineeringUnit(b []byte, id byte) (code int, label string, err error) {
	f := strings.Fields(string(b))
	if err := answered(b, id, f); err != nil {
		return 0, "", err
	}
	if len(f) != 3 {
		return 0, "", fmt.Errorf("engineering unit reply %q: want \"<id> <code> <label>\": %w", truncate(string(b)), device.ErrFrame)
	}
	code, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, "", fmt.Errorf("engineering unit reply %q: code %q: %w", truncate(string(b)), f[1], device.ErrFrame)
	}
	return code, f[2], nil
}

// Column is one column of a data frame as ??D* describes it.
type Column struct {
	Name string
	// Stat is the statistic code (2 absolute pressure, 3 flow temperature, 4
	// volumetric flow, 5 mass flow, 37 mass-flow setpoint, 703 gas), or -1
	// in the legacy dialect, which has none.
	Stat int
	// Role is the profile role the column has ("" if none is known).
	Role profile.Role
	// Unit is the unit label as the controller printed it ("SCCM", "`C"),
	// "" if none.
	Unit string
}

// Description is a ??D* answer: the data frame's columns after the unit id
// and the status codes the controller may append (Errors, statistic 701;
// Statuses, 702).
type Description struct {
	// Legacy is the dialect of firmware before 6v (5v12: NAME TYPE MinVal
	// MaxVal UNITS, no statistic codes).
	Legacy   bool
	Columns  []Column
	Errors   []string
	Statuses []string
}

// Roles renders the columns' roles (their names where the role is unknown).
func (d Description) Roles() []string {
	out := make([]string, len(d.Columns))
	for i, c := range d.Columns {
		out[i] = string(c.Role)
		if c.Role == "" {
			out[i] = fmt.Sprintf("%q", c.Name)
		}
	}
	return out
}

// statRoles are the roles of the statistic codes a mass-flow controller's
// default frame carries (the 10v20 and 8v17 captures in the corpus).
var statRoles = map[int]profile.Role{2: profile.RolePressure, 3: profile.RoleTemperature, 4: profile.RoleVolumetricFlow,
	5: profile.RoleFlow, 37: profile.RoleSetpoint, 703: profile.RoleGas}

// legacyRoles are the column names of the legacy dialect (5v12 capture).
var legacyRoles = map[string]profile.Role{"Pressure": profile.RolePressure, "Temperature": profile.RoleTemperature,
	"Volumetric": profile.RoleVolumetricFlow, "Mass": profile.RoleFlow, "SetPoint": profile.RoleSetpoint, "Gas": profile.RoleGas}

// typeWords are the type column's words in the 6v+ dialect.
var typeWords = map[string]bool{"s": true, "u": true, "decimal": true, "string": true, "integer": true}

// ParseDescription parses the lines of a ??D* answer (each without its CR):
// a header line "<id> D00 ..." then one line per field. Both dialects are
// read: 6v+ ("<id> D02 002 Abs Press  s decimal  7/2 010 02 PSIA") and the
// legacy one of 5v12 ("<id>  D02 Pressure signed +000.00 +160.00 PSIA").
func ParseDescription(lines [][]byte, id byte) (Description, error) {
	var d Description
	if len(lines) == 0 {
		return d, fmt.Errorf("data frame description: no lines: %w", device.ErrFrame)
	}
	bad := func(l []byte, why string) error {
		return fmt.Errorf("data frame description line %q: %s: %w", truncate(string(l)), why, device.ErrFrame)
	}
	for i, l := range lines {
		f := strings.Fields(string(l))
		if err := answered(l, id, f); err != nil {
			return d, err
		}
		if len(f) < 3 || len(f[1]) != 3 || f[1][0] != 'D' {
			return d, bad(l, "want \"<id> D<nn> ...\"")
		}
		if i == 0 {
			if f[1] != "D00" {
				return d, bad(l, "the first line is the header D00")
			}
			d.Legacy = f[2] == "NAME_______" || strings.HasPrefix(f[2], "NAME") && !strings.HasPrefix(f[2], "ID")
			continue
		}
		if d.Legacy {
			if len(f) < 7 {
				return d, bad(l, "want NAME TYPE MinVal MaxVal UNITS")
			}
			name := strings.Join(f[2:len(f)-4], " ")
			maxv, unit := f[len(f)-2], f[len(f)-1]
			switch name {
			case "Unit ID":
			case "Error":
				d.Errors = append(d.Errors, maxv)
			case "Status":
				d.Statuses = append(d.Statuses, maxv)
			default:
				c := Column{Name: name, Stat: -1, Role: legacyRoles[name]}
				if c.Role == "" && strings.HasPrefix(name, "Tot") {
					c.Role = RoleTotalizer
				}
				if unit != "na" {
					c.Unit = unit
				}
				d.Columns = append(d.Columns, c)
			}
			continue
		}
		stat, err := strconv.Atoi(f[2])
		if err != nil || len(f) < 5 {
			return d, bad(l, "want a statistic code, a name and a type")
		}
		t := 3
		for t < len(f) && !typeWords[f[t]] {
			t++
		}
		if t == len(f) {
			return d, bad(l, "no type (s decimal, string...)")
		}
		name := strings.TrimPrefix(strings.Join(f[3:t], " "), "*")
		for t < len(f) && typeWords[f[t]] {
			t++
		}
		notes := f[min(t+1, len(f)):] // after the width
		switch stat {
		case 700:
		case 701:
			if len(notes) == 1 {
				d.Errors = append(d.Errors, notes[0])
			}
		case 702:
			if len(notes) == 1 {
				d.Statuses = append(d.Statuses, notes[0])
			}
		default:
			c := Column{Name: name, Stat: stat, Role: statRoles[stat]}
			if c.Role == "" && strings.HasPrefix(name, "Tot") {
				c.Role = RoleTotalizer
			}
			if len(notes) == 3 {
				c.Unit = notes[2]
			}
			d.Columns = append(d.Columns, c)
		}
	}
	return d, nil
}

// ParseModel parses a ??M* answer (its lines without CR: "<id>  M04 Model
// Number MC-500SCCM-D", the codes M00..M09 with a label before each value,
// on 5v12, 8v17 and 10v20 alike) and returns the model number.
func ParseModel(lines [][]byte, id byte) (string, error) {
	if len(lines) == 0 {
		return "", fmt.Errorf("manufacturing info: no lines: %w", device.ErrFrame)
	}
	for _, l := range lines {
		f := strings.Fields(string(l))
		if err := answered(l, id, f); err != nil {
			return "", err
		}
		if len(f) >= 5 && f[1] == "M04" && f[2] == "Model" && f[3] == "Number" {
			return strings.Join(f[4:], " "), nil
		}
	}
	return "", fmt.Errorf("manufacturing info: no model number (M04): %w", device.ErrFrame)
}

// ModelFullScale reads the full scale an Alicat model number states
// ("MC-500SCCM-D": 500 sccm; "MCR-200SLPM-D": 200 slpm), or false when it
// states none the driver reads.
func ModelFullScale(model string) (device.Flow, bool) {
	for _, part := range strings.Split(model, "-") {
		for _, u := range []string{"SCCM", "SLPM"} {
			num, ok := strings.CutSuffix(part, u)
			if !ok || num == "" {
				continue
			}
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || !device.Finite(v) || v <= 0 {
				return 0, false
			}
			f, err := device.FlowIn(v, strings.ToLower(u))
			return f, err == nil
		}
	}
	return 0, false
}
