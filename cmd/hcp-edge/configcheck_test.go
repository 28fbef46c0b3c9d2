package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/configs"
)

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

// want is one expected problem: the key, and the line of the marker.
type want struct {
	marker string // a substring of the line the problem must point at
	key    string
}

func TestConfigCheckBroken(t *testing.T) {
	cleanEnv(t)
	sim := string(configs.SimYAML)
	tests := []struct {
		name string
		edit func(string) string // from sim.yaml
		want []want
	}{
		{name: "unknown top-level key", edit: func(s string) string { return s + "extra: 1\n" },
			want: []want{{"extra: 1", "extra"}}},
		{name: "unknown nested key", edit: func(s string) string {
			return strings.Replace(s, "      retries: 1\n    rs485:", "      retries: 1\n      colour: red\n    rs485:", 1)
		}, want: []want{{"colour: red", "rig.modbus_buses.main.colour"}}},
		{name: "unknown key in an mfc", edit: func(s string) string {
			return strings.Replace(s, "gas: H2, unit_id: B", "gas: H2, flavour: x, unit_id: B", 1)
		}, want: []want{{"flavour: x", "rig.mfcs[1].flavour"}}},
		{name: "bad flow unit", edit: func(s string) string { return strings.Replace(s, "full_scale: 50 sccm", "full_scale: 50 parsecs", 1) },
			want: []want{{"50 parsecs", "rig.mfcs[2].full_scale"}}},
		{name: "bad duration", edit: func(s string) string { return strings.Replace(s, "kick_every: 1s", "kick_every: often", 1) },
			want: []want{{"kick_every: often", "monitor.kick_every"}}},
		{name: "bad envelope duration (text unmarshaler)", edit: func(s string) string {
			return strings.Replace(s, "comms_timeout: 3s", "comms_timeout: 3 parsec", 1)
		}, want: []want{{"comms_timeout: 3 parsec", "envelope.comms_timeout"}}},
		{name: "bad quantity unit", edit: func(s string) string { return strings.Replace(s, "max_pressure: 1 mbar", "max_pressure: 1 furlong", 1) },
			want: []want{{"1 furlong", "envelope.interlocks.heater.max_pressure"}}},
		{name: "limit beyond the device range", edit: func(s string) string {
			return strings.Replace(s, "{min: 0,   max: 1000, unit: celsius", "{min: 0,   max: 1500, unit: celsius", 1)
		}, want: []want{{"furnace.setpoint:", "envelope.parameters.furnace.setpoint.max"}}},
		{name: "flow limit beyond the mfc full scale", edit: func(s string) string {
			return strings.Replace(s, "{max: 100,  unit: sccm}", "{max: 300,  unit: sccm}", 1)
		}, want: []want{{"flow.H2:", "envelope.parameters.flow.H2.max"}}},
		{name: "unit id out of range", edit: func(s string) string {
			return strings.Replace(s, "furnace: {bus: main, unit: 1}", "furnace: {bus: main, unit: 0}", 1)
		},
			want: []want{{"furnace: {bus: main, unit: 0}", "rig.furnace.unit"}}},
		{name: "unknown bus", edit: func(s string) string { return strings.Replace(s, "dio: {bus: main", "dio: {bus: nowhere", 1) },
			want: []want{{"dio: {bus: nowhere", "rig.dio.bus"}}},
		{name: "bad unit id letter", edit: func(s string) string { return strings.Replace(s, "unit_id: C", "unit_id: cc", 1) },
			want: []want{{"unit_id: cc", "rig.mfcs[2].unit_id"}}},
		{name: "valve that is no coil", edit: func(s string) string {
			return strings.Replace(s, "gas: Ar, unit_id: A,", "gas: Ar, valve: nope, unit_id: A,", 1)
		}, want: []want{{"valve: nope", "rig.mfcs[0].valve"}}},
		{name: "bad log level", edit: func(s string) string { return strings.Replace(s, "log_level: info", "log_level: loud", 1) },
			want: []want{{"log_level: loud", "agent.log_level"}}},
		{name: "unknown emergency procedure", edit: func(s string) string {
			return strings.Replace(s, "comms_loss: safe_state", "comms_loss: pray", 1)
		}, want: []want{{"comms_loss: pray", "envelope.emergency_procedures.comms_loss"}}},
		{name: "relative state dir", edit: func(s string) string {
			return strings.Replace(s, "  # state_dir: /var/lib/hcp-edge ", "  state_dir: var/hcp ", 1)
		}, want: []want{{"state_dir: var/hcp", "agent.state_dir"}}},
		{name: "control socket too long", edit: func(s string) string {
			return strings.Replace(s, "  # control_socket: /var/lib/hcp-edge/control.sock ", "  control_socket: /"+strings.Repeat("x", 120)+" ", 1)
		}, want: []want{{"control_socket: /xxx", "agent.control_socket"}}},
		{name: "a list where a mapping belongs", edit: func(s string) string {
			return strings.Replace(s, "gauge: {name: gauge,", "gauge: [1, 2]\n  gaugex: {name: gauge,", 1)
		}, want: []want{{"gauge: [1, 2]", "rig.gauge"}, {"gaugex:", "rig.gaugex"}}},
		{name: "every problem, not only the first", edit: func(s string) string {
			s = strings.Replace(s, "full_scale: 50 sccm", "full_scale: 50 parsecs", 1)
			s = strings.Replace(s, "kick_every: 1s", "kick_every: often", 1)
			s = strings.Replace(s, "{min: 0,   max: 1000, unit: celsius", "{min: 0,   max: 1500, unit: celsius", 1)
			return strings.Replace(s, "log_level: info", "log_level: loud", 1)
		}, want: []want{
			{"50 parsecs", "rig.mfcs[2].full_scale"},
			{"kick_every: often", "monitor.kick_every"},
			{"furnace.setpoint:", "envelope.parameters.furnace.setpoint.max"},
			{"log_level: loud", "agent.log_level"},
		}},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.edit(sim)
			if text == sim {
				t.Fatal("the edit changed nothing")
			}
			path := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			code := run(t.Context(), []string{"config", "check", path}, &out, &errOut)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\n%s%s", code, exitUsage, out.String(), errOut.String())
			}
			for _, w := range tt.want {
				prefix := fmt.Sprintf("%s:%d: %s: ", path, lineOf(t, text, w.marker), w.key)
				if !strings.Contains(out.String(), prefix) {
					t.Errorf("no problem %q in\n%s", prefix, out.String())
				}
			}
			if n := len(regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(path)+`:\d+: `).FindAllString(out.String(), -1)); n != len(tt.want) {
				t.Errorf("%d problems, want %d (no follow-on errors):\n%s", n, len(tt.want), out.String())
			}
		})
	}
}

