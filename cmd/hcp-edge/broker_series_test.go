package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// seriesPrediction is what the WS2 series reads of a preview_response.
type seriesPrediction struct {
	Completed bool `json:"completed"`
	Failure   *struct {
		Message string `json:"message"`
	} `json:"failure"`
	Product struct {
		Material            string  `json:"material"`
		Layers              float64 `json:"layers"`
		PredictedLayerCount int     `json:"predicted_layer_count"`
		PredictedBulk       bool    `json:"predicted_bulk"`
		ExpectedMaterial    string  `json:"expected_material"`
		Precursor           string  `json:"precursor"`
		PrecursorBasis      string  `json:"precursor_basis"`
	} `json:"product"`
}

// TestWS2SeriesOverBroker plans a WS2 series as an outside caller harness
// would (issue 34): for each growth temperature from 750 to 850 °C, a
// preview_request of ws2-sulfurization first, then the task_submit with the
// same inputs, through the real broker and daemon, against a simulator with
// WO3 in its boat. Every preview simulates WS2 and names its precursor
// (WO3); every result names WS2 (raman_analysis.material) and matches the
// recipe; the preview's predicted layer count equals the run's layer count
// at 4 temperatures of 5 at least. Each temperature runs on an agent and a
// rig of its own (a fresh sample, as the preview assumes), all at once:
// they wait on the scaled clock far more than they compute.
func TestWS2SeriesOverBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end through the real binary and broker")
	}
	amqptest.Require(t) // every subtest needs the broker: without it the whole test skips, naming it
	t.Parallel()
	temps := []int{750, 775, 800, 825, 850}
	type outcome struct {
		predicted, measured int
		layers              float64
		done                bool
	}
	res := make([]outcome, len(temps))
	t.Run("temperatures", func(t *testing.T) {
		for i, temp := range temps {
			t.Run(fmt.Sprintf("%dC", temp), func(t *testing.T) {
				t.Parallel()
				pred, measured, layers := ws2SeriesRun(t, temp)
				res[i] = outcome{predicted: pred, measured: measured, layers: layers, done: true}
			})
		}
	})
	if t.Failed() {
		return
	}
	match := 0
	for i, r := range res {
		if !r.done {
			t.Skipf("%d °C did not run (-run picked some temperatures): no count across the series", temps[i])
		}
		if r.predicted == r.measured {
			match++
		}
		t.Logf("%d °C: predicted layer count %d, the run's %d (plant %.3f layers)", temps[i], r.predicted, r.measured, r.layers)
	}
	if match < 4 {
		t.Fatalf("the preview's predicted layer count matched the run's at %d temperatures of 5, want 4 at least", match)
	}
}

// ws2SeriesRun previews and runs ws2-sulfurization at temp °C on an agent
// and a WO3-loaded rig of its own, checks what both name, and returns the
// predicted and the measured layer count and the plant's film.
func ws2SeriesRun(t *testing.T, temp int) (predicted, measured int, layers float64) {
	b := newBrokerEnv(t)
	if err := b.p.SetPrecursor(plant.WO3); err != nil {
		t.Fatal(err)
	}
	b.start()
	b.waitUplink("connected", func(u *uplinkStatus) bool { return u.Connected })
	b.arm()
	inputs := json.RawMessage(fmt.Sprintf(`{"substrate":"SiO2/Si","growth_temperature":%d,"target_layers":1,"growth_duration":"PT30M"}`, temp))

	// The preview first, as a harness planning from it would ask.
	alpha := b.client(nil)
	var p seriesPrediction
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		t0 := time.Now()
		r, err := alpha.Preview(ctx, "ws2-sulfurization", "1.x", inputs)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r.Prediction, &p); err != nil {
			t.Fatal(err)
		}
		t.Logf("preview answered in %v: %+v", time.Since(t0).Round(time.Millisecond), p.Product)
		// A preview the loaded machine cut at the agent's wall-time cap
		// (15 s; five agents preview at once here) is asked once more.
		if !p.Completed && p.Failure != nil && strings.Contains(p.Failure.Message, "wall-time cap") && try == 1 {
			t.Logf("the preview ran into its wall-time cap on the loaded machine: asked again")
			continue
		}
		break
	}
	pr := p.Product
	if !p.Completed || pr.Material != "WS2" || pr.ExpectedMaterial != "WS2" || pr.Precursor != "WO3" ||
		!strings.Contains(pr.PrecursorBasis, "WO3") || pr.PredictedLayerCount < 1 {
		t.Fatalf("%d °C: prediction %+v (failure %+v)", temp, pr, p.Failure)
	}
	if err := alpha.Close(); err != nil { // one consumer of the caller's queue at a time
		t.Fatal(err)
	}

	r := b.startApproved(t, &wire.TaskSubmit{Capability: "ws2-sulfurization", CallerID: b.callerID,
		Intent: fmt.Sprintf("WS2 series at %d °C", temp), Inputs: inputs})
	defer r.c.Close()
	all := r.finish(t, brokerLongGuard)
	checkStream(t, all, r.sid)
	out := completedOutputs(t, all[len(all)-1])
	ra, _ := out["raman_analysis"].(map[string]any)
	mat, _ := ra["material"].(map[string]any)
	film := b.p.Film()
	lc, _ := out["layer_count"].(float64)
	t.Logf("%d °C: preview %.3f layers of %s from %s (count %d); run: material %v, layer count %v, bulk %v; plant %.3f layers of %s",
		temp, pr.Layers, pr.Material, pr.Precursor, pr.PredictedLayerCount, mat, out["layer_count"], ra["bulk"], film.Layers(), film.Material())
	if mat["name"] != "WS2" || mat["expected"] != "WS2" || mat["matches_recipe"] != true || out["material_matches_recipe"] != true {
		t.Fatalf("%d °C: raman_analysis.material %v, material_matches_recipe %v", temp, mat, out["material_matches_recipe"])
	}
	for _, m := range all {
		if ev, err := m.Event(); err == nil && ev.EventType == "warning" && strings.Contains(string(ev.Data), "material_mismatch") {
			t.Fatalf("%d °C: a material_mismatch warning of a WS2 run: %s", temp, ev.Data)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, b.logs)
	}
	return pr.PredictedLayerCount, int(lc), film.Layers()
}
