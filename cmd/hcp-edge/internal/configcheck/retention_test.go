package configcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/configs"
)

// TestCheckRetention: a retention shorter than the longest session
// (cvd-material-synthesis, PT72H), a zero retention, a zero ceiling, a
// zero min_age, a duration that is not ISO 8601 and an unknown class:
// each a problem at its own file and line, one problem per mistake.
func TestCheckRetention(t *testing.T) {
	cleanEnv(t)
	sec := `
retention:
  default: P2D                     # SHORT
  classes:
    T3: P0D                        # ZERO
    T9: P30D                       # CLASS
  max_state_mib: 0                 # CEILING
  min_age: PT0S                    # MINAGE
  every: 1h                        # FORMAT
`
	text := strings.Replace(string(configs.SimYAML), "\nretention:\n  default: P90D\n  max_state_mib: 256\n", "\n", 1)
	if strings.Contains(text, "\nretention:") {
		t.Fatal("fixture: sim.yaml's retention section not found")
	}
	text += sec
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Check(path, filepath.Join(configsDir, "capabilities"))
	out := report(r)
	for _, w := range []want{
		{"# SHORT", "retention.default"}, {"# ZERO", "retention.classes.T3"}, {"# CLASS", "retention.classes"},
		{"# CEILING", "retention.max_state_mib"}, {"# MINAGE", "retention.min_age"}, {"# FORMAT", "retention.every"},
	} {
		prefix := fmt.Sprintf("%s:%d: %s", path, lineOf(t, text, w.marker), w.key)
		if !strings.Contains(out, prefix) {
			t.Errorf("missing %q in\n%s", prefix, out)
		}
	}
	if !strings.Contains(out, "72h0m0s") || !strings.Contains(out, "cvd-material-synthesis") {
		t.Errorf("the longest session is not named:\n%s", out)
	}
	if len(r.Problems) != 6 {
		t.Errorf("%d problems, want 6 (one per mistake):\n%s", len(r.Problems), out)
	}
	t.Logf("\n%s", out)
}
