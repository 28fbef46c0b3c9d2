package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecipeCheckZones: `recipe check` places a zone and a gas line the
// rig lacks at their FILE:LINE, and takes the rig's own zone by name.
func TestRecipeCheckZones(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	const text = `name: zoned
version: 1.0.0
description: names its zone
phases:
  - preflight: {}
  - pump_down: {base_pressure_pa: 5, timeout: PT30M}
  - purge: {gas: Ar, flow_sccm: 100, duration: PT5M}
  - ramp: {zone: ZONE, temperature_c: 400, rate_c_per_min: 10}
  - hold:
      zone: ZONE
      duration: PT10M
      flows: {GAS: 20}
  - cool: {zone: ZONE, below_c: 60, timeout: PT2H}
  - vent: {pressure_pa: 90000, timeout: PT15M}
cleanup: {purge: PT5M}
`
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	for f, r := range map[string]*strings.Replacer{
		good: strings.NewReplacer("ZONE", "furnace", "GAS", "Ar"),
		bad:  strings.NewReplacer("ZONE", "growth", "GAS", "N2"),
	} {
		if err := os.WriteFile(f, []byte(r.Replace(text)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"recipe", "check", good}, &out, &errb); code != exitOK || !strings.Contains(out.String(), good+": valid (zoned 1.0.0") {
		t.Fatalf("zone furnace: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"recipe", "check", bad}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		bad + ":8: phases[3].ramp.zone: this rig has no zone growth (zones: furnace)",
		bad + ":10: phases[4].hold.zone: this rig has no zone growth",
		bad + ":12: phases[4].hold.flows.N2: this rig has no N2 gas line",
		bad + ":13: phases[5].cool.zone: this rig has no zone growth",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}
