package tpg

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"hcp-edge/device"
)

// maxValue bounds the text of one measurement value: the manual's
// "sx.xxxxEsxx" is 11 characters; a little slack, never an unbounded
// number.
const maxValue = 16

// ParseUnit parses the data of the unit command: one of the model's unit
// codes. A single digit the profile does not name (a unit the model's
// manual lists but the profile does not, or another model's code) is an
// error wrapping device.ErrMismatch; anything else malformed wraps
// device.ErrFrame.
func (m *Model) ParseUnit(data []byte) (Unit, error) {
	if len(data) == 1 && data[0] >= '0' && data[0] <= '9' && m.units[Unit(data[0])] == 0 {
		return 0, fmt.Errorf("unit code %q is not one of profile %s's (%s): %w", data, m.p.ID, m.unitList(), device.ErrMismatch)
	}
	if len(data) != 1 || m.units[Unit(data[0])] == 0 {
		return 0, fmt.Errorf("unit %q: %w", truncate(data), device.ErrFrame)
	}
	return Unit(data[0]), nil
}

// UnitName names a unit code as the profile does ("mbar"), or "" when the
// profile has no such code.
func (m *Model) UnitName(u Unit) string { return m.p.Units[string(rune(u))] }

func (m *Model) unitList() string {
	var parts []string
	for code := range m.units {
		parts = append(parts, fmt.Sprintf("%c %s", code, m.UnitName(code)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// gaugeStatus maps the family's status meanings to the contract's.
var gaugeStatus = map[string]device.GaugeStatus{
	"ok": device.GaugeOK, "underrange": device.GaugeUnderrange, "overrange": device.GaugeOverrange,
	"sensor_off": device.GaugeSensorOff, "no_sensor": device.GaugeNoSensor,
}

// ParsePressure parses the data of one gauge's mnemonic (PR1, PR2): a
// status digit, a comma and the value in unit u, as the manual writes it
// "x,sx.xxxxEsxx" where s is a sign ("0,+8.3400E-03"). The value is read
// as the number it is: with or without its sign, and with the exponent's
// width as sent (the manual's own "no sensor" output is "5,2.0000E-2").
// A malformed reply, or a status code the profile does not name, is an
// error wrapping device.ErrFrame; a status meaning other than ok,
// underrange and overrange (sensor error, off, no sensor, identification
// error) returns the reading with an error wrapping device.ErrSensor
// (identification error, which has no device.GaugeStatus of its own, as
// GaugeSensorError).
func (m *Model) ParsePressure(data []byte, u Unit) (device.PressureReading, error) {
	if len(data) < 3 || data[1] != ',' {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q: want x,sx.xxxxEsxx: %w", truncate(data), device.ErrFrame)
	}
	return m.parseGauge(data[:1], data[2:], u, data)
}

// ParsePressures parses the data of the two-gauge mnemonic PRX (and of a
// line of continuous output, COM): "x,sx.xxxxEsxx,y,sy.yyyyEsyy", gauge 1
// then gauge 2. Each reading comes with its own error (nil, or wrapping
// device.ErrSensor as ParsePressure's); err is non-nil only for a malformed
// reply (device.ErrFrame), and then there are no readings.
func (m *Model) ParsePressures(data []byte, u Unit) (rs []device.PressureReading, errs []error, err error) {
	f := bytes.Split(data, []byte(","))
	if len(f) != 4 {
		return nil, nil, fmt.Errorf("PRX reply %q: want x,sx.xxxxEsxx,y,sy.yyyyEsyy: %w", truncate(data), device.ErrFrame)
	}
	for i := 0; i < 4; i += 2 {
		r, e := m.parseGauge(f[i], f[i+1], u, data)
		if e != nil && !errors.Is(e, device.ErrSensor) {
			return nil, nil, e
		}
		rs, errs = append(rs, r), append(errs, e)
	}
	return rs, errs, nil
}

// parseGauge parses one gauge's status and value fields of reply.
func (m *Model) parseGauge(status, value []byte, u Unit, reply []byte) (device.PressureReading, error) {
	v, ok := parseValue(value)
	unit := m.units[u]
	if !ok || len(status) != 1 || unit == 0 {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q in unit %q: want x,sx.xxxxEsxx: %w", truncate(reply), u, device.ErrFrame)
	}
	meaning, ok := m.p.StatusCodes[string(status)]
	if !ok {
		return device.PressureReading{}, fmt.Errorf("pressure reply %q: unknown status %q: %w", truncate(reply), status, device.ErrFrame)
	}
	r := device.PressureReading{Pressure: device.Pressure(v) * unit}
	st, known := gaugeStatus[meaning]
	if !known {
		st = device.GaugeSensorError
	}
	r.Status = st
	if st > device.GaugeOverrange || !known {
		return r, fmt.Errorf("status %s (%s): %w", status, strings.ReplaceAll(meaning, "_", " "), device.ErrSensor)
	}
	return r, nil
}

// parseValue reads a measurement value as the family prints it: an
// optional sign, a mantissa of digits with at most one decimal point, 'E',
// an optional sign and one to three exponent digits. Nothing else (no
// spaces, no lower-case e, no hex, no inf or nan) is a value.
func parseValue(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > maxValue {
		return 0, false
	}
	i := 0
	if b[i] == '+' || b[i] == '-' {
		i++
	}
	digits, dot := 0, false
	for ; i < len(b) && b[i] != 'E'; i++ {
		switch {
		case b[i] >= '0' && b[i] <= '9':
			digits++
		case b[i] == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || i == len(b) {
		return 0, false
	}
	i++ // 'E'
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	exp := len(b) - i
	if exp < 1 || exp > 3 || !allDigits(b[i:]) {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || !device.Finite(v) {
		return 0, false
	}
	return v, true
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ParseIdent parses the data of TID: the gauge type of each gauge
// connector, comma-separated, in order. A TPG 261 answers two fields like
// a TPG 262 ("PKR,noSEn": its second connector reports no sensor). A field
// is letters and digits ("PKR", "IKR11", "noSEn", "noid"); anything else
// is an error wrapping device.ErrFrame.
func ParseIdent(data []byte) ([]string, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("TID reply is empty: %w", device.ErrFrame)
	}
	var out []string
	for _, f := range strings.Split(string(data), ",") {
		if f == "" || len(f) > 8 || !alnum(f) {
			return nil, fmt.Errorf("TID reply %q: want gauge types like PKR,noSEn: %w", truncate(data), device.ErrFrame)
		}
		out = append(out, f)
	}
	return out, nil
}

func alnum(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// NoGauge reports whether a TID field says no gauge is identified on that
// connector ("noSEn": no sensor, "noid": no identification).
func NoGauge(id string) bool { return id == "noSEn" || id == "noid" }

// ErrorWord is the controller's error word as ERR (and ENQ with no request
// pending) sends it: four binary digits, "0000" no error, "1000" controller
// error (see the display), "0100" no hardware, "0010" inadmissible
// parameter, "0001" syntax error; several may be set at once.
type ErrorWord string

// ParseErrorWord parses an error word; anything but four binary digits is
// an error wrapping device.ErrFrame.
func ParseErrorWord(data []byte) (ErrorWord, error) {
	if len(data) != 4 || strings.Trim(string(data), "01") != "" {
		return "", fmt.Errorf("error word %q: want four binary digits: %w", truncate(data), device.ErrFrame)
	}
	return ErrorWord(data), nil
}

// errorBits names the error word's digits, left to right.
var errorBits = [4]string{"controller error (see display)", "no hardware", "inadmissible parameter", "syntax error"}

// String names the errors set, or "no error".
func (w ErrorWord) String() string {
	var set []string
	for i := 0; i < 4 && i < len(w); i++ {
		if w[i] == '1' {
			set = append(set, errorBits[i])
		}
	}
	if len(set) == 0 {
		return "no error"
	}
	return strings.Join(set, ", ")
}

// Fault reports whether the word reports a fault of the controller itself
// (controller error, no hardware), as opposed to a refused command
// (inadmissible parameter, syntax error) or none.
func (w ErrorWord) Fault() bool { return len(w) == 4 && (w[0] == '1' || w[1] == '1') }
