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
	// The control socket's group: created, or already there.
	if !strings.Contains(string(out), "groupadd --system hcp-edge") && !strings.Contains(string(out), "ok: group hcp-edge exists") {
		t.Errorf("dry run does not create the hcp-edge group:\n%s", out)
	}
	for _, want := range []string{"/usr/local/bin/hcp-edge", "hcp-edge.yaml", "hcp-edge.service", "config check", "usermod -aG hcp-edge"} {
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

// TestUnitClockOrdering: the systemd unit starts after time-sync.target
// (the clock restored, the NTP client started) without waiting for the
// clock to be synchronised, and lets the agent read the kernel's
// clock-sync state (adjtimex) that it holds new sessions on: no
// ProtectClock=, adjtimex allowed after the @privileged deny-list.
func TestUnitClockOrdering(t *testing.T) {
	b, err := os.ReadFile("../../scripts/hcp-edge.service")
	if err != nil {
		t.Fatal(err)
	}
	var after []string
	filters := ""
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		switch k {
		case "After":
			after = append(after, strings.Fields(v)...)
		case "ProtectClock":
			t.Errorf("ProtectClock=%s filters adjtimex: the agent could not read the clock-sync state", v)
		case "SystemCallFilter":
			filters += v + "\n"
		case "Wants", "Requires":
			if strings.Contains(v, "time-wait-sync") {
				t.Errorf("%s=%s: waiting for the clock would keep the interlock and the monitor down", k, v)
			}
		}
	}
	for _, want := range []string{"network-online.target", "time-sync.target"} {
		if !strings.Contains(strings.Join(after, " "), want) {
			t.Errorf("After= %v lacks %s", after, want)
		}
	}
	deny := strings.Index(filters, "~@privileged")
	allow := strings.Index(filters, "adjtimex")
	if deny < 0 || allow < deny {
		t.Errorf("SystemCallFilter lines %q: want adjtimex allowed after the ~@privileged deny-list", filters)
	}
	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		if out, err := exec.Command(sa, "verify", "../../scripts/hcp-edge.service").CombinedOutput(); err != nil {
			t.Logf("systemd-analyze verify (informational): %v\n%s", err, out)
		}
	}
}
