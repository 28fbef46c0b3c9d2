package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestInstallScriptDryRun: scripts/install.sh --dry-run names every step
// (binary, user, configuration, unit, check) and changes nothing; without
// root it refuses.
func TestInstallScriptDryRun(t *testing.T) {
	cmd := exec.Command("bash", "../../scripts/install.sh", "--dry-run", "--binary", bin)
	cmd.Env = append(os.Environ(), "HCP_INSTALL_ROOT="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh --dry-run: %v\n%s", err, out)
	}
	for _, want := range []string{"/usr/local/bin/hcp-edge", "hcp-edge.yaml", "hcp-edge.service", "config check"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("dry run does not mention %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "+ ") {
			t.Errorf("dry run ran a step: %s", l)
		}
	}
	if os.Getuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("root, and no setpriv to drop it: the refusal is not checked")
		}
		cmd = exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "../../scripts/install.sh", "--binary", bin)
	} else {
		cmd = exec.Command("bash", "../../scripts/install.sh", "--binary", bin)
	}
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "must run as root") {
		t.Errorf("without root: %v\n%s", err, out)
	}
}
