package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The check itself is tested in session/recipe; these tests cover the
// command: its output, exit codes and flags.

// TestRecipeCheckShipped: every shipped recipe passes on the rig it is made
// for (the embedded configs/sim.yaml, or the graphene rig's
// configs/graphene.yaml for graphene-cu, configs/mos2-two-zone.yaml for
// mos2-solid), and the graphene and two-zone recipes are refused on the MoS2
// rig with the reason at FILE:LINE.
func TestRecipeCheckShipped(t *testing.T) {
	cleanEnv(t)
	all, _ := filepath.Glob("../../configs/recipes/*.yaml")
	const graphene = "../../configs/recipes/graphene-cu.yaml"
	const solid = "../../configs/recipes/mos2-solid.yaml"
	files := slices.DeleteFunc(slices.Clone(all), func(f string) bool { return f == graphene || f == solid })
	var out, errb bytes.Buffer
	if code := run(t.Context(), append([]string{"recipe", "check"}, files...), &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if n := strings.Count(out.String(), ": valid ("); n != len(files) || len(files) < 3 || len(all) != len(files)+2 {
		t.Errorf("%d valid of %d:\n%s", n, len(files), out.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"recipe", "check", "--config", "../../configs/graphene.yaml", graphene}, &out, &errb); code != exitOK ||
		!strings.Contains(out.String(), "graphene-cu.yaml: valid (graphene-cu 1.0.0") {
		t.Fatalf("graphene-cu on the graphene rig: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"recipe", "check", "--config", "../../configs/mos2-two-zone.yaml", solid}, &out, &errb); code != exitOK ||
		!strings.Contains(out.String(), "mos2-solid.yaml: valid (mos2-solid 1.0.0") {
		t.Fatalf("mos2-solid on the two-zone rig: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"recipe", "check", solid}, &out, &errb); code == exitOK ||
		!strings.Contains(out.String()+errb.String(), "mos2-solid.yaml:92: phases[4].ramp.zone: this rig has no zone growth (zones: furnace)") {
		t.Fatalf("mos2-solid on the MoS2 rig: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	code := run(t.Context(), []string{"recipe", "check", graphene}, &out, &errb)
	if code == exitOK || !strings.Contains(out.String()+errb.String(), "graphene-cu.yaml:121: phases[6].hold.flows.CH4: this rig has no CH4 gas line") {
		t.Fatalf("graphene-cu on the MoS2 rig: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

func TestRecipeCheckBroken(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "hot.yaml")
	if err := os.WriteFile(bad, []byte(`name: hot
version: 1.0.0
description: vents hot
phases:
  - preflight: {}
  - pump_down: {base_pressure_pa: 5, timeout: PT30M}
  - purge: {gas: Ar, flow_sccm: 100, duration: PT5M}
  - ramp: {temperature_c: 1200, rate_c_per_min: 10}
  - vent: {pressure_pa: 90000, timeout: PT15M}
cleanup: {purge: PT5M}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"recipe", "check", bad}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		bad + ":8: phases[3].ramp.temperature_c: furnace.setpoint = 1200.0 °C is refused by the envelope (max)",
		bad + ":9: phases[4].vent: venting a hot chamber",
		bad + ": 2 problem(s)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(t.Context(), []string{"recipe", "check", "--json", bad}, &out, &errb); code != 1 {
		t.Fatalf("--json exit %d", code)
	}
	var res []struct {
		Valid    bool
		Problems []struct{ Line int }
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res) != 1 || res[0].Valid || len(res[0].Problems) != 2 {
		t.Errorf("--json: %v %s", err, out.String())
	}
	if code := run(t.Context(), []string{"recipe", "check"}, &out, &errb); code != exitUsage {
		t.Errorf("no FILE: exit %d, want %d", code, exitUsage)
	}
	if code := run(t.Context(), []string{"recipe", "check", "--config", filepath.Join(dir, "none.yaml"), bad}, &out, &errb); code != exitUsage {
		t.Errorf("missing config: exit %d, want %d", code, exitUsage)
	}
}
