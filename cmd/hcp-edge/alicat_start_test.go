package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/firmware-sim/rig"
	"hcp-edge/firmware-sim/serialsim"
)

// TestStartRefusesSavedSetpointAlicat: the agent refuses to start, before
// its first write, on an MFC in saved setpoint mode (every setpoint a
// non-volatile write), naming the instrument and the setting; nothing
// reached any MFC.
func TestStartRefusesSavedSetpointAlicat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent binary against the simulated rig")
	}
	r, err := rig.Start(context.Background(), rig.Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: 300,
		StartSerial: rig.SerialInstrumentsWith(serialsim.Opts{MFCVariants: map[string]serialsim.MFCVariant{"h2": serialsim.MFCSavedSetpoint}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	dir := t.TempDir()
	cfg := strings.Replace(string(configs.SimYAML), "sim_dir: /tmp/hcp-rig-sim", "sim_dir: "+r.Dir(), 1)
	cfg = strings.Replace(cfg, "address: 127.0.0.1:5020", "address: "+r.ModbusAddr().String(), 1)
	path := filepath.Join(dir, "hcp-edge.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", path)
	cmd.Env = append(os.Environ(), "HCP_STATE_DIR="+dir, "HCP_CONTROL_SOCKET="+filepath.Join(dir, "control.sock"), "HCP_RIG_SIM_DIR="+r.Dir())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the agent started (or hung) on a saved-setpoint MFC: %v\n%s", err, out)
	}
	log := string(out)
	if !strings.Contains(log, "mfc-h2: setpoint saving (LSS)") || !strings.Contains(log, "refusing to start") {
		t.Fatalf("refusal does not name mfc-h2's setpoint saving:\n%s", log)
	}
	t.Logf("refused after %v", time.Since(start).Round(time.Millisecond))
	for _, w := range r.Plant().Writes(0) {
		if strings.HasPrefix(w.Device, "mfc-") {
			t.Errorf("written before the refusal: %+v", w)
		}
	}
}
