package proptest

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"hcp-edge/firmware-sim/plant"
)

// envelopeYAML is the envelope under test, read by the oracle and by the
// interlock alike.
const envelopeYAML = "../testdata/envelope.yaml"

// Measurement allowances of the oracle: the simulator's sensors are noisy
// (MFC flow σ 0.05 sccm, thermocouple σ 0.03 °C) and the gauge prints five
// significant digits, so the oracle judges a condition the interlock could
// only know through a sensor with these margins. They are an order of
// magnitude above the noise, far below any limit.
const (
	flowMargin     = 0.5  // sccm
	tempMargin     = 0.5  // °C
	pressureMargin = 1e-3 // relative
)

// limits is the envelope restated for the oracle from the YAML, parsed here
// without package envelope, in the simulator's units (°C, °C/min, sccm, Pa,
// ms).
type limits struct {
	setpointMin, setpointMax float64
	rampMin, rampMax         float64
	flowMax                  map[string]float64 // by simulator gas key: ar, h2, h2s
	integMin, integMax       float64
	heaterMaxPa              float64
	inertGas                 string // simulator key
	inertMin                 float64
	gases                    map[string]gasLimit // by simulator key
	reactive                 []string            // simulator keys
	ventMaxC                 float64
	flowOn                   float64
}

type gasLimit struct {
	maxPa    float64
	switches []string        // coils that must be on
	inputs   map[string]bool // input name → required level
}

type yamlParam struct {
	Min  *float64 `yaml:"min"`
	Max  *float64 `yaml:"max"`
	Unit string   `yaml:"unit"`
}

type yamlEnvelope struct {
	Parameters map[string]yamlParam `yaml:"parameters"`
	Interlocks struct {
		Heater struct {
			MaxPressure  string `yaml:"max_pressure"`
			InertGas     string `yaml:"inert_gas"`
			MinInertFlow string `yaml:"min_inert_flow"`
		} `yaml:"heater"`
		Gases map[string]struct {
			MaxPressure       string          `yaml:"max_pressure"`
			RequireSwitchesOn []string        `yaml:"require_switches_on"`
			RequireInputs     map[string]bool `yaml:"require_inputs"`
		} `yaml:"gases"`
	} `yaml:"interlocks"`
	ReactiveGases []string `yaml:"reactive_gases"`
	Vent          struct {
		MaxTemperature string `yaml:"max_temperature"`
	} `yaml:"vent"`
	FlowOnThreshold string `yaml:"flow_on_threshold"`
}

// quantity parses "10 mbar" into the simulator's unit of its kind.
func quantity(t testing.TB, s string) float64 {
	t.Helper()
	f := strings.Fields(s)
	if len(f) != 2 {
		t.Fatalf("oracle: quantity %q", s)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("oracle: quantity %q: %v", s, err)
	}
	return inUnit(t, v, f[1])
}

func inUnit(t testing.TB, v float64, unit string) float64 {
	t.Helper()
	switch unit {
	case "mbar":
		return v * 100 // Pa
	case "Pa":
		return v
	case "sccm", "celsius", "celsius_per_minute", "ms":
		return v
	case "slm":
		return v * 1000
	}
	t.Fatalf("oracle: unit %q is not restated in the oracle; extend it", unit)
	return 0
}

