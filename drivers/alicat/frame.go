package alicat

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"hcp-edge/device"
	"hcp-edge/drivers/profile"
)

// Model is a mass-flow controller model of the family, compiled from its
// profile (drivers/profile, family alicat): the data frame's columns in
// order after the unit id, with their units and ranges; the setpoint,
// hold and cancel commands; the status codes and their meanings.
type Model struct {
	p     *profile.Profile
	role  map[profile.Role]int // column of each role
	set   string               // setpoint command
	width int
	nums  int // numeric columns before the gas column
}

// NewModel compiles a profile of the alicat family (one Parse accepted).
func NewModel(p *profile.Profile) (*Model, error) {
	if p == nil || p.Family != profile.Alicat {
		return nil, errors.New("alicat: needs a profile of the alicat family")
	}
	m := &Model{p: p, role: map[profile.Role]int{}, width: p.NumberWidth}
	for i, c := range p.Channels {
		m.role[c.Role] = i
		if c.Role == profile.RoleSetpoint {
			m.set = c.Command
		}
	}
	for _, r := range []profile.Role{profile.RoleFlow, profile.RoleSetpoint, profile.RoleGas} {
		if _, ok := m.role[r]; !ok {
			return nil, fmt.Errorf("alicat: profile %s has no %s column", p.ID, r)
		}
	}
	if g := m.role[profile.RoleGas]; g != len(p.Channels)-1 {
		return nil, fmt.Errorf("alicat: profile %s: the gas column must be the last (status codes follow it)", p.ID)
	}
	m.nums = len(p.Channels) - 1
	if m.set == "" || p.Commands["hold_closed"] == "" || p.Commands["cancel_hold"] == "" {
		return nil, fmt.Errorf("alicat: profile %s lacks the setpoint, hold_closed or cancel_hold command", p.ID)
	}
	return m, nil
}

// Profile is the profile the model was compiled from.
func (m *Model) Profile() *profile.Profile { return m.p }

// Frame is one parsed data frame. The numbers are in the units the
// controller printed them in: the profile's units until Verify has read the
// controller's own (MFC.Units).
type Frame struct {
	UnitID      byte
	Pressure    float64
	Temperature float64
	VolFlow     float64
	MassFlow    float64
	Setpoint    float64
	// SetpointRes is the resolution the setpoint was printed with (0.01 for
	// "+025.00").
	SetpointRes float64
	// Total is the totalizer column, on a controller with the totalizer
	// option (HasTotal): one more number between the setpoint and the gas
	// (numat/alicat, alicat/driver.py FlowMeter.get).
	Total    float64
	HasTotal bool
	Gas      string
	// Flags are the status codes after the gas, in the order sent.
	Flags []string
	// Unknown are the flags the profile does not name: ReadFlow reports them
	// as a fault of the controller (the meaning is unknown, so the reading
	// is not trusted) until the profile names them.
	Unknown []string
	// Values and Fields are every column's value and text, in the
	// profile's order (the totalizer is not among them).
	Values []float64
	Fields []string

	held, fault bool
	faults      []string
}

// Held reports whether the frame carries the code meaning valve_held (HLD).
func (f Frame) Held() bool { return f.held }

// Fault reports whether the frame carries a code meaning sensor_fault (ADC)
// or a code the profile does not name.
func (f Frame) Fault() bool { return f.fault || len(f.Unknown) > 0 }

