package envelope

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"hcp-edge/device"
)

// kind is the physical quantity of a channel.
type kind int

const (
	kindTemperature kind = iota + 1 // device unit: kelvin
	kindRate                        // device unit: K/min
	kindFlow                        // device unit: sccm
	kindPressure                    // device unit: Pa
	kindDuration                    // device unit: seconds
	kindSwitch                      // on/off
)

func (k kind) String() string {
	switch k {
	case kindTemperature:
		return "temperature"
	case kindRate:
		return "temperature rate"
	case kindFlow:
		return "flow"
	case kindPressure:
		return "pressure"
	case kindDuration:
		return "duration"
	case kindSwitch:
		return "switch"
	}
	return "unknown"
}

func rateFactor(unit string) (float64, error) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "celsius_per_minute", "kelvin_per_minute", "k/min", "c/min", "°c/min", "degc/min":
		return 1, nil
	case "celsius_per_second", "kelvin_per_second", "k/s", "c/s", "°c/s", "degc/s":
		return 60, nil
	}
	return 0, fmt.Errorf("unknown temperature-rate unit %q (want celsius_per_minute or kelvin_per_minute)", unit)
}

func durationFactor(unit string) (float64, error) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "ms", "millisecond", "milliseconds":
		return 1e-3, nil
	case "s", "second", "seconds":
		return 1, nil
	}
	return 0, fmt.Errorf("unknown duration unit %q (want ms or s)", unit)
}

// toDevice converts v in unit to the device unit of k, with the explicit
// converters of package device.
func toDevice(k kind, v float64, unit string) (float64, error) {
	switch k {
	case kindTemperature:
		t, err := device.TemperatureIn(v, unit)
		return float64(t), err
	case kindRate:
		f, err := rateFactor(unit)
		return v * f, err
	case kindFlow:
		f, err := device.FlowIn(v, unit)
		return float64(f), err
	case kindPressure:
		p, err := device.PressureIn(v, unit)
		return float64(p), err
	case kindDuration:
		f, err := durationFactor(unit)
		return v * f, err
	}
	return 0, fmt.Errorf("channel kind %s has no unit", k)
}

// fromDevice converts v in the device unit of k to unit.
func fromDevice(k kind, v float64, unit string) (float64, error) {
	switch k {
	case kindTemperature:
		return device.Temperature(v).In(unit)
	case kindRate:
		f, err := rateFactor(unit)
		return v / f, err
	case kindFlow:
		return device.Flow(v).In(unit)
	case kindPressure:
		return device.Pressure(v).In(unit)
	case kindDuration:
		f, err := durationFactor(unit)
		return v / f, err
	}
	return 0, fmt.Errorf("channel kind %s has no unit", k)
}

// deltaToDevice converts a difference (a rate of change per minute, a step)
// in unit to device units: an offset such as the one between celsius and
// kelvin does not apply to differences.
func deltaToDevice(k kind, d float64, unit string) (float64, error) {
	a, err := toDevice(k, d, unit)
	if err != nil {
		return 0, err
	}
	z, _ := toDevice(k, 0, unit)
	return a - z, nil
}

func deltaFromDevice(k kind, d float64, unit string) float64 {
	a, _ := fromDevice(k, d, unit)
	z, _ := fromDevice(k, 0, unit)
	return tidy(a - z)
}

// display converts a device value for a message; unit was validated.
func display(k kind, v float64, unit string) float64 {
	out, err := fromDevice(k, v, unit)
	if err != nil {
		return v
	}
	return tidy(out)
}

// tidy rounds away the last bits of conversion noise (900.0000000000001 °C)
// so that messages and Violation fields read as configured.
func tidy(x float64) float64 {
	if !device.Finite(x) {
		return x
	}
	y, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	if err != nil {
		return x
	}
	return y
}

// Quantity is a number with its unit, written "10 mbar", "50 sccm" or
// "80 celsius" in configuration.
type Quantity struct {
	Value float64
	Unit  string
}

// IsZero reports whether the quantity was left unset.
func (q Quantity) IsZero() bool { return q.Unit == "" && q.Value == 0 }

func (q Quantity) String() string { return fmtNum(q.Value) + " " + q.Unit }

// MarshalText writes "value unit".
func (q Quantity) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// UnmarshalText reads "value unit" (one or more spaces between).
func (q *Quantity) UnmarshalText(b []byte) error {
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return fmt.Errorf("quantity %q: want \"<number> <unit>\", e.g. \"10 mbar\"", b)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !device.Finite(v) {
		return fmt.Errorf("quantity %q: bad number %q", b, f[0])
	}
	*q = Quantity{Value: v, Unit: f[1]}
	return nil
}

func (q Quantity) to(k kind) (float64, error) { return toDevice(k, q.Value, q.Unit) }

// Duration is a time.Duration written as "2s" or "500ms" in configuration.
type Duration time.Duration

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses a Go duration ("2s", "1m30s").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %w", b, err)
	}
	*d = Duration(v)
	return nil
}