func loadLimits(t testing.TB) (limits, []byte) {
	t.Helper()
	raw, err := os.ReadFile(envelopeYAML)
	if err != nil {
		t.Fatal(err)
	}
	var y yamlEnvelope
	if err := yaml.Unmarshal(raw, &y); err != nil {
		t.Fatal(err)
	}
	param := func(name string) (lo, hi float64) {
		p, ok := y.Parameters[name]
		if !ok || p.Max == nil {
			t.Fatalf("oracle: parameter %s missing", name)
		}
		lo = math.Inf(-1)
		if p.Min != nil {
			lo = inUnit(t, *p.Min, p.Unit)
		}
		return lo, inUnit(t, *p.Max, p.Unit)
	}
	key := strings.ToLower
	var l limits
	l.setpointMin, l.setpointMax = param("furnace.setpoint")
	l.setpointMin = math.Max(l.setpointMin, 0) // the controller's range bounds it otherwise
	l.rampMin, l.rampMax = param("furnace.ramp_rate")
	l.integMin, l.integMax = param("spectrometer.integration")
	l.flowMax = map[string]float64{}
	for _, g := range []string{"Ar", "H2", "H2S"} {
		_, l.flowMax[key(g)] = param("flow." + g)
	}
	h := y.Interlocks.Heater
	l.heaterMaxPa, l.inertGas, l.inertMin = quantity(t, h.MaxPressure), key(h.InertGas), quantity(t, h.MinInertFlow)
	l.gases = map[string]gasLimit{}
	for g, r := range y.Interlocks.Gases {
		l.gases[key(g)] = gasLimit{maxPa: quantity(t, r.MaxPressure), switches: r.RequireSwitchesOn, inputs: r.RequireInputs}
	}
	for _, g := range y.ReactiveGases {
		l.reactive = append(l.reactive, key(g))
	}
	l.ventMaxC = quantity(t, y.Vent.MaxTemperature)
	l.flowOn = quantity(t, y.FlowOnThreshold)
	return l, raw
}

// valveOf is the rig's line valve of a gas (configs/rig-protocols.md).
func valveOf(gas string) string { return gas + "_valve" }

// input is the level of a named input of the envelope in the plant.
func input(s plant.Snapshot, name string) (bool, bool) {
	switch name {
	case "door_closed", "exhaust_ok", "pump_running":
		v, ok := s.DiscreteInputs[name]
		return v, ok
	case "leak_detected":
		return !s.GPIO[plant.PinLeak], true // active low
	case "estop_pressed":
		return !s.GPIO[plant.PinEstop], true
	}
	return false, false
}

// inUse: the gas flows (beyond noise) or its line valve coil is on.
func (l limits) inUse(gas string, s plant.Snapshot) bool {
	return s.MFCs[gas].FlowSCCM >= l.flowOn+flowMargin || s.Coils[valveOf(gas)]
}

// cond is a condition of the envelope on the plant; it returns why it does
// not hold ("" when it holds).
type cond func(s plant.Snapshot) string

func (l limits) heaterOK(s plant.Snapshot) string {
	if s.ChamberPa <= l.heaterMaxPa*(1+pressureMargin) || s.MFCs[l.inertGas].FlowSCCM >= l.inertMin-flowMargin {
		return ""
	}
	return fmt.Sprintf("heater: chamber %.4g Pa > %.4g Pa and %s %.3g sccm < %.3g", s.ChamberPa, l.heaterMaxPa,
		l.inertGas, s.MFCs[l.inertGas].FlowSCCM, l.inertMin)
}

func (l limits) gasOK(gas string) cond {
	return func(s plant.Snapshot) string {
		var why []string
		if r, ok := l.gases[gas]; ok {
			if s.ChamberPa > r.maxPa*(1+pressureMargin) {
				why = append(why, fmt.Sprintf("chamber %.4g Pa > %.4g Pa", s.ChamberPa, r.maxPa))
			}
			for _, sw := range r.switches {
				if !s.Coils[sw] {
					why = append(why, sw+" off")
				}
			}
			for in, want := range r.inputs {
				if v, ok := input(s, in); !ok || v != want {
					why = append(why, fmt.Sprintf("%s=%v", in, v))
				}
			}
		}
		if slices.Contains(l.reactive, gas) {
			for _, other := range l.reactive {
				if other != gas && l.inUse(other, s) {
					why = append(why, other+" in use (mixing)")
				}
			}
		}
		if len(why) == 0 {
			return ""
		}
		return gas + ": " + strings.Join(why, ", ")
	}
}

func (l limits) ventOK(s plant.Snapshot) string {
	var why []string
	switch pv := s.Furnace.PVC; {
	case pv == nil:
		why = append(why, "temperature unknown")
	case *pv > l.ventMaxC+tempMargin:
		why = append(why, fmt.Sprintf("furnace %.1f °C", *pv))
	}
	if s.Furnace.HeaterEnable {
		why = append(why, "heater enabled")
	}
	for _, g := range l.reactive {
		if l.inUse(g, s) {
			why = append(why, g+" in use")
		}
	}
	if s.Coils["gate_valve"] {
		why = append(why, "gate valve open")
	}
	if len(why) == 0 {
		return ""
	}
	return "vent: " + strings.Join(why, ", ")
}

