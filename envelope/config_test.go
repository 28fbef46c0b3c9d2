package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func loadTestConfig(t testing.TB) Config {
	t.Helper()
	f, err := os.Open("testdata/envelope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := LoadYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testEnvelope(t testing.TB) *Envelope {
	t.Helper()
	env, err := Compile(loadTestConfig(t), SimRigSpec())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestLoadAndCompile(t *testing.T) {
	env := testEnvelope(t)
	if env.MaxReadingAge() != 2*time.Second || env.CommsTimeout() != 3*time.Second {
		t.Fatalf("timing %v %v", env.MaxReadingAge(), env.CommsTimeout())
	}
	if p := env.Procedure(TripOverTemperature); p != ProcImmediateShutdown {
		t.Fatalf("over_temperature -> %s", p)
	}
	l := env.limits[FlowChannel("Ar")]
	if !near(l.max, 500) || l.unit != "slm" {
		t.Fatalf("Ar limit %+v: 0.5 slm must be 500 sccm", l)
	}
	if l := env.limits[ChannelSetpoint]; !near(l.max, 1273.15) {
		t.Fatalf("setpoint max %v K", l.max)
	}
}

func TestLoadRefusesUnknownFields(t *testing.T) {
	if _, err := LoadYAML(strings.NewReader("parameters: {}\nsurprise: 1\n")); err == nil {
		t.Fatal("YAML: unknown top-level field accepted")
	}
	if _, err := LoadYAML(strings.NewReader("parameters:\n  furnace.setpoint: {max: 1, unit: celsius, maximum: 2}\n")); err == nil {
		t.Fatal("YAML: unknown parameter field accepted")
	}
	if _, err := LoadYAML(strings.NewReader("interlocks:\n  heater: {max_pressure: 1mbar}\n")); err == nil {
		t.Fatal("YAML: quantity without a space accepted")
	}
	if _, err := LoadJSON([]byte(`{"parameters": {}, "surprise": 1}`)); err == nil {
		t.Fatal("JSON: unknown field accepted")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	cfg := loadTestConfig(t)
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadJSON(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if _, err := Compile(back, SimRigSpec()); err != nil {
		t.Fatal(err)
	}
	// The seeds/000 shape: parameters with max, unit and hard_limit.
	if !bytes.Contains(data, []byte(`"hard_limit":true`)) || !bytes.Contains(data, []byte(`"emergency_procedures"`)) {
		t.Fatalf("JSON lost the seed's fields: %s", data)
	}
}

func fptr(f float64) *float64 { return &f }

func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config, *RigSpec)
		path   string // the ConfigError path that must be reported
	}{
		{"max beyond device range", func(c *Config, _ *RigSpec) {
			p := c.Parameters[ChannelSetpoint]
			p.Max = fptr(1300)
			c.Parameters[ChannelSetpoint] = p
		}, "parameters.furnace.setpoint.max"},
		{"max beyond range in another unit", func(c *Config, _ *RigSpec) {
			c.Parameters[FlowChannel("H2S")] = Parameter{Max: fptr(0.06), Unit: "slm"}
		}, "parameters.flow.H2S.max"},
		{"min below range", func(c *Config, _ *RigSpec) {
			c.Parameters[ChannelSetpoint] = Parameter{Min: fptr(-10), Max: fptr(900), Unit: "celsius"}
		}, "parameters.furnace.setpoint.min"},
		{"min above max", func(c *Config, _ *RigSpec) {
			c.Parameters[ChannelRampRate] = Parameter{Min: fptr(30), Max: fptr(20), Unit: "K/min"}
		}, "parameters.furnace.ramp_rate"},
		{"max missing", func(c *Config, _ *RigSpec) {
			c.Parameters[FlowChannel("H2")] = Parameter{Min: fptr(0), Unit: "sccm"}
		}, "parameters.flow.H2.max"},
		{"writable channel without a limit", func(c *Config, _ *RigSpec) {
			delete(c.Parameters, FlowChannel("H2"))
		}, "channel flow.H2"},
		{"switch without a rule", func(c *Config, _ *RigSpec) {
			delete(c.Unrestricted, SwitchChannel("pump"))
		}, "channel switch.pump"},
		{"heater without its interlock", func(c *Config, _ *RigSpec) {
			c.Interlocks.Heater = nil
		}, "channel furnace.heater"},
		{"soft limit", func(c *Config, _ *RigSpec) {
			f := false
			p := c.Parameters[ChannelSetpoint]
			p.HardLimit = &f
			c.Parameters[ChannelSetpoint] = p
		}, "parameters.furnace.setpoint.hard_limit"},
		{"unknown channel", func(c *Config, _ *RigSpec) {
			c.Parameters["flow.Cl2"] = Parameter{Max: fptr(1), Unit: "sccm"}
		}, "parameters.flow.Cl2"},
		{"wrong unit kind", func(c *Config, _ *RigSpec) {
			c.Parameters[FlowChannel("Ar")] = Parameter{Max: fptr(1), Unit: "mbar"}
		}, "parameters.flow.Ar.unit"},
		{"numeric limit on a switch", func(c *Config, _ *RigSpec) {
			c.Parameters[ChannelHeater] = Parameter{Max: fptr(1), Unit: "celsius"}
		}, "parameters.furnace.heater"},
		{"rate on a read-only channel", func(c *Config, _ *RigSpec) {
			p := c.Parameters[ChannelTemperature]
			p.MaxRatePerMinute = fptr(5)
			c.Parameters[ChannelTemperature] = p
		}, "parameters.furnace.temperature.max_rate_per_minute"},
		{"negative rate", func(c *Config, _ *RigSpec) {
			p := c.Parameters[FlowChannel("H2S")]
			p.MaxRatePerMinute = fptr(-1)
			c.Parameters[FlowChannel("H2S")] = p
		}, "parameters.flow.H2S.max_rate_per_minute"},
		{"over-temperature threshold missing", func(c *Config, _ *RigSpec) {
			delete(c.Parameters, ChannelTemperature)
		}, "parameters.furnace.temperature"},
		{"over-pressure beyond the gauge", func(c *Config, _ *RigSpec) {
			c.Parameters[ChannelPressure] = Parameter{Max: fptr(1.2), Unit: "atm"}
		}, "parameters.chamber.pressure.max"},
		{"heater inert gas unknown", func(c *Config, _ *RigSpec) {
			c.Interlocks.Heater.InertGas = "He"
		}, "interlocks.heater.inert_gas"},
		{"heater inert flow beyond full scale", func(c *Config, _ *RigSpec) {
			c.Interlocks.Heater.MinInertFlow = Quantity{1, "slm"}
		}, "interlocks.heater.min_inert_flow"},
		{"heater pressure unit", func(c *Config, _ *RigSpec) {
			c.Interlocks.Heater.MaxPressure = Quantity{1, "psi"}
		}, "interlocks.heater.max_pressure"},
		{"gas interlock unknown switch", func(c *Config, _ *RigSpec) {
			g := c.Interlocks.Gases["H2S"]
			g.RequireSwitchesOn = []string{"fan"}
			c.Interlocks.Gases["H2S"] = g
		}, "interlocks.gases.H2S.require_switches_on"},
		{"gas interlock cannot require the relay", func(c *Config, _ *RigSpec) {
			g := c.Interlocks.Gases["H2S"]
			g.RequireSwitchesOn = []string{"relay"}
			c.Interlocks.Gases["H2S"] = g
		}, "interlocks.gases.H2S.require_switches_on"},
		{"gas interlock unknown input", func(c *Config, _ *RigSpec) {
			g := c.Interlocks.Gases["H2S"]
			g.RequireInputs = map[string]bool{"window_closed": true}
			c.Interlocks.Gases["H2S"] = g
		}, "interlocks.gases.H2S.require_inputs"},
		{"unknown prohibited action", func(c *Config, _ *RigSpec) {
			c.ProhibitedActions = append(c.ProhibitedActions, "juggling")
		}, "prohibited_actions"},
		{"mixing without purge", func(c *Config, _ *RigSpec) { c.Purge = nil }, "purge"},
		{"purge with a reactive gas", func(c *Config, _ *RigSpec) { c.Purge.InertGas = "H2" }, "purge.inert_gas"},
		{"purge without duration", func(c *Config, _ *RigSpec) { c.Purge.MinDuration = 0 }, "purge.min_duration"},
		{"venting rules without vent", func(c *Config, _ *RigSpec) { c.Vent = nil }, "vent"},
		{"vent temperature missing", func(c *Config, _ *RigSpec) { c.Vent.MaxTemperature = Quantity{} }, "vent.max_temperature"},
		{"trip without procedure", func(c *Config, _ *RigSpec) {
			delete(c.EmergencyProcedures, string(TripCommsLoss))
		}, "emergency_procedures.comms_loss"},
		{"unknown procedure", func(c *Config, _ *RigSpec) {
			c.EmergencyProcedures[string(TripOverPressure)] = "pray"
		}, "emergency_procedures.over_pressure"},
		{"unknown trip", func(c *Config, _ *RigSpec) {
			c.EmergencyProcedures["bad_vibes"] = "safe_state"
		}, "emergency_procedures.bad_vibes"},
		{"estop must halt everything", func(c *Config, _ *RigSpec) {
			c.EmergencyProcedures[string(TripEStop)] = string(ProcCloseValvesAndAlert)
		}, "emergency_procedures.estop"},
		{"estop input unknown", func(c *Config, _ *RigSpec) { c.Inputs.EStop = "big_red_button" }, "inputs.estop"},
		{"unrestricted numeric channel", func(c *Config, _ *RigSpec) {
			c.Unrestricted[FlowChannel("Ar")] = "inert"
		}, "unrestricted.flow.Ar"},
		{"unrestricted without reason", func(c *Config, _ *RigSpec) {
			c.Unrestricted[SwitchChannel("pump")] = " "
		}, "unrestricted.switch.pump"},
		{"no reading age", func(c *Config, _ *RigSpec) { c.MaxReadingAge = 0 }, "max_reading_age"},
		{"no comms timeout", func(c *Config, _ *RigSpec) { c.CommsTimeout = 0 }, "comms_timeout"},
		{"no flow threshold", func(c *Config, _ *RigSpec) { c.FlowOnThreshold = Quantity{} }, "flow_on_threshold"},
		{"spectrometer limit but no spectrometer", func(c *Config, s *RigSpec) { s.Spectrometer = nil }, "parameters.spectrometer.integration"},
		{"gas valve not a switch", func(_ *Config, s *RigSpec) { s.Gases[0].Valve = "nowhere" }, "rig.gases.Ar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loadTestConfig(t)
			spec := SimRigSpec()
			tt.mutate(&cfg, &spec)
			env, err := Compile(cfg, spec)
			if err == nil || env != nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("not ErrInvalidConfig: %v", err)
			}
			var paths []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ce *ConfigError
				if errors.As(e, &ce) {
					paths = append(paths, ce.Path)
					if ce.Path == tt.path {
						return
					}
				}
			}
			t.Fatalf("no error at %q; got %v:\n%v", tt.path, paths, err)
		})
	}
}

