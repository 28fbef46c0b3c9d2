package rigconfig

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/configs"
)

// repoRoot is the repository from this package.
const repoRoot = "../../../.."

// TestNoRigNameInGo: the simulated rigs are configs/sim.yaml (and
// configs/graphene.yaml, the second rig) plus shipped
// profiles. No gas line, valve, output or input name of it appears as a
// string in non-test Go (the pump's and the scrubber's names are also role
// names, the words the layout's roles are given by: a role constant is
// not a rig's name) outside firmware-sim and cmd/rig-sim (the
// simulator) and the test-support package drivers/regmap/regmaptest.
func TestNoRigNameInGo(t *testing.T) {
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	// The MoS2 rig's names (configs/sim.yaml), then the graphene rig's
	// (configs/graphene.yaml): its CH4 line, and the word graphene itself,
	// which only the analysis may know (session/analysis's graphene model).
	names := regexp.MustCompile(`"(pump|gate_valve|ar_valve|h2_valve|h2s_valve|vent_valve|scrubber|door_closed|exhaust_ok|pump_running|Ar|H2|H2S|CH4|ch4|ch4_valve|mfc-ch4)"`)
	// The graphene rig's words, quoted or not: a string, and also an
	// identifier (analysis.Graphene, a plant's CH4) used outside the
	// analysis, which would choose by material in Go.
	graphene := regexp.MustCompile(`(?i)graphene|\bch4\b`)
	var found []string
	for _, f := range strings.Fields(string(out)) {
		switch {
		case strings.HasSuffix(f, "_test.go"), strings.HasPrefix(f, "firmware-sim/"), strings.HasPrefix(f, "cmd/rig-sim/"),
			strings.HasPrefix(f, "drivers/regmap/regmaptest/"),
			strings.HasPrefix(f, "internal/thirdparty/"):
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(b, []byte("\n")) {
			if m := names.FindIndex(line); m != nil && !isTagOrComment(line, m[0]) && !roleConst.Match(line) {
				found = append(found, f+":"+strconv.Itoa(i+1)+": "+string(line[m[0]:m[1]]))
			}
			// Only the analysis knows graphene: raman.analyze's material
			// enums (device/catalog) and a remote model's answer schema
			// (session/modelrouter) take the names from its models
			// (analysis.Materials).
			if m := graphene.FindIndex(line); m != nil && !strings.HasPrefix(f, "session/analysis/") && !isTagOrComment(line, m[0]) {
				found = append(found, f+":"+strconv.Itoa(i+1)+": "+string(line[m[0]:m[1]]))
			}
		}
	}
	if len(found) > 0 {
		t.Fatalf("the rig's names are in Go (they belong in configs/sim.yaml and the profiles):\n%s", strings.Join(found, "\n"))
	}
}

// roleConst is the definition of a role constant (Role... = "pump").
var roleConst = regexp.MustCompile(`^\s*Role[A-Z]\w*\s+=\s+"`)

// isTagOrComment: the match at col is in a comment or a struct tag (a
// configuration key's name).
func isTagOrComment(line []byte, col int) bool {
	s := string(line)
	if i := strings.Index(s, "//"); i >= 0 && i < col {
		return true
	}
	return strings.Contains(s, "`yaml:")
}

// TestSimSpecIsTheTestSupportSpec: simrig.Spec, which other packages'
// tests use, is what the agent derives from configs/sim.yaml and its
// profiles, wires and internal writes included.
func TestSimSpecIsTheTestSupportSpec(t *testing.T) {
	f, err := Parse(bytes.NewReader(configs.SimYAML))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Spec(f.Rig)
	if err != nil {
		t.Fatal(err)
	}
	if want := simrig.Spec(); !reflect.DeepEqual(got, want) {
		t.Errorf("spec from configs/sim.yaml:\n%+v\nsimrig.Spec:\n%+v", got, want)
	}
}
