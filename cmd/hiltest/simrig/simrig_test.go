package simrig

import (
	"strings"
	"testing"

	"hcp-edge/device/rig"
)

func TestSimRig(t *testing.T) {
	l := Layout()
	if len(l.Zones) != 1 || len(l.Lines) == 0 || l.Role(rig.RoleScrubber) == "" {
		t.Fatalf("layout %+v", l)
	}
	s := Spec()
	if len(s.Gases) != len(l.Lines) || s.Furnace.SetpointMax <= s.Furnace.SetpointMin || s.Spectrometer == nil {
		t.Fatalf("spec %+v", s)
	}
	for _, g := range s.Gases {
		if s.Hazard(g.Gas) != l.HazardOf()[g.Gas] || !g.Hazard.Valid() {
			t.Errorf("%s: hazard %q", g.Gas, g.Hazard)
		}
	}
}

// TestBuildWithoutRigSim: with no rig-sim in simDir, Build fails naming
// the instruments it could not open, at simDir's paths, and leaves nothing
// open.
func TestBuildWithoutRigSim(t *testing.T) {
	dir := t.TempDir()
	in, err := Build(dir)
	if err == nil {
		_ = in.Close()
		t.Fatal("built the simulated rig without rig-sim")
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("the error does not name %s's paths: %v", dir, err)
	}
}
