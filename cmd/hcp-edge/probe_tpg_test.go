package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"hcp-edge/firmware-sim/rig"
	"hcp-edge/firmware-sim/serialsim"
)

// startRigGauge is startRig with the gauge controller variant v.
func startRigGauge(t *testing.T, v serialsim.GaugeVariant) (*rig.Rig, string) {
	t.Helper()
	return startRigWith(t, serialsim.Opts{Gauge: v})
}

type probeSettings struct {
	Settings []struct {
		Instrument, Setting, Found, Expected string
		OK                                   bool
	} `json:"settings"`
	Mismatched int `json:"mismatched_settings"`
}

// TestProbeRefusesContinuousOutput: a gauge controller left in continuous
// output mode (rig-sim --gauge-continuous) fails the probe, which names the
// instrument and the setting.
func TestProbeRefusesContinuousOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("HIL: a whole simulated rig")
	}
	_, cfg := startRigGauge(t, serialsim.GaugeVariant{Continuous: true, ContinuousMode: 1})
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"probe", "--config", cfg, "--json"}, &out, &errOut)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d; stdout %s", code, exitFailure, out.String())
	}
	var res probeSettings
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range res.Settings {
		if s.Instrument == "gauge" && s.Setting == "continuous output (COM)" && !s.OK {
			found = true
		}
	}
	if !found || res.Mismatched < 1 {
		t.Fatalf("no continuous-output mismatch for the gauge: %s", out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"probe", "--config", cfg}, &out, &errOut); code != exitFailure ||
		!strings.Contains(out.String(), "continuous output (COM)") {
		t.Fatalf("exit %d; the table does not name the setting:\n%s", code, out.String())
	}
}

// TestProbeTPG262: the sim configuration's gauge profile (one PKR, on
// gauge 1) passes on a TPG 262 as on a TPG 261.
func TestProbeTPG262(t *testing.T) {
	if testing.Short() {
		t.Skip("HIL: a whole simulated rig")
	}
	_, cfg := startRigGauge(t, serialsim.GaugeVariant{Model: serialsim.TPG262})
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"probe", "--config", cfg, "--json"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d, stderr %s, stdout %s", code, errOut.String(), out.String())
	}
	var res probeSettings
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Settings {
		if s.Instrument == "gauge" && s.Setting == "gauge1 gauge type (TID)" && s.Found == "PKR" && s.OK {
			return
		}
	}
	t.Fatalf("no gauge type finding: %s", out.String())
}

// TestStartRefusesContinuousOutput: `hcp-edge run` refuses to start on a
// gauge controller in continuous output mode, naming the instrument and the
// setting, before anything is written to the rig.
func TestStartRefusesContinuousOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("HIL: a whole simulated rig")
	}
	r, cfg := startRigGauge(t, serialsim.GaugeVariant{Continuous: true, ContinuousMode: 1})
	t.Setenv("HCP_STATE_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"run", "--config", cfg}, &out, &errOut)
	if code == exitOK || ctx.Err() != nil {
		t.Fatalf("exit %d (ctx %v); stderr %s", code, ctx.Err(), errOut.String())
	}
	if s := errOut.String(); !strings.Contains(s, "refusing to start") || !strings.Contains(s, "gauge: continuous output (COM) is on") {
		t.Fatalf("the refusal does not name the gauge's setting:\n%s", s)
	}
	if w := r.Plant().Writes(0); len(w) != 0 {
		t.Fatalf("the refused start wrote to the rig: %+v", w)
	}
}