// ParseFrame parses a data frame (without its CR): the unit id, then the
// profile's columns in order, then status codes, the fields separated by
// runs of spaces (real controllers pad the gas column to its width:
// "A +014.62 +021.89 +000.00 +000.00 +078.95     N2"). Numbers are an
// optional sign, digits, a point and digits (firmware before 6v prints
// positive numbers unsigned: "0116.3"), at least the profile's number_width
// wide without the sign. One number more than the profile's, just before the
// gas, is the totalizer column. The gas must read gas. Every status code is
// three capital letters or digits, each once; a code the profile does not
// name is kept in Unknown, never a frame error. Anything else is an error
// wrapping device.ErrFrame; a "<id> ?" reply is an error wrapping
// device.ErrRejected. Ranges are checked by MFC.ReadFlow, which knows the
// full scale.
func (m *Model) ParseFrame(b []byte, id byte, gas string) (Frame, error) {
	s := string(b)
	fields := strings.Fields(s)
	if len(fields) == 2 && fields[0] == string(id) && fields[1] == "?" {
		return Frame{}, fmt.Errorf("controller answered %q: %w", s, device.ErrRejected)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && (r < 0x21 || r > 0x7e) }) {
		return Frame{}, frameErr(s, "a character that is not printable ASCII")
	}
	cols := m.p.Channels
	if len(fields) < 1+len(cols) {
		return Frame{}, frameErr(s, "want at least %d fields, got %d", 1+len(cols), len(fields))
	}
	if len(fields[0]) != 1 || fields[0][0] != id {
		return Frame{}, frameErr(s, "unit id %q, want %q", fields[0], string(id))
	}
	// The numbers before the gas: the profile's, or one more (totalizer).
	n := 0
	for _, f := range fields[1:] {
		if _, _, err := parseNumber(f, 0); err != nil {
			break
		}
		n++
	}
	if n != m.nums && n != m.nums+1 {
		return Frame{}, frameErr(s, "%d numbers before the gas, want %d (or %d with a totalizer)", n, m.nums, m.nums+1)
	}
	if 1+n >= len(fields) {
		return Frame{}, frameErr(s, "no gas after the %d numbers", n)
	}
	fr := Frame{UnitID: id, Values: make([]float64, len(cols)), Fields: make([]string, len(cols))}
	copy(fr.Fields, fields[1:1+m.nums])
	fr.Fields[m.nums] = fields[1+n]
	for i, c := range cols[:m.nums] {
		v, res, err := parseNumber(fields[1+i], m.width)
		if err != nil {
			return Frame{}, frameErr(s, "field %d: %v", 2+i, err)
		}
		fr.Values[i] = v
		switch c.Role {
		case profile.RolePressure:
			fr.Pressure = v
		case profile.RoleTemperature:
			fr.Temperature = v
		case profile.RoleVolumetricFlow:
			fr.VolFlow = v
		case profile.RoleFlow:
			fr.MassFlow = v
		case profile.RoleSetpoint:
			fr.Setpoint, fr.SetpointRes = v, res
		}
	}
	if n == m.nums+1 {
		v, _, err := parseNumber(fields[n], m.width)
		if err != nil {
			return Frame{}, frameErr(s, "totalizer field %d: %v", 1+n, err)
		}
		fr.Total, fr.HasTotal = v, true
	}
	if g := fields[1+n]; g != gas {
		return Frame{}, frameErr(s, "gas %q, want %q", g, gas)
	}
	fr.Gas = gas
	seen := map[string]bool{}
	for _, f := range fields[2+n:] {
		if !isStatusCode(f) {
			return Frame{}, frameErr(s, "%q is not a status code (three capital letters or digits)", f)
		}
		if seen[f] {
			return Frame{}, frameErr(s, "status code %q twice", f)
		}
		seen[f] = true
		fr.Flags = append(fr.Flags, f)
		meaning, ok := m.p.StatusCodes[f]
		switch {
		case !ok:
			fr.Unknown = append(fr.Unknown, f)
		case meaning == "valve_held":
			fr.held = true
		case meaning == "sensor_fault":
			fr.fault = true
			fr.faults = append(fr.faults, f)
		}
	}
	return fr, nil
}

