package configcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/configs"
)

// fahrenheitProfile is the simulator's controller profile as a lab writes it
// for a unit that works in °F: the process value −328..2372 °F (−200..1300
// °C), the setpoint 32..2192 °F (0..1200 °C).
func fahrenheitProfile(t *testing.T) string {
	t.Helper()
	prof, err := os.ReadFile(filepath.Join(configsDir, "profiles", "hcp-sim-tc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(prof)
	for _, r := range [][2]string{
		{"unit: celsius, range: [-200, 1300]", "unit: fahrenheit, range: [-328, 2372]"},
		{"unit: celsius, range: [0, 1200]", "unit: fahrenheit, range: [32, 2192]"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("fixture: %q not in hcp-sim-tc.yaml", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return s
}

// checkWithFahrenheit checks configs/sim.yaml with its furnace on the
// fahrenheit profile (lab-tc-f in profiles_dir), edited by edit.
func checkWithFahrenheit(t *testing.T, edit func(string) string) (Result, string) {
	t.Helper()
	cleanEnv(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lab-tc-f.yaml"), []byte(fahrenheitProfile(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(configs.SimYAML), "profile: hcp-sim-tc}", "profile: lab-tc-f}", 1)
	cfg = strings.Replace(cfg, "  outputs:\n", "  profiles_dir: "+dir+"\n  outputs:\n", 1)
	cfg = edit(cfg)
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Check(path, filepath.Join(configsDir, "capabilities"))
	return r, report(r)
}

// TestFahrenheitProfileLimitsInOneUnit: a controller profile in °F is
// compared with the envelope's limits in °C. The shipped limits (setpoint
// 0..1000 °C, trip at 1050 °C) fit its range; a trip at 1500 °C does not —
// its range is −200..1300 °C, although 1500 is below the 2372 the profile
// writes in °F — and neither does a setpoint of 1250 °C (above 2192 °F).
func TestFahrenheitProfileLimitsInOneUnit(t *testing.T) {
	if r, out := checkWithFahrenheit(t, func(s string) string { return s }); !r.Valid {
		t.Fatalf("the shipped limits on a °F controller refused:\n%s", out)
	}
	for _, tc := range []struct{ from, to string }{
		{"furnace.temperature:  {max: 1050, unit: celsius}", "furnace.temperature:  {max: 1500, unit: celsius}"},
		{"furnace.setpoint:     {min: 0,   max: 1000, unit: celsius", "furnace.setpoint:     {min: 0,   max: 1250, unit: celsius"},
	} {
		r, out := checkWithFahrenheit(t, func(s string) string {
			if !strings.Contains(s, tc.from) {
				t.Fatalf("fixture: %q not in sim.yaml", tc.from)
			}
			return strings.Replace(s, tc.from, tc.to, 1)
		})
		if r.Valid {
			t.Errorf("%s accepted on a controller whose range is −200..1300 °C (setpoint 0..1200 °C):\n%s", tc.to, out)
		}
		t.Log(out)
	}
}
