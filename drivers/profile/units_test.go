package profile_test

import (
	"math"
	"testing"

	"hcp-edge/drivers/profile"
)

// TestUnitConversions: every unit a Modbus channel may carry converts to
// its dimension's one unit and back.
func TestUnitConversions(t *testing.T) {
	for _, tc := range []struct {
		unit      string
		v, canon  float64
		dimension profile.Dimension
	}{
		{"celsius", 800, 800, profile.DimTemperature},
		{"fahrenheit", 1472, 800, profile.DimTemperature},
		{"fahrenheit", -40, -40, profile.DimTemperature},
		{"kelvin", 273.15, 0, profile.DimTemperature},
		{"celsius_per_second", 1, 60, profile.DimTemperatureRate},
		{"celsius_per_minute", 10, 10, profile.DimTemperatureRate},
		{"celsius_per_hour", 600, 10, profile.DimTemperatureRate},
		{"fahrenheit_per_minute", 18, 10, profile.DimTemperatureRate},
		{"pa", 100, 100, profile.DimPressure},
		{"mbar", 1, 100, profile.DimPressure},
		{"torr", 760, 101325, profile.DimPressure},
		{"bar", 1.01325, 101325, profile.DimPressure},
		{"psia", 14.6959488, 101325, profile.DimPressure},
		{"sccm", 500, 500, profile.DimFlow},
		{"slpm", 2, 2000, profile.DimFlow},
		{"lpm", 0.5, 500, profile.DimFlow},
		{"percent", 45.5, 45.5, profile.DimPercent},
	} {
		c := profile.Channel{Unit: tc.unit}
		if d, ok := profile.UnitDimension(tc.unit); !ok || d != tc.dimension {
			t.Errorf("%s: dimension %v %v, want %v", tc.unit, d, ok, tc.dimension)
		}
		got := c.ToCanonical(tc.v)
		if math.Abs(got-tc.canon) > 1e-6*math.Max(1, math.Abs(tc.canon)) {
			t.Errorf("%v %s = %v canonical, want %v", tc.v, tc.unit, got, tc.canon)
		}
		if back := c.FromCanonical(got); math.Abs(back-tc.v) > 1e-9*math.Max(1, math.Abs(tc.v)) {
			t.Errorf("%v %s: back %v", tc.v, tc.unit, back)
		}
	}
	if _, ok := profile.UnitDimension("furlong"); ok {
		t.Error("an unknown unit has a dimension")
	}
	c := profile.Channel{Unit: "fahrenheit", Range: []float64{-328, 2372}}
	if r := c.CanonicalRange(); math.Abs(r[0]+200) > 1e-9 || math.Abs(r[1]-1300) > 1e-9 {
		t.Errorf("°F range in °C %v", r)
	}
}