func TestCompileErrorNamesChannel(t *testing.T) {
	cfg := loadTestConfig(t)
	cfg.Parameters[ChannelSetpoint] = Parameter{Max: fptr(1300), Unit: "celsius"}
	_, err := Compile(cfg, SimRigSpec())
	msg := err.Error()
	for _, want := range []string{"furnace.setpoint", "1300 celsius", "0 .. 1200 celsius"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestCoverage(t *testing.T) {
	env := testEnvelope(t)
	cov := env.Coverage()
	seen := map[string]CoverageEntry{}
	for _, c := range cov {
		seen[c.Channel] = c
		if len(c.Rules) == 0 {
			t.Errorf("%s: no rule", c.Channel)
		}
	}
	for _, ch := range SimRigSpec().WritableChannels() {
		if _, ok := seen[ch]; !ok {
			t.Errorf("writable channel %s missing from the coverage report", ch)
		}
		if seen[ch].Wire == "" {
			t.Errorf("%s: no wire", ch)
		}
	}
	want := map[string]string{
		ChannelSetpoint:             "hard limit 0 .. 1000 celsius",
		ChannelHeater:               string(RuleHeater),
		FlowChannel("H2S"):          "max_rate_of_change: 60 sccm per minute",
		SwitchChannel("h2s_valve"):  "interlock H2S: chamber ≤ 10 mbar, scrubber on",
		SwitchChannel("vent_valve"): "prohibited venting_while_hot (above 80 celsius",
		SwitchChannel("gate_valve"): "prohibited venting_while_pumping",
		SwitchChannel("scrubber"):   "output_required_by_gas: stays on while H2S is in use",
		SwitchChannel("relay"):      string(RuleInterlockOwned),
		SwitchChannel("pump"):       "unrestricted: the roughing pump",
		"furnace.watchdog_kick":     "driver-internal",
	}
	for ch, frag := range want {
		if !strings.Contains(strings.Join(seen[ch].Rules, "\n"), frag) {
			t.Errorf("%s: rules %q lack %q", ch, seen[ch].Rules, frag)
		}
	}
	var buf bytes.Buffer
	if err := WriteCoverage(&buf, cov); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "modbus unit 2 coil 4") {
		t.Fatalf("table lacks wires:\n%s", buf.String())
	}
}
