package export

import (
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
)

// TestInstrumentsOf: the record lists every instrument of the rig: on the
// two-zone rig each zone's controller under its name (sulfur_tc,
// growth_tc, with its zone and profile), the I/O module, the gas line, the
// gauge controller with both heads; on a rig of one its furnace and dio
// as before.
func TestInstrumentsOf(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string // id | kind | a part of the description
	}{
		{"mos2-two-zone.yaml", []string{
			"sulfur_tc | temperature controller of the heated zone sulfur | unit 1 (bus rs485), instrument profile eurotherm-3200",
			"growth_tc | temperature controller of the heated zone growth | unit 2 (bus rs485), instrument profile eurotherm-3200",
			"dio | digital I/O module (valves, pump, relay, interlock inputs) | unit 2 (bus main)",
			"mfc-ar | mass-flow controller, Ar, full scale 500 sccm | unit A",
			"tpg | vacuum gauge controller, heads: chamber (process), foreline (roughing) | 9600 8N1",
			"raman | Raman spectrometer | 115200 8N1"}},
		{"sim.yaml", []string{"furnace | furnace temperature controller | unit 1 (bus main)",
			"dio | digital I/O module (valves, pump, relay, interlock inputs) | unit 2 (bus main)", "gauge | vacuum gauge | serial"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Setenv("HCP_RIG_SIM_DIR", t.TempDir())
			f, err := rigconfig.Load("../../../../configs/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got := InstrumentsOf(f.Rig)
			for _, w := range tt.want {
				id, rest, _ := strings.Cut(w, " | ")
				kind, desc, _ := strings.Cut(rest, " | ")
				found := false
				for _, in := range got {
					found = found || in.ID == id && in.Kind == kind && strings.Contains(in.Description, desc)
				}
				if !found {
					t.Errorf("no instrument %q in %+v", w, got)
				}
			}
		})
	}
}
