package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"hcp-edge/configs"
)

// The check itself is tested in internal/configcheck; these tests cover the
// command: its output, exit codes and flags.

// cleanEnv keeps the environment's overrides out of a test.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"HCP_STATE_DIR", "HCP_CONTROL_SOCKET", "HCP_RIG_SIM_DIR"} {
		t.Setenv(k, "")
	}
}

// lineOf is the 1-based line of the first line of text containing marker.
func lineOf(t *testing.T, text, marker string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("marker %q not in the configuration", marker)
	return 0
}

func TestConfigCheckValidAndJSON(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{
		{"config", "check"},
		{"config", "check", "../../configs/sim.yaml"},
		{"config", "check", "--capabilities", "../../configs/capabilities", "../../configs/hcp-edge.example.yaml"},
	} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code != exitOK {
			t.Errorf("%v: exit %d\n%s%s", args, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"config", "check", "--json", "--capabilities", "../../configs/capabilities"}, &out, &errOut)
	var r checkResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || code != exitOK || !r.Valid || len(r.Capabilities) == 0 {
		t.Errorf("exit %d, err %v, result %+v\n%s", code, err, r, errOut.String())
	}
}

// TestConfigCheckBroken: an invalid configuration exits 2 and prints every
// problem as FILE:LINE: KEY: MESSAGE, then the count.
func TestConfigCheckBroken(t *testing.T) {
	cleanEnv(t)
	sim := string(configs.SimYAML)
	text := strings.Replace(sim, "kick_every: 1s", "kick_every: often", 1)
	text = strings.Replace(text, "log_level: info", "log_level: loud", 1)
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"config", "check", "--capabilities", "../../configs/capabilities", path}, &out, &errOut); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	for _, w := range []string{
		path + ":" + strconv.Itoa(lineOf(t, text, "kick_every: often")) + ": monitor.kick_every: ",
		path + ":" + strconv.Itoa(lineOf(t, text, "log_level: loud")) + ": agent.log_level: ",
		path + ": 2 problem(s)",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

// TestConfigCheckBrokenProfile: a lab's profile written as a new user
// would, with three mistakes (a key indented by three spaces is the YAML
// error of one file; a word order on a 16-bit register and a float at the
// last register in another), is printed like every other problem, each at
// the profile's own FILE:LINE, and nothing at the configuration's lines.
func TestConfigCheckBrokenProfile(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	indent := "model: Lab TC\nmanual: {document: lab notes, revision: \"1\"}\nfamily: modbus\nkind: temperature_controller\nlacks: [comms_watchdog]\nchannels:\n" +
		"  - name: pv\n    table: input_register\n    address: 0\n    type: int16\n    access: read\n    role: process_value\n" +
		"  - name: sp\n    table: holding_register\n   address: 1\n    type: int16\n"
	regs := "model: Lab TC 2\nmanual: {document: lab notes, revision: \"1\"}\nfamily: modbus\nkind: temperature_controller\nlacks: [comms_watchdog]\nchannels:\n" +
		"  - {name: pv, table: input_register, address: 0, type: int16, scale: 0.1, access: read, role: process_value}\n" +
		"  - {name: sp, table: holding_register, address: 0, type: int16, scale: 0.1, range: [0, 1200], access: read_write, role: setpoint}\n" +
		"  - {name: en, table: holding_register, address: 1, type: uint16, access: read_write, role: heater_enable, \"on\": 1, \"off\": 0}\n" +
		"  - {name: power, table: input_register, address: 3, type: uint16, word_order: CDAB, access: read, role: output_power}\n" +
		"  - {name: pvf, table: input_register, address: 65535, type: float32, access: read, role: process_value_float}\n"
	for name, text := range map[string]string{"lab-tc.yaml": indent, "lab-tc2.yaml": regs} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := strings.Replace(string(configs.SimYAML), "profile: hcp-sim-tc}", "profile: lab-tc}", 1)
	cfg = strings.Replace(cfg, "  outputs:\n", "  profiles_dir: "+dir+"\n  outputs:\n", 1)
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"config", "check", "--capabilities", "../../configs/capabilities", path}, &out, &errOut); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	for _, w := range []string{
		filepath.Join(dir, "lab-tc.yaml") + ":15: (file): does not parse: did not find expected '-' indicator",
		filepath.Join(dir, "lab-tc2.yaml") + ":10: channels[power].word_order: CDAB: a word order orders the two registers of a 32-bit value",
		filepath.Join(dir, "lab-tc2.yaml") + ":11: channels[pvf].address: a float32 takes 2 registers, 65535 and 65536: past the last register, 65535",
		path + ": 3 problem(s)",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	if regexp.MustCompile(regexp.QuoteMeta(path) + `:\d+:`).MatchString(out.String()) {
		t.Errorf("a problem at the configuration's lines:\n%s", out.String())
	}
}

// TestConfigSchemaCmd: config schema prints the embedded schema, and only
// takes -h.
func TestConfigSchemaCmd(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"config", "schema"}, &out, &errOut); code != exitOK || !bytes.Equal(out.Bytes(), configs.Schema()) {
		t.Errorf("exit %d, %d bytes, want the %d of configs.Schema()\n%s", code, out.Len(), len(configs.Schema()), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(t.Context(), []string{"config", "schema", "x"}, &out, &errOut); code != exitUsage || errOut.Len() == 0 {
		t.Errorf("a stray argument: exit %d, stderr %q", code, errOut.String())
	}
}
