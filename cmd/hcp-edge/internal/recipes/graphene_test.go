package recipes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/session/audit"
	"hcp-edge/session/capability"
	"hcp-edge/session/gate"
	"hcp-edge/session/recipe"
	"hcp-edge/transport/wire"
)

// TestGrapheneBrokenRecipes: every recipe of testdata/graphene breaks one of
// the graphene rig's safety rules (configs/graphene.yaml as shipped) and is
// refused by the recipe check at FILE:LINE, with the rule and the reason;
// a file that breaks others besides names them (also). Nothing of a
// refused recipe is offered, so nothing of it is ever driven.
func TestGrapheneBrokenRecipes(t *testing.T) {
	env := envelopeOf(t, "../../../../configs/graphene.yaml")
	cases := []struct {
		file, rule string
		line       int
		key, msg   string
		also       []string
	}{
		{"growth-above-copper.yaml", "envelope.max", 10, "phases[3].ramp.temperature_c",
			"furnace.setpoint = 1085.0 °C is refused by the envelope (max): 1085 celsius, limit 1050 celsius: above the hard maximum (at the extreme growth_temperature = 1085 celsius)", nil},
		{"ch4-at-atmosphere.yaml", "envelope.gas_requires_low_pressure", 8, "phases[3].hold.flows.CH4",
			"(gas_requires_low_pressure): 1000 mbar, limit 10 mbar: CH4 needs the chamber at or below the limit", nil},
		{"ch4-heater-cold.yaml", "envelope.gas_requires_temperature", 8, "phases[3].hold.flows.CH4",
			"25 celsius, limit 900 celsius: CH4 needs the furnace at or above the limit: the heater is off", nil},
		{"ch4-within-settle-band.yaml", "envelope.gas_requires_temperature", 9, "phases[4].hold.flows.CH4",
			"897 celsius, limit 900 celsius: CH4 needs the furnace at or above the limit: its temperature is below", nil},
		{"ch4-open-ramping-down.yaml", recipe.RuleGasCold, 10, "phases[5].ramp.temperature_c",
			"a ramp to 500.0 °C with CH4 (opened by grow at line 9) open: CH4 needs the furnace at or above 900 celsius",
			[]string{recipe.RuleGasOpen, recipe.RuleNotPurged}},
		{"vent-ch4-not-purged.yaml", recipe.RuleNotPurged, 11, "phases[6].vent", "CH4, H2 used and not purged out since", nil},
		{"vent-h2-not-purged.yaml", recipe.RuleNotPurged, 11, "phases[6].vent", "H2 used and not purged out since", nil},
		{"ch4-step-after-ramp.yaml", "envelope.max_rate_of_change", 9, "phases[4].hold.flows.CH4",
			"25 sccm/min, limit 10 sccm/min: a change of 50 sccm in 2 min since the last accepted value", nil},
		{"ch4-stepped-twice.yaml", "envelope.max_rate_of_change", 11, "phases[6].hold.flows.CH4",
			"45 sccm/min, limit 10 sccm/min: a change of 45 sccm in 1 min", nil},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			name := filepath.Join("testdata", "graphene", c.file)
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			seen[c.file] = true
			ok, probs := recipe.CheckAll(env, recipe.Source{Name: name, Data: data})
			if len(ok) != 0 || len(probs) == 0 {
				t.Fatalf("accepted: %v", probs)
			}
			found := false
			for _, p := range probs {
				if p.Rule != c.rule && !slices.Contains(c.also, p.Rule) {
					t.Errorf("also broken for another rule: %s [%s]", p, p.Rule)
				}
				found = found || (p.File == name && p.Line == c.line && p.Key == c.key && p.Rule == c.rule && strings.Contains(p.Message, c.msg))
			}
			if !found {
				t.Errorf("want %s:%d: %s: …%s… [%s]; got:\n%v", name, c.line, c.key, c.msg, c.rule, probs)
			}
		})
	}
	files, _ := filepath.Glob("testdata/graphene/*.yaml")
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no case", f)
		}
	}
}

type discardRecorder struct{}

func (discardRecorder) Append(_ context.Context, e audit.Entry) (audit.Entry, error) { return e, nil }

// TestGrapheneTaskOnMoS2Rig: on the MoS2 rig (configs/sim.yaml) the
// graphene-cu recipe is not offered, so a graphene task reaches no
// executor: the gate rejects it as an unknown capability at /capability,
// even for a caller whose ACL names graphene-cu.
func TestGrapheneTaskOnMoS2Rig(t *testing.T) {
	b, err := os.ReadFile("../../../../configs/sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := rigconfig.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(simEnvelope(t), "", Known{})
	if err != nil {
		t.Fatal(err)
	}
	caps, err := s.Capabilities(nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := capability.NewRegistry(caps...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Gate
	acl := cfg.Callers["harness-alpha-001"]
	acl.Capabilities = append(slices.Clone(acl.Capabilities), "graphene-cu")
	cfg.Callers["harness-alpha-001"] = acl
	g, err := gate.New(cfg, reg, discardRecorder{}, gate.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := g.Decide(context.Background(), gate.Request{MessageID: "m", BrokerUser: "harness-alpha-001", Submit: &wire.TaskSubmit{
		Capability: "graphene-cu", CallerID: "harness-alpha-001", Intent: "graphene on the MoS2 rig",
		Inputs: json.RawMessage(`{"substrate":"Cu foil","growth_temperature":1000}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != gate.Rejected || d.Rejection == nil || !errors.Is(d.Rejection, gate.ErrUnknownCapability) ||
		!slices.Contains(d.Rejection.Paths, "/capability") {
		t.Fatalf("decision %v %+v, want rejected: unknown capability at /capability", d.Outcome, d.Rejection)
	}
	t.Logf("%s: %s", d.Rejection.Code, d.Rejection.Message)
}
