package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"hcp-edge/cmd/hcp-edge/internal/agent"
	"hcp-edge/cmd/hcp-edge/internal/dashboard"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
)

// layoutSource is a dashboard.Source serving one snapshot: a rig's layout
// (agent.DashboardLayout of a shipped configuration) and readings.
type layoutSource struct{ snap map[string]any }

func (s layoutSource) Snapshot(context.Context) (any, error) { return s.snap, nil }

func (s layoutSource) Plot(context.Context, string, string, string) ([]byte, error) {
	return nil, dashboard.ErrNoPlot
}

// TestDashboardLayoutInBrowser: headless Chromium renders the graphene
// rig's dashboard from its configuration's layout: the gas lines Ar, H2
// and CH4 with their hazards and valves, the outputs by the layout's names,
// the inputs with the healthy levels the configuration asks for; nothing
// of the MoS2 rig (H2S, the scrubber, exhaust_ok). Screenshot in
// build/screenshots/dashboard-graphene-layout.png.
func TestDashboardLayoutInBrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	ctx := browser(t)
	fh, err := os.Open(grapheneConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := rigconfig.Parse(fh)
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string]any{"at": "2025-01-15T10:00:00Z", "layout": agent.DashboardLayout(f),
		"status": map[string]any{"latched": false, "relay": "energised", "activity": "in process (CH4, H2, heater)",
			"values": map[string]any{"flow.Ar.sccm": 0.1, "flow.H2.sccm": 20.02, "flow.H2.setpoint_sccm": 20, "flow.CH4.sccm": 9.98,
				"flow.CH4.setpoint_sccm": 10, "switch.pump": true, "switch.gate_valve": true, "switch.h2_valve": true,
				"switch.ch4_valve": true, "switch.ar_valve": false, "switch.vent_valve": false,
				"input.door_closed": true, "input.pump_running": true, "input.estop_pressed": false, "input.leak_detected": false,
				"input.relay_fb": true}}}
	s, err := dashboard.Serve("127.0.0.1:0", layoutSource{snap: snap}, dashboard.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	nctx, ncancel := context.WithTimeout(ctx, hangGuard)
	defer ncancel()
	if err := chromedp.Do(nctx, chromedp.Navigate("http://"+s.Addr().String()+"/")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	waitJS(t, ctx, "the gas lines of the layout, in its order",
		`Array.from(document.querySelectorAll("#gases td[data-gas]")).map(function(e){return e.dataset.gas}).join(",") === "Ar,H2,CH4"`)
	waitJS(t, ctx, "CH4 flammable, flowing 9.98 sccm, its valve ch4_valve on",
		`(function(){var r=document.querySelector('#gases td[data-gas="CH4"]').parentNode.innerText;`+
			`return r.includes("flammable") && r.includes("9.98 sccm") && r.includes("ch4_valve: on") && r.includes("mfc-ch4");})()`)
	waitJS(t, ctx, "the outputs by the layout's names", `!!document.querySelector('#outputs td[data-output="ch4_valve"]') && `+
		`document.querySelector('#outputs td[data-output="ch4_valve"]').parentNode.innerText.includes("CH4 line")`)
	waitJS(t, ctx, "the door input healthy", `!!document.querySelector('[data-input="door_closed"][data-value="true"].state-ok')`)
	waitJS(t, ctx, "pump_running shown without a healthy level",
		`document.querySelector('[data-input="pump_running"]').className === ""`)
	for _, absent := range []string{`[data-gas="H2S"]`, `[data-output="scrubber"]`, `[data-output="h2s_valve"]`, `[data-input="exhaust_ok"]`} {
		if n := jsString(ctx, t, `String(document.querySelectorAll('`+absent+`').length)`); n != "0" {
			t.Errorf("%s on the graphene rig's dashboard", absent)
		}
	}
	screenshot(t, ctx, filepath.Join(screenshotDir(t), "dashboard-graphene-layout.png"))
}
