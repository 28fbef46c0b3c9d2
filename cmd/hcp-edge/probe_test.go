package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/configs"
	"hcp-edge/firmware-sim/rig"
	"hcp-edge/firmware-sim/serialsim"
)

// startRig runs the whole simulated rig in-process and writes a configuration
// file pointing at it (sim.yaml with the rig's actual Modbus port).
func startRig(t *testing.T) (*rig.Rig, string) {
	t.Helper()
	return startRigWith(t, serialsim.Opts{})
}

// startRigWith is startRig with the serial instruments in the variants of o
// (the gauge controller's model and output mode, the MFCs' firmware).
func startRigWith(t *testing.T, o serialsim.Opts) (*rig.Rig, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := rig.Start(context.Background(), rig.Opts{Dir: dir, ModbusAddr: "127.0.0.1:0", TimeScale: 300, StartSerial: rig.SerialInstrumentsWith(o)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	cfg := strings.Replace(string(configs.SimYAML), "127.0.0.1:5020", r.ModbusAddr().String(), 1)
	cfg = strings.Replace(cfg, "sim_dir: /tmp/hcp-rig-sim", "sim_dir: "+dir, 1)
	path := filepath.Join(dir, "hcp-edge.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HCP_RIG_SIM_DIR", "")
	return r, path
}

func TestProbeReadsEveryInstrument(t *testing.T) {
	r, cfg := startRig(t)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"probe", "--config", cfg, "--json", "--spectrum", "500"}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s, stdout %s", code, errOut.String(), out.String())
	}
	var res struct {
		Failed      int `json:"failed"`
		Instruments []struct {
			Instrument string `json:"instrument"`
			OK         bool   `json:"ok"`
		} `json:"instruments"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, row := range res.Instruments {
		names[row.Instrument] = row.OK
	}
	for _, want := range []string{"furnace", "dio", "mfc-ar", "mfc-h2", "mfc-h2s", "gauge", "raman", "gpio"} {
		if ok, present := names[want]; !present || !ok {
			t.Errorf("instrument %s: present %v ok %v", want, present, ok)
		}
	}
	// Probe is read-only: nothing but the requested acquisition may reach
	// the firmware (the gauge's unit is read, never set).
	for _, w := range r.Plant().Writes(0) {
		if w.Device != "raman" {
			t.Errorf("probe wrote to the rig: %+v", w)
		}
	}
}

func TestProbeReportsAFaultAndExitsOne(t *testing.T) {
	r, cfg := startRig(t)
	if err := r.Plant().Inject("tc-open", ""); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"probe", "--config", cfg}, &out, &errOut)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d; stdout %s", code, exitFailure, out.String())
	}
	if !strings.Contains(out.String(), "furnace") || !strings.Contains(out.String(), "FAIL") || !strings.Contains(out.String(), "sensor") {
		t.Fatalf("table does not show the furnace sensor fault:\n%s", out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"probe", "--no-such-flag"}, {"probe", "--config", "/nonexistent.yaml"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
