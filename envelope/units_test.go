package envelope

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestUnitConversions(t *testing.T) {
	tests := []struct {
		name   string
		k      kind
		v      float64
		unit   string
		device float64
	}{
		{"0 °C", kindTemperature, 0, "celsius", 273.15},
		{"700 °C", kindTemperature, 700, "C", 973.15},
		{"kelvin", kindTemperature, 300, "kelvin", 300},
		{"rate per minute", kindRate, 10, "celsius_per_minute", 10},
		{"rate per second", kindRate, 1, "K/s", 60},
		{"sccm", kindFlow, 50, "sccm", 50},
		{"slm", kindFlow, 0.5, "slm", 500},
		{"Pa", kindPressure, 100, "Pa", 100},
		{"mbar", kindPressure, 1, "mbar", 100},
		{"Torr", kindPressure, 760, "Torr", 101325},
		{"atm", kindPressure, 1, "atm", 101325},
		{"ms", kindDuration, 250, "ms", 0.25},
		{"s", kindDuration, 2, "s", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := toDevice(tt.k, tt.v, tt.unit)
			if err != nil || !near(d, tt.device) {
				t.Fatalf("toDevice = %v, %v; want %v", d, err, tt.device)
			}
			back, err := fromDevice(tt.k, d, tt.unit)
			if err != nil || !near(back, tt.v) {
				t.Fatalf("round trip = %v, %v; want %v", back, err, tt.v)
			}
		})
	}
	for _, bad := range []struct {
		k    kind
		unit string
	}{{kindTemperature, "fahrenheit"}, {kindFlow, "lpm"}, {kindPressure, "psi"}, {kindRate, "K/h"}, {kindDuration, "min"}, {kindSwitch, "on"}} {
		if _, err := toDevice(bad.k, 1, bad.unit); err == nil {
			t.Errorf("%s in %q accepted", bad.k, bad.unit)
		}
	}
}

func TestDeltaConversionIgnoresOffset(t *testing.T) {
	// 10 °C per minute is 10 K per minute, not 283.15.
	d, err := deltaToDevice(kindTemperature, 10, "celsius")
	if err != nil || !near(d, 10) {
		t.Fatalf("delta = %v, %v", d, err)
	}
	if got := deltaFromDevice(kindTemperature, 10, "celsius"); !near(got, 10) {
		t.Fatalf("delta back = %v", got)
	}
	if got := deltaFromDevice(kindFlow, 1000, "slm"); !near(got, 1) {
		t.Fatalf("flow delta = %v", got)
	}
}

func TestQuantityText(t *testing.T) {
	tests := []struct {
		in   string
		want Quantity
		ok   bool
	}{
		{"10 mbar", Quantity{10, "mbar"}, true},
		{"  1e-3   Torr ", Quantity{1e-3, "Torr"}, true},
		{"50sccm", Quantity{}, false},
		{"NaN sccm", Quantity{}, false},
		{"10", Quantity{}, false},
		{"ten mbar", Quantity{}, false},
	}
	for _, tt := range tests {
		var q Quantity
		err := q.UnmarshalText([]byte(tt.in))
		if (err == nil) != tt.ok || (tt.ok && q != tt.want) {
			t.Errorf("%q: got %v, %v", tt.in, q, err)
		}
		if tt.ok {
			b, _ := q.MarshalText()
			var back Quantity
			if err := back.UnmarshalText(b); err != nil || back != q {
				t.Errorf("%q: round trip %q -> %v, %v", tt.in, b, back, err)
			}
		}
	}
	var d Duration
	if err := d.UnmarshalText([]byte("1m30s")); err != nil || d != Duration(90e9) {
		t.Fatalf("duration %v %v", d, err)
	}
	if err := d.UnmarshalText([]byte("soon")); err == nil {
		t.Fatal("bad duration accepted")
	}
}
