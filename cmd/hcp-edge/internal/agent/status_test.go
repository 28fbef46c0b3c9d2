package agent

import (
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/device"
	"hcp-edge/envelope"
)

// configEnvelope is the envelope of a shipped configuration, compiled
// against the rig it describes.
func configEnvelope(t *testing.T, file string) *envelope.Envelope {
	t.Helper()
	t.Setenv("HCP_RIG_SIM_DIR", t.TempDir())
	f, err := rigconfig.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	env, err := f.CompileEnvelope()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestStatusZones: the status shows every heated zone's controller under
// the zone's name (the two-zone rig's sulfur and growth, each its own PV,
// setpoint, output and heater), and a rig of one its zone as furnace, as
// before.
func TestStatusZones(t *testing.T) {
	now := time.Now()
	tc := func(pv, sp, out float64, on bool) device.FurnaceStatus {
		return device.FurnaceStatus{ProcessValue: device.Celsius(pv), Setpoint: device.Celsius(sp), OutputPower: device.Percent(out), HeaterEnabled: on, At: now}
	}
	t.Run("two zones", func(t *testing.T) {
		env := configEnvelope(t, "../../../../configs/mos2-two-zone.yaml")
		st := statusOf(envelope.MonitorStatus{Readings: envelope.Readings{At: now, Furnace: tc(180, 200, 35, true),
			Zones: map[string]device.FurnaceStatus{"growth": tc(749.96, 750, 62.5, true)}}}, env)
		for zone, want := range map[string]string{"sulfur": "PV 180.0 °C, setpoint 200.0 °C, output 35.0 %, heater on",
			"growth": "PV 750.0 °C, setpoint 750.0 °C, output 62.5 %, heater on"} {
			if !strings.HasPrefix(st.Readings[zone], want) {
				t.Errorf("reading %s = %q, want %q…", zone, st.Readings[zone], want)
			}
		}
		if _, ok := st.Readings["furnace"]; ok {
			t.Errorf("a furnace reading on the two-zone rig: %v", st.Readings)
		}
		for k, want := range map[string]any{"sulfur.pv_c": 180.0, "sulfur.setpoint_c": 200.0, "sulfur.output_pct": 35.0, "sulfur.heater_enabled": true,
			"growth.pv_c": 750.0, "growth.setpoint_c": 750.0, "growth.output_pct": 62.5, "growth.heater_enabled": true} {
			if st.Values[k] != want {
				t.Errorf("value %s = %v, want %v", k, st.Values[k], want)
			}
		}
	})
	t.Run("one zone", func(t *testing.T) {
		env := configEnvelope(t, "../../../../configs/sim.yaml")
		st := statusOf(envelope.MonitorStatus{Readings: envelope.Readings{At: now, Furnace: tc(25, 0, 0, false)}}, env)
		if !strings.HasPrefix(st.Readings["furnace"], "PV 25.0 °C, setpoint 0.0 °C, output 0.0 %, heater off") || st.Values["furnace.pv_c"] != 25.0 {
			t.Errorf("readings %v, values %v", st.Readings, st.Values)
		}
	})
}