func gateOK(s plant.Snapshot) string {
	if s.Coils["vent_valve"] {
		return "gate valve opened while venting"
	}
	return ""
}

func (l limits) scrubberOffOK(s plant.Snapshot) string {
	for g, r := range l.gases {
		if slices.Contains(r.switches, "scrubber") && l.inUse(g, s) {
			return "scrubber off while " + g + " in use"
		}
	}
	return ""
}

func (l limits) relayOK(s plant.Snapshot) string {
	if v, _ := input(s, "estop_pressed"); v {
		return "relay energised with the e-stop pressed"
	}
	if v, _ := input(s, "leak_detected"); v {
		return "relay energised with a leak detected"
	}
	return ""
}

// both reports a violation only when c fails before and after the write:
// the plant moved between the two snapshots, and a monotone quantity that
// violates at both ends violated when the interlock read it too.
func both(c cond, pre, post plant.Snapshot) string {
	a := c(pre)
	if a == "" || c(post) == "" {
		return ""
	}
	return a
}

func between(v, lo, hi float64) bool { return v >= lo && v <= hi }

// judge returns why write w leaves the envelope ("" if it does not), given
// the plant before and after the operation that caused it.
func (l limits) judge(w plant.Write, pre, post plant.Snapshot) string {
	bad := func(format string, args ...any) string { return fmt.Sprintf(format, args...) }
	switch w.Device {
	case "furnace":
		switch w.Channel {
		case "setpoint":
			c := w.Value / 10
			if !between(c, l.setpointMin, l.setpointMax) {
				return bad("setpoint %.1f °C outside %g..%g", c, l.setpointMin, l.setpointMax)
			}
			if pre.Furnace.HeaterEnable && post.Furnace.HeaterEnable && c > pre.Furnace.SetpointC {
				return both(l.heaterOK, pre, post)
			}
		case "ramp_rate":
			if r := w.Value / 10; !between(r, l.rampMin, l.rampMax) {
				return bad("ramp %.1f °C/min outside %g..%g", r, l.rampMin, l.rampMax)
			}
		case "heater_enable":
			if w.Value == 1 {
				return both(l.heaterOK, pre, post)
			}
		case "watchdog_timeout", "watchdog_kick", "alarm_limit": // the driver's own, never an Action
		default:
			return bad("unknown furnace channel %s", w.Channel)
		}
	case "mfc-ar", "mfc-h2", "mfc-h2s":
		gas := strings.TrimPrefix(w.Device, "mfc-")
		switch w.Channel {
		case "setpoint":
			if !between(w.Value, 0, l.flowMax[gas]+1e-6) {
				return bad("%s flow %g sccm outside 0..%g", gas, w.Value, l.flowMax[gas])
			}
			if w.Value > 0 {
				return both(l.gasOK(gas), pre, post)
			}
		case "hold": // Halt only: closes the valve
		default:
			return bad("unknown MFC channel %s", w.Channel)
		}
	case "dio":
		coil, ok := strings.CutPrefix(w.Channel, "coil:")
		if !ok {
			return bad("unknown dio channel %s", w.Channel)
		}
		on := w.Value == 1
		switch {
		case on && strings.HasSuffix(coil, "_valve") && coil != "vent_valve" && coil != "gate_valve":
			return both(l.gasOK(strings.TrimSuffix(coil, "_valve")), pre, post)
		case on && coil == "vent_valve":
			return both(l.ventOK, pre, post)
		case on && coil == "gate_valve":
			return both(gateOK, pre, post)
		case !on && coil == "scrubber":
			return both(l.scrubberOffOK, pre, post)
		}
	case "raman":
		if w.Channel == "acquire" && !between(w.Value, l.integMin, l.integMax) {
			return bad("integration %g ms outside %g..%g", w.Value, l.integMin, l.integMax)
		}
	case "gauge": // unit selection by the driver
	case "gpio":
		if w.Channel == plant.PinRelay && w.Value == 1 {
			return both(l.relayOK, pre, post)
		}
	default:
		return bad("unknown device %s", w.Device)
	}
	return ""
}
