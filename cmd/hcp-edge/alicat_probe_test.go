package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"hcp-edge/firmware-sim/rig"
	"hcp-edge/firmware-sim/serialsim"
)

// startRigMFCVariants is startRig with the MFCs in the Alicat variants
// given as rig-sim's --mfc-variant takes them.
func startRigMFCVariants(t *testing.T, variants string) (*rig.Rig, string) {
	t.Helper()
	mv, err := serialsim.ParseMFCVariants(variants)
	if err != nil {
		t.Fatal(err)
	}
	return startRigWith(t, serialsim.Opts{MFCVariants: mv})
}

// TestProbeRefusesAnAnalogSetpointSource: an Alicat whose setpoint source is
// the analog input (it would ignore every S) fails the probe, the setting
// named, and nothing is written to it.
func TestProbeRefusesAnAnalogSetpointSource(t *testing.T) {
	r, cfg := startRigMFCVariants(t, "h2s=analog-setpoint")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"probe", "--config", cfg}, &out, &errOut)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d; stdout %s", code, exitFailure, out.String())
	}
	var row string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "mfc-h2s") && strings.Contains(l, "setpoint source") {
			row = l
		}
	}
	if !strings.Contains(row, "MISMATCH") || !strings.Contains(row, "analog") {
		t.Fatalf("no mismatch row for mfc-h2s's setpoint source:\n%s", out.String())
	}
	for _, w := range r.Plant().Writes(0) {
		if strings.HasPrefix(w.Device, "mfc-") {
			t.Errorf("probe wrote to an MFC: %+v", w)
		}
	}
}

// TestProbeReadsRealAlicatFirmware: controllers on 5v12 (unsigned), 8v17
// (SLPM) and 10v20 (padded gas, totalizer) all pass the probe with the
// simulator's profile: their units read from them, their frames parsed.
func TestProbeReadsRealAlicatFirmware(t *testing.T) {
	_, cfg := startRigMFCVariants(t, "ar=slpm,h2=pre6v,h2s=totalizer")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"probe", "--config", cfg}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d; stderr %s; stdout %s", code, errOut.String(), out.String())
	}
	if !strings.Contains(out.String(), "SLPM") || !strings.Contains(out.String(), "5v12.0-R22") {
		t.Fatalf("findings do not show the SLPM unit and the 5v12 firmware:\n%s", out.String())
	}
}
