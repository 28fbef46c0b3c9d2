package configcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hcp-edge/configs"
)

// TestCheckAlerts: a receiver URL that does not parse, a missing and a
// world-readable credential file, an unknown class: each a problem at its
// own file and line, one per mistake.
func TestCheckAlerts(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	open := filepath.Join(dir, "open-password")
	if err := os.WriteFile(open, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	mail := "smtp://rig@mail.example.org:587/?from=rig@example.org&to=oncall@example.org&password_file="
	text := string(configs.SimYAML) + `
alerts:
  receivers:
    - url: "` + mail + filepath.Join(dir, "missing") + `"   # MISSING
    - url: "` + mail + open + `"   # OPEN
    - url: "https://%zz"           # PARSE
    - url: http://127.0.0.1:9/hook
      classes: [trips]             # CLASS
`
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Check(path, filepath.Join(configsDir, "capabilities"))
	out := report(r)
	for _, w := range []want{
		{"# MISSING", "alerts.receivers[0].url"}, {"# OPEN", "alerts.receivers[1].url"},
		{"# PARSE", "alerts.receivers[2].url"}, {"# CLASS", "alerts.receivers[3].classes[0]"},
	} {
		prefix := fmt.Sprintf("%s:%d: %s", path, lineOf(t, text, w.marker), w.key)
		if !strings.Contains(out, prefix) {
			t.Errorf("missing %q in\n%s", prefix, out)
		}
	}
	if len(r.Problems) != 4 || strings.Contains(out, "secret") {
		t.Errorf("%d problems, want 4 (one per mistake), no password shown:\n%s", len(r.Problems), out)
	}
	t.Logf("\n%s", out)
}
