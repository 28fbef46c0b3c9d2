package rigconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFurnacePollCost: a furnace on a serial (RTU) line whose monitor
// poll, character by character at the line's speed, is longer than the
// configured furnace period is refused at monitor.furnace_every, with the
// reads and the least period to use; a period that fits, or the same
// controller on TCP, passes. The Eurotherm 3200's status takes five reads
// (its map refuses reads across gaps); the simulator's controller, two.
func TestFurnacePollCost(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "configs", "sim-eurotherm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := string(b)
	onRTU := func(s string) string {
		return strings.Replace(s, "furnace: {bus: main,", "furnace: {bus: rs485,", 1)
	}
	every := func(s, d string) string {
		return strings.Replace(s, "furnace_every: 50ms", "furnace_every: "+d, 1)
	}
	if !strings.Contains(base, "furnace: {bus: main,") || !strings.Contains(base, "furnace_every: 50ms") {
		t.Fatal("configs/sim-eurotherm.yaml: the furnace line or monitor.furnace_every changed; update this test")
	}
	for _, c := range []struct {
		name, cfg, want string
	}{
		{"eurotherm on TCP at 50ms", base, ""},
		{"eurotherm on RTU at 50ms", onRTU(base), "monitor.furnace_every: 50ms is shorter than one poll of the furnace on bus rs485: 5 reads (profile eurotherm-3200)"},
		{"eurotherm on RTU at 100ms", every(onRTU(base), "100ms"), ""},
		{"sim controller on RTU at 50ms", strings.Replace(onRTU(base), "profile: eurotherm-3200", "profile: hcp-sim-tc", 1), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.cfg)) // Parse validates
			switch {
			case c.want == "" && err != nil && strings.Contains(err.Error(), "furnace_every"):
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}
