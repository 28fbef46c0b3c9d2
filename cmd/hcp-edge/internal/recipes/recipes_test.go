package recipes

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/envelope"
	"hcp-edge/session/capability"
	"hcp-edge/session/recipe"
)

func simEnvelope(t *testing.T) *envelope.Envelope {
	t.Helper()
	f, err := rigconfig.Parse(bytes.NewReader(configs.SimYAML))
	if err != nil {
		t.Fatal(err)
	}
	env, err := f.CompileEnvelope()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func anneal(t *testing.T) []byte {
	t.Helper()
	data, ok := configs.Recipes()["recipes/h2-anneal.yaml"]
	if !ok {
		t.Fatal("no shipped recipe recipes/h2-anneal.yaml")
	}
	return data
}

// labRecipe is the shipped anneal under another name and version.
func labRecipe(t *testing.T, name, version string) []byte {
	t.Helper()
	s := strings.Replace(string(anneal(t)), "name: h2-anneal", "name: "+name, 1)
	return []byte(strings.Replace(s, "version: 1.0.0", "version: "+version, 1))
}

func write(t *testing.T, dir, file string, data []byte, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func names(s *Set) []string {
	var out []string
	for _, r := range s.Recipes {
		out = append(out, r.Name+"@"+r.Version)
	}
	return out
}

// TestLoad: the shipped recipes and a lab's load; a broken one and one
// writable by group or others are refused, each naming its file, and the
// others still load.
func TestLoad(t *testing.T) {
	env := simEnvelope(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "lab.yaml", labRecipe(t, "lab-anneal", "1.0.0"), 0o644)
	write(t, dir, "open.yaml", labRecipe(t, "open-anneal", "1.0.0"), 0o664)
	write(t, dir, "broken.yaml", []byte(strings.Replace(string(labRecipe(t, "hot-anneal", "1.0.0")), "max: 600", "max: 1200", 1)), 0o600)
	write(t, dir, "notes.txt", []byte("not a recipe"), 0o644)
	s, err := Load(env, dir, Known{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(names(s), " ")
	if want := "h2-anneal@1.0.0 cvd-material-synthesis@1.0.0 ws2-sulfurization@1.0.0 lab-anneal@1.0.0"; got != want {
		t.Errorf("loaded %s, want %s", got, want)
	}
	var pe *PermissionError
	if len(s.Refused) != 1 || !errors.As(s.Refused[0], &pe) || !errors.Is(s.Refused[0], ErrWritable) || filepath.Base(pe.Path) != "open.yaml" {
		t.Errorf("refused %v, want open.yaml for its mode", s.Refused)
	}
	if len(s.Problems) == 0 || filepath.Base(s.Problems[0].File) != "broken.yaml" {
		t.Errorf("problems %v, want broken.yaml's", s.Problems)
	}
	if len(s.Executors) != 4 {
		t.Errorf("%d executors", len(s.Executors))
	}
}

// TestLoadRefusesWritableDir: a directory writable by others is refused
// as a whole; the shipped recipes still load.
func TestLoadRefusesWritableDir(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "lab.yaml", labRecipe(t, "lab-anneal", "1.0.0"), 0o644)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	s, err := Load(simEnvelope(t), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Recipes) != 3 || len(s.Refused) != 1 || !errors.Is(s.Refused[0], ErrWritable) {
		t.Errorf("recipes %v, refused %v", names(s), s.Refused)
	}
}

// TestLoadRefusesChangedContent: a recipe whose content changed since an
// earlier load without a new version is refused with a clear error; with
// a new version it loads.
func TestLoadRefusesChangedContent(t *testing.T) {
	env := simEnvelope(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	known := Known{}
	write(t, dir, "lab.yaml", labRecipe(t, "lab-anneal", "1.0.0"), 0o644)
	if _, err := Load(env, dir, known); err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(labRecipe(t, "lab-anneal", "1.0.0"), []byte("rate_c_per_min: 10"), []byte("rate_c_per_min: 8"), 1)
	write(t, dir, "lab.yaml", edited, 0o644)
	s, err := Load(env, dir, known)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Recipes) != 3 || len(s.Problems) != 1 || s.Problems[0].Rule != recipe.RuleDuplicate ||
		!strings.Contains(s.Problems[0].Message, "a change of content needs a new version") {
		t.Fatalf("recipes %v, problems %v", names(s), s.Problems)
	}
	write(t, dir, "lab.yaml", bytes.Replace(edited, []byte("version: 1.0.0"), []byte("version: 1.0.1"), 1), 0o644)
	if s, err = Load(env, dir, known); err != nil || len(s.Recipes) != 4 || len(s.Problems) != 0 {
		t.Fatalf("new version: recipes %v, problems %v, %v", names(s), s.Problems, err)
	}
}

// TestCapabilities: a recipe replaces a declaration of the same name and
// version; the others stay.
func TestCapabilities(t *testing.T) {
	s, err := Load(simEnvelope(t), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	base, err := capability.LoadDir(filepath.Join("..", "..", "..", "..", "configs", "capabilities"))
	if err != nil {
		t.Fatal(err)
	}
	caps, err := s.Capabilities(base.All())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := capability.NewRegistry(caps...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range reg.All() {
		got = append(got, c.Name)
	}
	if want := "cvd-material-synthesis h2-anneal leak-check rig-status ws2-sulfurization"; strings.Join(got, " ") != want {
		t.Errorf("capabilities %v, want %s", got, want)
	}
	cvd, _ := reg.Resolve("cvd-material-synthesis", "")
	if cvd.RiskFloor != capability.R3 || !strings.Contains(string(cvd.InputSchema), "temperature_range") {
		t.Errorf("cvd-material-synthesis is not the recipe's: floor %q", cvd.RiskFloor)
	}
}

func envelopeOf(t *testing.T, path string) *envelope.Envelope {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := rigconfig.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := rigconfig.Spec(f.Rig)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(f.Envelope, spec)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestShippedRecipesForOtherRigs: every rig gets every shipped recipe; one
// made for another rig (it needs a gas line this rig lacks) is not offered,
// logged once at info with what it needs at FILE:LINE, and is no error: on
// the MoS2 rig the graphene recipe and the two-zone mos2-solid, on the
// graphene rig mos2-solid and the two sulfurization recipes, on the two-zone
// rig every one-zone recipe. Each runs on its own rig.
func TestShippedRecipesForOtherRigs(t *testing.T) {
	for _, c := range []struct {
		config  string
		offered string
		other   string
		needs   string
	}{
		{"../../../../configs/sim.yaml", "h2-anneal@1.0.0 cvd-material-synthesis@1.0.0 ws2-sulfurization@1.0.0", "graphene-cu mos2-solid",
			"recipes/graphene-cu.yaml:121: phases[6].hold.flows.CH4: this rig has no CH4 gas line"},
		{"../../../../configs/sim.yaml", "h2-anneal@1.0.0 cvd-material-synthesis@1.0.0 ws2-sulfurization@1.0.0", "graphene-cu mos2-solid",
			"recipes/mos2-solid.yaml:92: phases[4].ramp.zone: this rig has no zone growth (zones: furnace)"},
		{"../../../../configs/graphene.yaml", "graphene-cu@1.0.0 h2-anneal@1.0.0", "mos2-solid cvd-material-synthesis ws2-sulfurization",
			"recipes/mos2-sulfurization.yaml:135: phases[5].hold.flows.H2S: this rig has no H2S gas line"},
		// The two-zone rig: the one-zone recipes name no zone (and need
		// lines it lacks); mos2-solid is its own.
		{"../../../../configs/mos2-two-zone.yaml", "mos2-solid@1.0.0", "graphene-cu h2-anneal cvd-material-synthesis ws2-sulfurization",
			"recipes/h2-anneal.yaml:51: phases[4].ramp: this rig has 2 heated zones (growth, sulfur): say which one the ramp acts on (zone: NAME)"},
	} {
		t.Run(filepath.Base(c.config), func(t *testing.T) {
			s, err := Load(envelopeOf(t, c.config), "", Known{})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(s), " "); got != c.offered {
				t.Errorf("offered %s, want %s", got, c.offered)
			}
			if got := strings.Join(s.NotForRigNames(), " "); got != c.other {
				t.Errorf("not for this rig: %s, want %s", got, c.other)
			}
			if len(s.Problems) != 0 {
				t.Errorf("problems %v: a shipped recipe for another rig is none", s.Problems)
			}
			var buf bytes.Buffer
			s.Log(slog.New(slog.NewTextHandler(&buf, nil)), "")
			out := buf.String()
			if strings.Contains(out, "level=ERROR") || !strings.Contains(out, "shipped recipe not for this rig") || !strings.Contains(out, c.needs) {
				t.Errorf("log:\n%s\nwant info lines naming %q and no error", out, c.needs)
			}
		})
	}
	// A lab's own recipe needing a line the rig lacks stays an error.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g, ok := configs.Recipes()["recipes/graphene-cu.yaml"]
	if !ok {
		t.Fatal("no shipped recipe graphene-cu")
	}
	write(t, dir, "my-graphene.yaml", []byte(strings.Replace(string(g), "name: graphene-cu", "name: my-graphene", 1)), 0o644)
	s, err := Load(simEnvelope(t), dir, Known{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) == 0 || filepath.Base(s.Problems[0].File) != "my-graphene.yaml" || slices.Contains(s.NotForRigNames(), "my-graphene") {
		t.Fatalf("a lab's recipe for a line the rig lacks: problems %v, not for rig %v", s.Problems, s.NotForRigNames())
	}
}

// TestGrapheneRecipeBadInput: on the graphene rig, the graphene recipe
// broken as a careless edit would break it is refused with a named reason
// at its line: the growth at the copper's limit, CH4 at atmosphere, a vent
// with H2 and CH4 not purged out.
// graphenePumpDown is the graphene recipe's pump-down (with its questions)
// and leak check.
const graphenePumpDown = "  - pump_down:\n      base_pressure_pa: 5\n      timeout: PT30M\n      ask:                    # before the tube is closed and pumped: nothing hot, no gas open\n        - name: foil_loaded\n          question: \"Cu foil in the boat, substrate inserted and the tube's door closed?\"\n          answer: {type: yes_no}\n          expect: true\n          timeout: PT30M\n          when: {input: technician_checks, equals: ask}\n        - name: foil_thickness_um\n          question: \"Thickness of the Cu foil loaded (µm)?\"\n          answer: {type: number, unit: um, min: 5, max: 100}\n          timeout: PT30M\n          when: {input: technician_checks, equals: ask}\n  - leak_check: {hold: PT2M, max_rate_pa_per_min: 10}\n"

func TestGrapheneRecipeBadInput(t *testing.T) {
	env := envelopeOf(t, "../../../../configs/graphene.yaml")
	g, ok := configs.Recipes()["recipes/graphene-cu.yaml"]
	if !ok {
		t.Fatal("no shipped recipe graphene-cu")
	}
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"growth at copper's limit", "    max: 1035 ", "    max: 1084 ", "furnace.setpoint = 1084.0 °C is refused by the envelope (max)"},
		{"CH4 at atmosphere", graphenePumpDown, "",
			"flows.CH4: flow.CH4 = 2.00 sccm is refused by the envelope (gas_requires_low_pressure)"},
		{"vent not purged", "  - purge: {name: flush_h2, description: flush the H2 out with Ar, gas: Ar, flow_sccm: {input: ar_flow}, duration: PT5M}\n", "",
			"H2 used and not purged out since"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(string(g), c.old, c.new, 1)
			if src == string(g) {
				t.Fatalf("fixture: %q not found", c.old)
			}
			ok, probs := recipe.CheckAll(env, recipe.Source{Name: "graphene-cu.yaml", Data: []byte(src)})
			all := fmt.Sprint(probs)
			if len(ok) != 0 || !strings.Contains(all, c.want) {
				t.Fatalf("want a problem %q, got %v", c.want, probs)
			}
			t.Log(probs[0])
		})
	}
}
