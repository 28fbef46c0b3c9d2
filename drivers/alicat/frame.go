package alicat

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/profile"
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
	if m.set == "" || p.Commands["hold_closed"] == "" || p.Commands["cancel_hold"] == "" {
		return nil, fmt.Errorf("alicat: profile %s lacks the setpoint, hold_closed or cancel_hold command", p.ID)
	}
	return m, nil
}

// Profile is the profile the model was compiled from.
func (m *Model) Profile() *profile.Profile { return m.p }

// Frame is one parsed data frame. The numbers are in the units of their
// columns in the profile (0 for a column the model lacks).
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
	Gas         string
	Flags       []string
	// Values and Fields are every column's value and text, in order.
	Values []float64
	Fields []string

	held, fault bool
}

// Held reports whether the frame carries the code meaning valve_held (HLD).
func (f Frame) Held() bool { return f.held }

// ParseFrame parses a data frame (without its CR) strictly: the unit id must be
// id, the profile's columns in order (numbers in the sign+digits+point+digits
// format, at least the profile's number_width wide; the gas column must read
// gas), then status codes the profile knows, each once. Anything else is an
// error wrapping device.ErrFrame; a "<id> ?" reply is an error wrapping
// device.ErrRejected. Ranges are checked by MFC.ReadFlow, which knows the
// full scale.
func (m *Model) ParseFrame(b []byte, id byte, gas string) (Frame, error) {
	s := string(b)
	if s == string(id)+" ?" {
		return Frame{}, fmt.Errorf("controller answered %q: %w", s, device.ErrRejected)
	}
	cols := m.p.Channels
	fields := strings.Split(s, " ")
	if len(fields) < 1+len(cols) {
		return Frame{}, frameErr(s, "want at least %d fields, got %d", 1+len(cols), len(fields))
	}
	if len(fields[0]) != 1 || fields[0][0] != id {
		return Frame{}, frameErr(s, "unit id %q, want %q", fields[0], string(id))
	}
	fr := Frame{UnitID: id, Values: make([]float64, len(cols)), Fields: fields[1 : 1+len(cols)]}
	for i, c := range cols {
		f := fields[1+i]
		if c.Type == "text" {
			if f != gas {
				return Frame{}, frameErr(s, "gas %q, want %q", f, gas)
			}
			fr.Gas = f
			continue
		}
		v, res, err := parseNumber(f, m.width)
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
	seen := map[string]bool{}
	for _, f := range fields[1+len(cols):] {
		meaning, ok := m.p.StatusCodes[f]
		if !ok {
			return Frame{}, frameErr(s, "unknown status code %q", f)
		}
		if seen[f] {
			return Frame{}, frameErr(s, "status code %q twice", f)
		}
		seen[f] = true
		fr.Flags = append(fr.Flags, f)
		fr.held = fr.held || meaning == "valve_held"
		fr.fault = fr.fault || meaning == "sensor_fault"
	}
	return fr, nil
}

// colRange is a column's declared range in its unit for a controller of
// full scale fs, or false when it declares none.
func colRange(c profile.Channel, fs device.Flow) ([]float64, bool) {
	if len(c.Range) == 2 {
		return c.Range, true
	}
	if len(c.FSRange) != 2 {
		return nil, false
	}
	f := fs.SCCM()
	if c.Unit == "slpm" {
		f = fs.SLM()
	}
	return []float64{c.FSRange[0] * f, c.FSRange[1] * f}, true
}

// check is the fault check of a reading: a status code meaning
// sensor_fault, or a column outside its declared range, is an error
// wrapping device.ErrSensor.
func (m *Model) check(fr Frame, fs device.Flow) error {
	if fr.fault {
		return fmt.Errorf("status %v reports a sensor fault: %w", fr.Flags, device.ErrSensor)
	}
	for i, c := range m.p.Channels {
		if r, ok := colRange(c, fs); ok && c.Type != "text" && !(fr.Values[i] >= r[0] && fr.Values[i] <= r[1]) {
			return fmt.Errorf("%s %g %s outside the profile's range %g..%g: %w", c.Name, fr.Values[i], c.Unit, r[0], r[1], device.ErrSensor)
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

// parseNumber parses a sign, at least one digit, a point and at least one
// digit ("+014.70", "-000.12", "+1000.00"), and returns the value and the
// resolution of its last digit. Numbers narrower than width characters are
// refused, as the controller pads them with zeros.
func parseNumber(f string, width int) (v, res float64, err error) {
	if len(f) < width || len(f) > 16 {
		return 0, 0, fmt.Errorf("number %q: want %d characters (up to 16)", f, width)
	}
	if f[0] != '+' && f[0] != '-' {
		return 0, 0, fmt.Errorf("number %q: no sign", f)
	}
	point := -1
	for i := 1; i < len(f); i++ {
		c := f[i]
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && point < 0:
			point = i
		default:
			return 0, 0, fmt.Errorf("number %q: bad character %q", f, c)
		}
	}
	if point < 2 || point == len(f)-1 {
		return 0, 0, fmt.Errorf("number %q: want digits on both sides of the point", f)
	}
	v, err = strconv.ParseFloat(f, 64)
	if err != nil || !device.Finite(v) {
		return 0, 0, fmt.Errorf("number %q: %v", f, err)
	}
	return v, math.Pow10(-(len(f) - 1 - point)), nil
}

// status converts a frame into a device.FlowStatus.
func (m *Model) status(f Frame) device.FlowStatus {
	st := device.FlowStatus{Gas: f.Gas, Flags: f.Flags, Temperature: device.Celsius(f.Temperature)}
	for _, c := range m.p.Channels {
		switch c.Role {
		case profile.RoleFlow:
			st.Flow, _ = device.FlowIn(f.MassFlow, c.Unit)
		case profile.RoleSetpoint:
			st.Setpoint, _ = device.FlowIn(f.Setpoint, c.Unit)
		case profile.RolePressure:
			u, _ := profile.PressureUnit(c.Unit)
			st.Pressure = device.Pressure(f.Pressure) * u
		}
	}
	return st
}
