package device

import (
	"fmt"
	"math"
	"strings"
)

// Temperature is an absolute temperature in kelvin.
type Temperature float64

// Celsius returns the temperature c degrees Celsius.
func Celsius(c float64) Temperature { return Temperature(c + 273.15) }

// Kelvin returns the temperature k kelvin.
func Kelvin(k float64) Temperature { return Temperature(k) }

// Celsius returns t in degrees Celsius.
func (t Temperature) Celsius() float64 { return float64(t) - 273.15 }

// Kelvin returns t in kelvin.
func (t Temperature) Kelvin() float64 { return float64(t) }

func (t Temperature) String() string { return fmt.Sprintf("%.1f °C", t.Celsius()) }

// TemperatureIn converts value in the named unit ("celsius"/"C"/"degC",
// "kelvin"/"K") to a Temperature.
func TemperatureIn(value float64, unit string) (Temperature, error) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "celsius", "c", "degc", "°c":
		return Celsius(value), nil
	case "kelvin", "k":
		return Kelvin(value), nil
	}
	return 0, fmt.Errorf("device: unknown temperature unit %q (want celsius or kelvin)", unit)
}

// In returns t expressed in the named unit.
func (t Temperature) In(unit string) (float64, error) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "celsius", "c", "degc", "°c":
		return t.Celsius(), nil
	case "kelvin", "k":
		return t.Kelvin(), nil
	}
	return 0, fmt.Errorf("device: unknown temperature unit %q (want celsius or kelvin)", unit)
}

// TemperatureRate is a rate of temperature change in kelvin (equivalently
// degrees Celsius) per minute, the unit furnace controllers use for ramps.
type TemperatureRate float64

// KelvinPerMinute returns the rate r K/min (= °C/min).
func KelvinPerMinute(r float64) TemperatureRate { return TemperatureRate(r) }

// KelvinPerMinute returns r in K/min.
func (r TemperatureRate) KelvinPerMinute() float64 { return float64(r) }

func (r TemperatureRate) String() string { return fmt.Sprintf("%.1f °C/min", float64(r)) }

// Pressure is an absolute pressure in pascal.
type Pressure float64

// Standard pressure units, in pascal.
const (
	Pascal     Pressure = 1
	Millibar   Pressure = 100
	Torr       Pressure = 101325.0 / 760
	Atmosphere Pressure = 101325
)

// Pascal returns p in pascal.
func (p Pressure) Pascal() float64 { return float64(p) }

// Millibar returns p in millibar (hPa).
func (p Pressure) Millibar() float64 { return float64(p / Millibar) }

// Torr returns p in torr.
func (p Pressure) Torr() float64 { return float64(p / Torr) }

func (p Pressure) String() string { return fmt.Sprintf("%.4g Pa", float64(p)) }

// PressureIn converts value in the named unit ("Pa", "mbar"/"hPa", "Torr", "atm")
// to a Pressure.
func PressureIn(value float64, unit string) (Pressure, error) {
	u, err := pressureUnit(unit)
	if err != nil {
		return 0, err
	}
	return Pressure(value) * u, nil
}

// In returns p expressed in the named unit.
func (p Pressure) In(unit string) (float64, error) {
	u, err := pressureUnit(unit)
	if err != nil {
		return 0, err
	}
	return float64(p / u), nil
}

func pressureUnit(unit string) (Pressure, error) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "pa", "pascal":
		return Pascal, nil
	case "mbar", "millibar", "hpa":
		return Millibar, nil
	case "torr":
		return Torr, nil
	case "atm", "atmosphere":
		return Atmosphere, nil
	}
	return 0, fmt.Errorf("device: unknown pressure unit %q (want Pa, mbar, Torr or atm)", unit)
}

// Flow is a mass flow in standard cubic centimetres per minute (sccm).
type Flow float64

// SCCM returns the flow f sccm.
func SCCM(f float64) Flow { return Flow(f) }

// SLM returns the flow f standard litres per minute.
func SLM(f float64) Flow { return Flow(f * 1000) }

// SCCM returns f in sccm.
func (f Flow) SCCM() float64 { return float64(f) }

// SLM returns f in standard litres per minute.
func (f Flow) SLM() float64 { return float64(f) / 1000 }

func (f Flow) String() string { return fmt.Sprintf("%.2f sccm", float64(f)) }

// FlowIn converts value in the named unit ("sccm", "slm") to a Flow.
func FlowIn(value float64, unit string) (Flow, error) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "sccm":
		return SCCM(value), nil
	case "slm", "slpm":
		return SLM(value), nil
	}
	return 0, fmt.Errorf("device: unknown flow unit %q (want sccm or slm)", unit)
}

// In returns f expressed in the named unit.
func (f Flow) In(unit string) (float64, error) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "sccm":
		return f.SCCM(), nil
	case "slm", "slpm":
		return f.SLM(), nil
	}
	return 0, fmt.Errorf("device: unknown flow unit %q (want sccm or slm)", unit)
}

// Percent is a fraction of full scale in percent (0..100), used for output power.
type Percent float64

func (p Percent) String() string { return fmt.Sprintf("%.1f %%", float64(p)) }

// Finite reports whether v is neither NaN nor infinite; drivers refuse
// non-finite values with ErrOutOfRange before anything is sent.
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