// isStatusCode reports whether f has the shape of a status code: three
// capital letters or digits (HLD, MOV, P2O).
func isStatusCode(f string) bool {
	if len(f) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if c := f[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// colRange is a column's declared range in unit for a controller of full
// scale fs, or false when it declares none. A declared range (range:) is in
// the profile's unit and is converted to unit.
func colRange(c profile.Channel, unit string, fs device.Flow) ([]float64, bool) {
	if len(c.Range) == 2 {
		if unit != c.Unit && (c.Role == profile.RoleFlow || c.Role == profile.RoleSetpoint) {
			lo, _ := device.FlowIn(c.Range[0], c.Unit)
			hi, _ := device.FlowIn(c.Range[1], c.Unit)
			a, _ := lo.In(unit)
			b, _ := hi.In(unit)
			return []float64{a, b}, true
		}
		return c.Range, true
	}
	if len(c.FSRange) != 2 {
		return nil, false
	}
	f, err := fs.In(unit)
	if err != nil {
		if v, ok := volumetricPerSCCM(unit); ok {
			f = fs.SCCM() * v
		} else {
			return nil, false
		}
	}
	return []float64{c.FSRange[0] * f, c.FSRange[1] * f}, true
}

// check is the fault check of a reading: a status code meaning
// sensor_fault or one the profile does not name, or a column outside its
// declared range, is an error wrapping device.ErrSensor.
func (m *Model) check(fr Frame, u Units, fs device.Flow) error {
	if fr.fault {
		return fmt.Errorf("status %v reports a sensor fault: %w", fr.faults, device.ErrSensor)
	}
	if len(fr.Unknown) > 0 {
		return fmt.Errorf("status %v: code(s) the profile %s does not name (the reading is not trusted; name them in the profile's status_codes from the manual): %w", fr.Unknown, m.p.ID, device.ErrSensor)
	}
	for i, c := range m.p.Channels {
		if r, ok := colRange(c, u.of(m, i), fs); ok && c.Type != "text" && !(fr.Values[i] >= r[0] && fr.Values[i] <= r[1]) {
			return fmt.Errorf("%s %g %s outside the profile's range %g..%g: %w", c.Name, fr.Values[i], u.of(m, i), r[0], r[1], device.ErrSensor)
		}
	}
	return nil
}

func frameErr(frame, format string, args ...any) error {
	return fmt.Errorf("data frame %q: %s: %w", truncate(frame), fmt.Sprintf(format, args...), device.ErrFrame)
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// parseNumber parses an optional sign, at least one digit, a point and at
// least one digit ("+014.70", "-000.12", "+1000.00", "0116.3"), and returns
// the value and the resolution of its last digit. Numbers narrower than
// width characters without their sign are refused, as the controller pads
// them with zeros.
func parseNumber(f string, width int) (v, res float64, err error) {
	if len(f) > 16 {
		return 0, 0, fmt.Errorf("number %q: longer than 16 characters", f)
	}
	digits := f
	if f != "" && (f[0] == '+' || f[0] == '-') {
		digits = f[1:]
	}
	if len(digits) < width {
		return 0, 0, fmt.Errorf("number %q: want at least %d characters without the sign", f, width)
	}
	point := -1
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && point < 0:
			point = i
		default:
			return 0, 0, fmt.Errorf("number %q: bad character %q", f, c)
		}
	}
	if point < 1 || point == len(digits)-1 {
		return 0, 0, fmt.Errorf("number %q: want digits on both sides of the point", f)
	}
	v, err = strconv.ParseFloat(f, 64)
	if err != nil || !device.Finite(v) {
		return 0, 0, fmt.Errorf("number %q: %v", f, err)
	}
	return v, math.Pow10(-(len(digits) - 1 - point)), nil
}

// status converts a frame into a device.FlowStatus, through the units u.
func (m *Model) status(f Frame, u Units) device.FlowStatus {
	st := device.FlowStatus{Gas: f.Gas, Flags: f.Flags, Temperature: device.Celsius(f.Temperature)}
	for i, c := range m.p.Channels {
		switch c.Role {
		case profile.RoleFlow:
			st.Flow, _ = device.FlowIn(f.MassFlow, u.of(m, i))
		case profile.RoleSetpoint:
			st.Setpoint, _ = device.FlowIn(f.Setpoint, u.of(m, i))
		case profile.RolePressure:
			p, _ := profile.PressureUnit(c.Unit)
			st.Pressure = device.Pressure(f.Pressure) * p
		}
	}
	return st
}
