package envelope_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
)

const exampleConfig = `
parameters:
  furnace.setpoint:    {max: 900, unit: celsius}
  furnace.ramp_rate:   {min: 1, max: 20, unit: celsius_per_minute}
  furnace.temperature: {max: 950, unit: celsius}
  chamber.pressure:    {max: 900, unit: mbar}
  flow.Ar:             {max: 0.5, unit: slm}
interlocks:
  heater: {max_pressure: 1 mbar, inert_gas: Ar, min_inert_flow: 50 sccm}
emergency_procedures:
  over_temperature: immediate_shutdown
  gas_leak_detected: close_all_valves_and_alert
  over_pressure: close_all_valves_and_alert
  comms_loss: safe_state
  estop: safe_state
inputs: {estop: estop_pressed, leak: leak_detected}
unrestricted:
  switch.ar_valve: argon is inert
max_reading_age: 2s
comms_timeout: 3s
flow_on_threshold: 1 sccm
`

func Example() {
	spec := envelope.RigSpec{
		Furnace: envelope.FurnaceSpec{SetpointMin: device.Celsius(0), SetpointMax: device.Celsius(1200),
			RampMax: 100, ProcessValueMax: device.Celsius(1300)},
		Gauge:    envelope.GaugeSpec{Min: 1e-9 * device.Millibar, Max: 1000 * device.Millibar},
		Gases:    []envelope.GasSpec{{Gas: "Ar", FullScale: device.SCCM(500), Valve: "ar_valve"}},
		Switches: []envelope.SwitchSpec{{Name: "ar_valve"}},
		Inputs:   []string{"estop_pressed", "leak_detected"},
	}
	cfg, err := envelope.LoadYAML(strings.NewReader(exampleConfig))
	if err != nil {
		panic(err)
	}
	env, err := envelope.Compile(cfg, spec)
	if err != nil {
		panic(err)
	}

	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	r := envelope.Readings{
		At:       now,
		Furnace:  device.FurnaceStatus{ProcessValue: device.Celsius(25), Setpoint: device.Celsius(25), At: now},
		Pressure: device.PressureReading{Pressure: device.Atmosphere, Status: device.GaugeOK, At: now},
		Flows:    map[string]device.FlowStatus{"Ar": {Flow: device.SCCM(20), At: now}},
	}
	for _, a := range []envelope.Action{
		envelope.SetpointAction(device.Celsius(900)),
		envelope.SetpointAction(device.Celsius(901)),
		envelope.HeaterAction(true),
		envelope.HeaterAction(false),
	} {
		err := env.Check(a, r, nil)
		var v *envelope.Violation
		if errors.As(err, &v) {
			fmt.Printf("%v: refused by %s (limit %g %s, value %g %s)\n", a, v.Rule, v.Limit, v.Unit, v.Value, v.Unit)
		} else {
			fmt.Printf("%v: allowed\n", a)
		}
	}
	// Output:
	// furnace.setpoint = 900.0 °C: allowed
	// furnace.setpoint = 901.0 °C: refused by max (limit 900 celsius, value 901 celsius)
	// furnace.heater = on: refused by heater_requires_vacuum_or_inert_flow (limit 1 mbar, value 1013.25 mbar)
	// furnace.heater = off: allowed
}