func TestConfigCheckSyntaxAndFiles(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	tests := []struct {
		name string
		text string // written to the file; "" = no file at all
		want string // a substring of the output
	}{
		{name: "missing file", want: "no such file"},
		{name: "yaml syntax error with its line", text: "rig:\n  sim_dir: [\n", want: ".yaml:2: did not find expected node content"},
		{name: "tabs", text: "rig:\n\tsim_dir: x\n", want: ".yaml:2: "},
		{name: "empty", text: "# nothing\n", want: "empty configuration"},
		{name: "duplicate key", text: "rig: {}\nrig: {}\n", want: ".yaml:2: rig: defined twice (first at line 1)"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("s%d.yaml", i))
			if tt.text != "" {
				if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out, errOut bytes.Buffer
			if code := run(t.Context(), []string{"config", "check", path}, &out, &errOut); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out.String())
			}
		})
	}
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

func TestConfigCheckCapabilities(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	caps := filepath.Join(dir, "capabilities")
	if err := os.Mkdir(caps, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(caps, "broken.json")
	if err := os.WriteFile(bad, []byte(`{"name": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "hcp-edge.yaml")
	if err := os.WriteFile(cfg, configs.SimYAML, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	// The directory beside the configuration is found by itself.
	if code := run(t.Context(), []string{"config", "check", cfg}, &out, &errOut); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(out.String(), bad+": ") {
		t.Errorf("no problem naming %s:\n%s", bad, out.String())
	}
}

func TestConfigCheckKeyFilePermissions(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.key")
	closed := filepath.Join(dir, "closed.key")
	for p, mode := range map[string]os.FileMode{open: 0o644, closed: 0o600} {
		if err := os.WriteFile(p, []byte("k"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	// The configuration has no key files yet: check the rule on a struct
	// of the shape the agent section will take.
	type agent struct {
		SigningKeyFile string `yaml:"signing_key_file"`
		TLSKeyFile     string `yaml:"tls_key_file"`
		MissingKey     string `yaml:"token_file"`
		NotAKey        string `yaml:"log_file"`
	}
	tests := []struct {
		name, path string
		ok         bool
	}{
		{"0600", closed, true},
		{"0644", open, false},
		{"missing", filepath.Join(dir, "nope.key"), false},
		{"a directory", dir, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &checker{file: "x.yaml"}
			c.checkKeyFile("agent.signing_key_file", tt.path)
			if ok := len(c.res.Problems) == 0; ok != tt.ok {
				t.Errorf("ok %v, want %v: %+v", ok, tt.ok, c.res.Problems)
			}
		})
	}
	for _, f := range yamlFields(reflect.TypeFor[agent]()) {
		if got, want := keyFileField(f.name), f.name != "log_file"; got != want {
			t.Errorf("keyFileField(%q) = %v, want %v", f.name, got, want)
		}
	}
}

// TestExampleCoversEveryKey: configs/hcp-edge.example.yaml passes config
// check and sets every key the configuration's Go types know.
func TestExampleCoversEveryKey(t *testing.T) {
	cleanEnv(t)
	const path = "../../configs/hcp-edge.example.yaml"
	r := checkConfig(path, "../../configs/capabilities")
	if !r.Valid {
		t.Fatalf("the example does not pass config check: %+v", r.Problems)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeFor[rigconfig.File]()
	have := nodeKeys(doc.Content[0], typ)
	for _, k := range typeKeys(typ) {
		if !have[k] {
			t.Errorf("the example does not document %s", k)
		}
	}
	// Guard against a walker that silently stops descending.
	if len(typeKeys(typ)) < 60 {
		t.Errorf("only %d keys: did typeKeys stop walking?", len(typeKeys(typ)))
	}
}

func TestLocate(t *testing.T) {
	text := "a:\n  b.c:\n    d: 1\n  b: {x: [10, {y: 2}]}\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path  string
		line  int
		found bool
	}{
		{"a", 1, true},
		{"a.b.c.d", 3, true},
		{"a.b.x[1].y", 4, true},
		{"a.b.x[5]", 4, false},
		{"a.zz", 1, false},
		{"", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			line, _, found := locate(doc.Content[0], tt.path)
			if line != tt.line || found != tt.found {
				t.Errorf("locate(%q) = line %d found %v, want %d %v", tt.path, line, found, tt.line, tt.found)
			}
		})
	}
}

func FuzzConfigCheck(f *testing.F) {
	f.Add(string(configs.SimYAML))
	f.Add("rig: {mfcs: [{full_scale: 1 slm}]}\nenvelope: {parameters: {x: {max: 1}}}\n")
	f.Add("a: &x {b: 1}\nrig: *x\n")
	f.Add("rig:\n  <<: {sim_dir: /x}\n")
	f.Fuzz(func(t *testing.T, text string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		r := checkConfig(path, filepath.Join(dir, "none"))
		if r.Valid == (len(r.Problems) > 0) {
			t.Fatalf("valid %v with %d problems", r.Valid, len(r.Problems))
		}
	})
}
