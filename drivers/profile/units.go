package profile

import (
	"fmt"
	"strings"
)

// Units of a Modbus channel. A channel's engineering value (raw × scale +
// offset) is in its Unit; the drivers convert it to its role's canonical
// unit (celsius, celsius_per_minute, percent, pa, sccm) before anything
// compares it with a limit, and back before they write it, so every limit
// of the rig is compared in one unit whatever unit the instrument works in.

// Dimension is what a unit measures.
type Dimension string

// Dimensions of the units a Modbus channel may carry.
const (
	DimTemperature     Dimension = "temperature"      // canonical: celsius
	DimTemperatureRate Dimension = "temperature_rate" // canonical: celsius_per_minute
	DimPressure        Dimension = "pressure"         // canonical: pa
	DimFlow            Dimension = "flow"             // canonical: sccm
	DimPercent         Dimension = "percent"          // canonical: percent
	DimTime            Dimension = "time"             // s or ms, as the role reads it
)

// unitDef is a unit: canonical = value × factor + shift.
type unitDef struct {
	dim           Dimension
	factor, shift float64
}

// units are the units a Modbus channel may name (lower case).
var units = map[string]unitDef{
	"celsius":               {DimTemperature, 1, 0},
	"fahrenheit":            {DimTemperature, 5.0 / 9, -32 * 5.0 / 9},
	"kelvin":                {DimTemperature, 1, -273.15},
	"celsius_per_second":    {DimTemperatureRate, 60, 0},
	"celsius_per_minute":    {DimTemperatureRate, 1, 0},
	"celsius_per_hour":      {DimTemperatureRate, 1.0 / 60, 0},
	"kelvin_per_minute":     {DimTemperatureRate, 1, 0},
	"fahrenheit_per_second": {DimTemperatureRate, 60 * 5.0 / 9, 0},
	"fahrenheit_per_minute": {DimTemperatureRate, 5.0 / 9, 0},
	"fahrenheit_per_hour":   {DimTemperatureRate, 5.0 / 9 / 60, 0},
	"pa":                    {DimPressure, 1, 0},
	"mbar":                  {DimPressure, 100, 0},
	"torr":                  {DimPressure, 101325.0 / 760, 0},
	"bar":                   {DimPressure, 1e5, 0},
	"psia":                  {DimPressure, 6894.757293168, 0},
	"sccm":                  {DimFlow, 1, 0},
	"slpm":                  {DimFlow, 1000, 0},
	"lpm":                   {DimFlow, 1000, 0}, // litres per minute at standard conditions, as MFCs report it
	"percent":               {DimPercent, 1, 0},
	"s":                     {DimTime, 1, 0},
	"ms":                    {DimTime, 1, 0},
}

// roleDims are the dimensions a role's channel may carry (a role not listed
// carries no unit, or any).
var roleDims = map[Role]Dimension{
	RoleProcessValue: DimTemperature, RoleProcessValueFloat: DimTemperature, RoleSetpoint: DimTemperature,
	RoleWorkingSetpoint: DimTemperature, RoleAlarmLimit: DimTemperature, RoleRampRate: DimTemperatureRate,
	RoleOutputPower: DimPercent, RoleWatchdogTimeout: DimTime, RoleUptime: DimTime,
	RolePressure: DimPressure, RoleFlow: DimFlow,
}

// roleUnit are the roles whose channel is read in one unit exactly (times:
// the driver takes the uptime in seconds, the watchdog timeout in ms).
var roleUnit = map[Role]string{RoleUptime: "s", RoleWatchdogTimeout: "ms"}

// UnitDimension returns what unit measures; ok is false for a unit no
// Modbus channel may carry.
func UnitDimension(unit string) (Dimension, bool) {
	u, ok := units[strings.ToLower(unit)]
	return u.dim, ok
}

// ToCanonical converts v, in the channel's unit, to its dimension's
// canonical unit (celsius, celsius_per_minute, pa, sccm, percent). A value
// of a channel without a known unit is returned as is.
func (c Channel) ToCanonical(v float64) float64 {
	u, ok := units[strings.ToLower(c.Unit)]
	if !ok {
		return v
	}
	return v*u.factor + u.shift
}

// FromCanonical converts v, in the canonical unit of the channel's
// dimension, to the channel's unit (what is encoded on the wire).
func (c Channel) FromCanonical(v float64) float64 {
	u, ok := units[strings.ToLower(c.Unit)]
	if !ok {
		return v
	}
	return (v - u.shift) / u.factor
}

// CanonicalRange is the channel's declared range converted to the canonical
// unit (nil when it declares none): what the rig's limits are compared with.
func (c Channel) CanonicalRange() []float64 {
	if len(c.Range) != 2 {
		return nil
	}
	lo, hi := c.ToCanonical(c.Range[0]), c.ToCanonical(c.Range[1])
	return []float64{min(lo, hi), max(lo, hi)}
}

// checkUnits refuses a channel whose unit is unknown, or whose unit cannot
// belong to its role (a temperature in bar), at the unit's own line.
func (v *validator) checkUnits(p *Profile) {
	for i, c := range p.Channels {
		if c.Unit == "" {
			continue
		}
		key := fmt.Sprintf("channels[%s].unit", c.Name)
		u, ok := units[strings.ToLower(c.Unit)]
		if !ok {
			v.add(v.line("channels", i, "unit"), key, "unknown unit %q (%s)", c.Unit, unitList())
			continue
		}
		if want, ok := roleDims[c.Role]; ok && u.dim != want {
			v.add(v.line("channels", i, "unit"), key, "%q is a %s unit: a channel of role %s is a %s", c.Unit, u.dim, c.Role, want)
		} else if exact, ok := roleUnit[c.Role]; ok && strings.ToLower(c.Unit) != exact {
			v.add(v.line("channels", i, "unit"), key, "%q: a channel of role %s is read in %s (scale it there)", c.Unit, c.Role, exact)
		}
	}
}

// unitList names the known units, for a refusal.
func unitList() string {
	return "celsius, fahrenheit, kelvin; celsius_per_second, celsius_per_minute, celsius_per_hour (and fahrenheit_per_…, kelvin_per_minute); pa, mbar, torr, bar, psia; sccm, slpm, lpm; percent; s, ms"
}
