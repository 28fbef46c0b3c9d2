package configcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"hcp-edge/configs"
)

// configsDir is the repository's configs/ from this package.
const configsDir = "../../../../configs"

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

// report formats a result as config check prints it.
func report(r Result) string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// want is one expected problem: the key, and the line of the marker.
type want struct {
	marker string // a substring of the line the problem must point at
	key    string
}

// TestCheckBroken: each mistake in an otherwise valid configs/sim.yaml is
// one problem, FILE:LINE: KEY:, with no follow-on problems; several are
// all reported.
func TestCheckBroken(t *testing.T) {
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
			return strings.Replace(s, "gas: H2, hazard: flammable,", "gas: H2, flavour: x, hazard: flammable,", 1)
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
			return strings.Replace(s, "furnace: {bus: main, unit: 1,", "furnace: {bus: main, unit: 0,", 1)
		},
			want: []want{{"furnace: {bus: main, unit: 0,", "rig.furnace.unit"}}},
		{name: "unknown bus", edit: func(s string) string { return strings.Replace(s, "dio: {bus: main", "dio: {bus: nowhere", 1) },
			want: []want{{"dio: {bus: nowhere", "rig.dio.bus"}}},
		{name: "bad unit id letter", edit: func(s string) string { return strings.Replace(s, "unit_id: C", "unit_id: cc", 1) },
			want: []want{{"unit_id: cc", "rig.mfcs[2].unit_id"}}},
		{name: "valve that is no output", edit: func(s string) string {
			return strings.Replace(s, "valve: ar_valve,", "valve: nope,", 1)
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
		{name: "disk watermark 0", edit: func(s string) string {
			return strings.Replace(s, "  recovery_grace: 5m ", "  disk: {watermark_mib: 0}\n  recovery_grace: 5m ", 1)
		}, want: []want{{"watermark_mib: 0", "agent.disk.watermark_mib"}}},
		{name: "disk watermark above the disk's size", edit: func(s string) string {
			// 1 EiB: above any file system the state directory's parent
			// (the test's temporary directory) lives on.
			return strings.Replace(s, "  recovery_grace: 5m ", "  disk:\n    watermark_mib: 1099511627776\n  recovery_grace: 5m ", 1)
		}, want: []want{{"watermark_mib: 1099511627776", "agent.disk.watermark_mib"}}},
		// The rig as data (issue 33): the layout against the profiles and the envelope.
		{name: "gas line without a hazard class", edit: func(s string) string {
			return strings.Replace(s, "gas: H2S, hazard: toxic,", "gas: H2S,", 1)
		}, want: []want{{"name: mfc-h2s", "rig.mfcs[2].hazard"}}},
		{name: "unknown hazard class", edit: func(s string) string {
			return strings.Replace(s, "hazard: toxic", "hazard: spicy", 1)
		}, want: []want{{"hazard: spicy", "rig.mfcs[2].hazard"}}},
		{name: "interlock naming a gas line that does not exist", edit: func(s string) string {
			return strings.Replace(s, "      H2:\n        max_pressure: 100 mbar", "      CH4:\n        max_pressure: 100 mbar", 1)
		}, want: []want{{"CH4:", "envelope.interlocks.gases.CH4"}}},
		{name: "interlock naming an input that does not exist", edit: func(s string) string {
			return strings.Replace(s, "require_inputs: {door_closed: true, leak_detected: false}", "require_inputs: {lid_closed: true, leak_detected: false}", 1)
		}, want: []want{{"lid_closed: true", "envelope.interlocks.gases.H2.require_inputs"}}},
		{name: "a furnace without a comms watchdog and no other dead-agent path", edit: func(s string) string {
			return strings.Replace(s, "profile: hcp-sim-tc}", "profile: eurotherm-3200}", 1)
		}, want: []want{{"profile: eurotherm-3200}", "rig.furnace.profile"}}},
		{name: "a profile that does not exist", edit: func(s string) string {
			return strings.Replace(s, "profile: hcp-sim-dio}", "profile: hcp-sim-dio-9}", 1)
		}, want: []want{{"profile: hcp-sim-dio-9}", "rig.dio.profile"}}},
		{name: "an output on a channel the profile lacks", edit: func(s string) string {
			return strings.Replace(s, "{channel: coil6,", "{channel: coil9,", 1)
		}, want: []want{{"{channel: coil9,", "rig.outputs.scrubber.channel"}}},
		{name: "two outputs on one channel", edit: func(s string) string {
			return strings.Replace(s, "{channel: coil5,", "{channel: coil4,", 1)
		}, want: []want{{"vent_valve: {channel: coil4,", "rig.outputs.vent_valve.channel"}}},
		{name: "a role twice", edit: func(s string) string {
			return strings.Replace(s, "role: exhaust_scrubber}", "role: pump}", 1)
		}, want: []want{{"scrubber:   {channel: coil6", "rig.outputs.scrubber.role"}, // and with it the layout lost its scrubber:
			{"gas: H2S, hazard: toxic", "rig.mfcs[2].hazard"}}},
		// Issue 41: what a new user gets wrong, refused at its line.
		{name: "a toxic line and no output is the scrubber", edit: func(s string) string {
			return strings.Replace(s, `safe: "on", role: exhaust_scrubber}`, `safe: "on"}`, 1)
		}, want: []want{{"gas: H2S, hazard: toxic", "rig.mfcs[2].hazard"}}},
		{name: "a toxic line whose interlock does not require the scrubber", edit: func(s string) string {
			return strings.Replace(s, "        require_switches_on: [scrubber]\n", "", 1)
		}, want: []want{{"      H2S:", "envelope.interlocks.gases.H2S.require_switches_on"}}},
		{name: "a toxic line whose interlock requires another output", edit: func(s string) string {
			return strings.Replace(s, "require_switches_on: [scrubber]", "require_switches_on: [pump]", 1)
		}, want: []want{{"require_switches_on: [pump]", "envelope.interlocks.gases.H2S.require_switches_on"}}},
		{name: "two mfcs of one name", edit: func(s string) string {
			return strings.Replace(s, "{name: mfc-h2, profile:", "{name: mfc-ar, profile:", 1)
		}, want: []want{{"{name: mfc-ar, profile: hcp-sim-mfc, gas: H2,", "rig.mfcs[1].name"}}},
		{name: "two mfcs on one port", edit: func(s string) string {
			return strings.Replace(s, `port: "${sim_dir}/mfc-h2",`, `port: "${sim_dir}/mfc-ar",`, 1)
		}, want: []want{{"{name: mfc-h2, profile:", "rig.mfcs[1].port"}}},
		{name: "the furnace and the dio at one unit id", edit: func(s string) string {
			return strings.Replace(s, "dio: {bus: main, unit: 2,", "dio: {bus: main, unit: 1,", 1)
		}, want: []want{{"dio: {bus: main, unit: 1,", "rig.dio.unit"}}},
		{name: "an mfc named like the gauge", edit: func(s string) string {
			return strings.Replace(s, "{name: mfc-h2s, profile:", "{name: Gauge, profile:", 1)
		}, want: []want{{"gauge: {name: gauge,", "rig.gauge.name"}}},
		{name: "a line valve that is the pump", edit: func(s string) string {
			return strings.Replace(s, "valve: ar_valve,", "valve: pump,", 1)
		}, want: []want{{"valve: pump,", "rig.mfcs[0].valve"}}},
		// The serial instruments by profile.
		{name: "an mfc profile that does not exist", edit: func(s string) string {
			return strings.Replace(s, "profile: hcp-sim-mfc, gas: H2S", "profile: alicat-mx, gas: H2S", 1)
		}, want: []want{{"profile: alicat-mx", "rig.mfcs[2].profile"}}},
		{name: "an mfc without a profile", edit: func(s string) string {
			return strings.Replace(s, "profile: hcp-sim-mfc, gas: H2,", "gas: H2,", 1)
		}, want: []want{{"name: mfc-h2,", "rig.mfcs[1].profile"}}},
		{name: "a gauge's profile on an mfc", edit: func(s string) string {
			return strings.Replace(s, "profile: hcp-sim-mfc, gas: Ar", "profile: hcp-sim-gauge, gas: Ar", 1)
		}, want: []want{{"profile: hcp-sim-gauge, gas: Ar", "rig.mfcs[0].profile"}}},
		{name: "a temperature controller's profile on the gauge", edit: func(s string) string {
			return strings.Replace(s, "profile: hcp-sim-gauge,", "profile: hcp-sim-tc,", 1)
		}, want: []want{{"gauge: {name: gauge, profile: hcp-sim-tc", "rig.gauge.profile"}}},
		{name: "a full scale beyond the profile's", edit: func(s string) string {
			return strings.Replace(s, "full_scale: 500 sccm", "full_scale: 20 slm", 1)
		}, want: []want{{"full_scale: 20 slm", "rig.mfcs[0].full_scale"}}},
		{name: "a gauge channel the profile lacks", edit: func(s string) string {
			return strings.Replace(s, "profile: hcp-sim-gauge,", "profile: hcp-sim-gauge, channel: gauge2,", 1)
		}, want: []want{{"channel: gauge2", "rig.gauge.channel"}}},
		{name: "a purge and a heater interlock on a gas the layout does not call inert", edit: func(s string) string {
			s = strings.Replace(s, "    inert_gas: Ar\n    min_inert_flow: 100 sccm", "    inert_gas: Ar  # the purge's\n    min_inert_flow: 100 sccm", 1)
			return strings.Replace(s, "gas: Ar, hazard: inert,", "gas: Ar, hazard: oxidising,", 1)
		}, want: []want{{"      inert_gas: Ar", "envelope.interlocks.heater.inert_gas"}, {"inert_gas: Ar  # the purge's", "envelope.purge.inert_gas"}}},
		// Issue 42: a limit or a trip threshold of a heated zone the rig
		// does not have (the sim's one zone is furnace), at its line.
		{name: "a zone the rig lacks", edit: func(s string) string {
			return strings.Replace(s, "    furnace.temperature:  {max: 1050, unit: celsius}", "    furnace.temperature:  {max: 1050, unit: celsius}\n    growth.temperature:   {max: 900, unit: celsius}\n    growth.setpoint:      {max: 850, unit: celsius}", 1)
		}, want: []want{{"    growth.temperature:", "envelope.parameters.growth.temperature"}, {"    growth.setpoint:", "envelope.parameters.growth.setpoint"}}},
		{name: "furnace and zones both", edit: func(s string) string {
			return strings.Replace(s, "  dio: {bus: main", "  zones:\n    - {name: z, controller: {bus: main, unit: 3, profile: hcp-sim-tc}}\n  dio: {bus: main", 1)
		}, want: []want{{"  zones:", "rig.zones"}}},
		{name: "no heated zone", edit: func(s string) string {
			s = strings.Replace(s, "\nrig:\n", "\nrig: # the section the missing key belongs in\n", 1)
			return strings.Replace(s, "  furnace: {bus: main, unit: 1, profile: hcp-sim-tc}\n", "", 1)
		}, want: []want{{"rig: # the section the missing key belongs in", "rig.furnace"}}},
		{name: "an output on a module that does not exist", edit: func(s string) string {
			return strings.Replace(s, "pump:       {channel: coil0,", "pump:       {module: io, channel: coil0,", 1)
		}, want: []want{{"pump:       {module: io,", "rig.outputs.pump.module"}}},
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
	caps := filepath.Join(configsDir, "capabilities")
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
			r := Check(path, caps)
			out := report(r)
			if r.Valid {
				t.Errorf("valid:\n%s", text)
			}
			for _, w := range tt.want {
				prefix := fmt.Sprintf("%s:%d: %s: ", path, lineOf(t, text, w.marker), w.key)
				if !strings.Contains(out, prefix) {
					t.Errorf("no problem %q in\n%s", prefix, out)
				}
			}
			if n := len(regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(path)+`:\d+: `).FindAllString(out, -1)); n != len(tt.want) || n != len(r.Problems) {
				t.Errorf("%d problems, want %d (no follow-on errors):\n%s", len(r.Problems), len(tt.want), out)
			}
		})
	}
}

// TestCheckMessages: the schema layer's messages say what is wanted, and an
// unknown key names the keys known at its place.
func TestCheckMessages(t *testing.T) {
	cleanEnv(t)
	sim := string(configs.SimYAML)
	tests := []struct {
		name      string
		old, new  string
		key, want string
	}{
		{"unknown key lists the known ones", "      retries: 1\n    rs485:", "      retries: 1\n      colour: red\n    rs485:",
			"rig.modbus_buses.main.colour", "unknown key (known here: address, mode, retries, timeout, transport)"},
		{"duration", "kick_every: 1s", "kick_every: often", "monitor.kick_every", `"often": want a duration such as "500ms"`},
		{"enum", "log_level: info", "log_level: loud", "agent.log_level", `"loud" is not one of: debug, info, warn, error`},
		{"type", "gauge: {name: gauge, profile: hcp-sim-gauge, port: \"${sim_dir}/gauge\", mode: 9600 8N1}", "gauge: [1, 2]", "rig.gauge", "want a mapping, got a list"},
		{"flow", "full_scale: 50 sccm", "full_scale: 50 parsecs", "rig.mfcs[2].full_scale", `"50 parsecs": want a positive flow and its unit`},
		{"missing required key", "  gpio: {source: sim, socket: \"${sim_dir}/control.sock\"}", "  gpio: {source: sim}", "rig.gpio.socket", "missing"},
		{"bound", "furnace: {bus: main, unit: 1,", "furnace: {bus: main, unit: 300,", "rig.furnace.unit", "300 is above the maximum 247"},
		{"hard limit", "unit: celsius, hard_limit: true}", "unit: celsius, hard_limit: false}", "envelope.parameters.furnace.setpoint.hard_limit", "false: must be true"},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(sim, tt.old, tt.new, 1)
			if text == sim {
				t.Fatal("the edit changed nothing")
			}
			path := filepath.Join(dir, fmt.Sprintf("m%d.yaml", i))
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			r := Check(path, filepath.Join(configsDir, "capabilities"))
			if len(r.Problems) != 1 || r.Problems[0].Key != tt.key || !strings.Contains(r.Problems[0].Message, tt.want) {
				t.Errorf("problems\n%s\nwant one at %s containing %q", report(r), tt.key, tt.want)
			}
		})
	}
}

func TestCheckSyntaxAndFiles(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	// A key indented one space too few, 20 lines into the envelope: the yaml
	// package numbers the error by the line of the mapping around it.
	indent := strings.Replace(string(configs.SimYAML), "        require_inputs: {door_closed: true, exhaust_ok", "       require_inputs: {door_closed: true, exhaust_ok", 1)
	indentLine := fmt.Sprintf(".yaml:%d: did not find expected key", lineOf(t, indent, "       require_inputs: {door_closed: true, exhaust_ok"))
	tests := []struct {
		name string
		text string // written to the file; "" = no file at all
		want string // a substring of the output
	}{
		{name: "missing file", want: "no such file"},
		{name: "yaml syntax error with its line", text: "rig:\n  sim_dir: [\n", want: ".yaml:2: did not find expected node content"},
		{name: "tabs", text: "rig:\n\tsim_dir: x\n", want: ".yaml:2: "},
		{name: "a mis-indented key at its own line", text: indent, want: indentLine},
		{name: "empty", text: "# nothing\n", want: "empty configuration"},
		{name: "duplicate key", text: "rig: {}\nrig: {}\n", want: ".yaml:2: rig: defined twice (first at line 1)"},
		{name: "a list for a document", text: "- rig\n", want: ".yaml:1: want a mapping, got a list"},
		{name: "missing sections", text: "monitor: {}\n", want: ".yaml:1: envelope: missing section"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("s%d.yaml", i))
			if tt.text != "" {
				if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := Check(path, filepath.Join(configsDir, "capabilities"))
			if r.Valid {
				t.Error("valid")
			}
			if out := report(r); !strings.Contains(out, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}

// TestCheckValid: the embedded default, configs/sim.yaml, the graphene rig and the example
// pass, with the shipped capability declarations.
func TestCheckValid(t *testing.T) {
	cleanEnv(t)
	caps := filepath.Join(configsDir, "capabilities")
	for _, path := range []string{"", filepath.Join(configsDir, "sim.yaml"), filepath.Join(configsDir, "graphene.yaml"), filepath.Join(configsDir, "hcp-edge.example.yaml")} {
		r := Check(path, caps)
		if !r.Valid || len(r.Capabilities) == 0 {
			t.Errorf("%s: %+v\n%s", r.File, r, report(r))
		}
	}
}

func TestCheckCapabilities(t *testing.T) {
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
	// The directory beside the configuration is found by itself.
	r := Check(cfg, "")
	if r.Valid || !strings.Contains(report(r), bad+": ") {
		t.Errorf("no problem naming %s:\n%s", bad, report(r))
	}
}

func TestCheckKeyFilePermissions(t *testing.T) {
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
	for name, want := range map[string]bool{"signing_key_file": true, "tls_key_file": true, "token_file": true,
		"key_file": true, "log_file": false, "cert_file": false, "monkey_file": false} {
		if got := KeyFileField(name); got != want {
			t.Errorf("KeyFileField(%q) = %v, want %v", name, got, want)
		}
	}
	// The amqp client key is found in the document and checked.
	c := &checker{file: "x.yaml"}
	c.checkKeyFiles(map[string]any{"agent": map[string]any{"amqp": map[string]any{"key_file": open, "cert_file": open}}}, "")
	if len(c.res.Problems) != 1 || c.res.Problems[0].Key != "agent.amqp.key_file" {
		t.Errorf("problems %+v, want one at agent.amqp.key_file", c.res.Problems)
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
			line, _, found := Locate(doc.Content[0], tt.path)
			if line != tt.line || found != tt.found {
				t.Errorf("Locate(%q) = line %d found %v, want %d %v", tt.path, line, found, tt.line, tt.found)
			}
		})
	}
}

// TestConvertMergesAndAliases: merge keys and aliases reach the schema as
// the yaml package decodes them, a key's own value winning over a merged
// one, and problems inside them point at the key.
func TestConvertMergesAndAliases(t *testing.T) {
	text := "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n  z:\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	tr := convert("f", doc.Content[0])
	m := tr.value.(map[string]any)["m"].(map[string]any)
	if fmt.Sprintf("%v %v %d", m["x"], m["y"], len(m)) != "1 3 2" {
		t.Errorf("m = %v, want x 1, y 3 and no z (null)", m)
	}
	if e := tr.entries["m\x00y"]; e.at.Line != 4 || e.key != "m.y" {
		t.Errorf("m.y at %+v, want line 4", e)
	}
	if e := tr.entries["m\x00x"]; e.at.Line != 1 {
		t.Errorf("m.x at line %d, want 1 (the anchor's)", e.at.Line)
	}
}

func FuzzCheck(f *testing.F) {
	f.Add(string(configs.SimYAML))
	f.Add("rig: {mfcs: [{full_scale: 1 slm}]}\nenvelope: {parameters: {x: {max: 1}}}\n")
	f.Add("a: &x {b: 1}\nrig: *x\n")
	f.Add("rig:\n  <<: {sim_dir: /x}\n")
	f.Add("a: &a [*a]\n")
	f.Add("a: &a [*a, *a]\n")                // 2^depth paths: stopped at maxNodes
	f.Add("a: &a {<<: [*a, *a]}\nrig: *a\n") // merges of itself
	f.Add("a: &a [1, 2]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: [*c, *c, *c, *c]\nrig: .inf\n")
	f.Fuzz(func(t *testing.T, text string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		r := Check(path, filepath.Join(dir, "none"))
		if r.Valid == (len(r.Problems) > 0) {
			t.Fatalf("valid %v with %d problems", r.Valid, len(r.Problems))
		}
	})
}

// TestCheckModels: the models section's mistakes are each one problem at
// their line; an inline API key is refused without being echoed.
func TestCheckModels(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("sk-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	models := `
models:
  - id: local-fit
    tier: 1
    kind: local
    model: fit
    data_class_cleared: T4
    default: true
  - id: remote-best              # M1
    tier: 4                      # TIER
    kind: openai
    instances: ["ftp://x"]       # URL
    model: gpt-x
    api_key: sk-live-123         # INLINE
    context_window: 100          # CTX
    typical_latency: 2s
    data_class_cleared: T2
  - id: local-fit                # DUP
    tier: 2
    kind: local
    model: bogus                 # LOCAL
    data_class_cleared: T9       # CLASS
  - id: remote-two
    tier: 3
    kind: openai
    instances: ["https://api.example/v1"]
    model: big
    api_key_file: ` + key + `    # KEYFILE
    context_window: 8192
    data_class_cleared: T3
`
	sim, _, _ := strings.Cut(string(configs.SimYAML), "\nmodels:\n") // sim.yaml's own models: replaced
	text := sim + models
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Check(path, filepath.Join(configsDir, "capabilities"))
	out := report(r)
	if strings.Contains(out, "sk-live-123") {
		t.Fatalf("the inline key is echoed:\n%s", out)
	}
	for _, w := range []want{
		{"# TIER", "models[1].tier"}, {"# URL", "models[1].instances[0]"}, {"# INLINE", "models[1].api_key"},
		{"# CTX", "models[1].context_window"}, {"# DUP", "models[2].id"}, {"# LOCAL", "models[2].model"},
		{"# CLASS", "models[2].data_class_cleared"}, {"# KEYFILE", "models[3].api_key_file"},
	} {
		prefix := fmt.Sprintf("%s:%d: %s: ", path, lineOf(t, text, w.marker), w.key)
		if !strings.Contains(out, prefix) {
			t.Errorf("missing %q in\n%s", prefix, out)
		}
	}
	if len(r.Problems) != 8 {
		t.Errorf("%d problems, want 8:\n%s", len(r.Problems), out)
	}
}

// TestCheckOperators: an operator entry naming a role that does not
// exist, an OS user the host does not know, a missing user and a bad
// approvals_required are each one problem at their line.
func TestCheckOperators(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	ops := `
operators:
  olga:
    user: root
    roles: [operate, aprove]       # ROLE
  ghost:
    user: no-such-user-hcp-edge    # USER
    roles: [approve]
  nobody:                          # NOUSER
    roles: [release]
`
	text := strings.Replace(string(configs.SimYAML), "  approvals_required: {R4: 1}\n", "  approvals_required: {R4: 0, R9: 1}   # APPROVALS\n", 1) + ops
	if !strings.Contains(text, "# APPROVALS") {
		t.Fatal("fixture: sim.yaml's approvals_required line not found")
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Check(path, filepath.Join(configsDir, "capabilities"))
	out := report(r)
	for _, w := range []want{
		{"# ROLE", "operators.olga.roles[1]"}, {"# USER", "operators.ghost.user"}, {"# NOUSER", "operators.nobody"},
		{"# APPROVALS", "agent.approvals_required.R4"}, {"# APPROVALS", "agent.approvals_required"},
	} {
		prefix := fmt.Sprintf("%s:%d: %s", path, lineOf(t, text, w.marker), w.key)
		if !strings.Contains(out, prefix) {
			t.Errorf("missing %q in\n%s", prefix, out)
		}
	}
	if !strings.Contains(out, `"aprove"`) || !strings.Contains(out, "no-such-user-hcp-edge") {
		t.Errorf("the role and the user are not named:\n%s", out)
	}
	if len(r.Problems) != 5 {
		t.Errorf("%d problems, want 5 (one per mistake):\n%s", len(r.Problems), out)
	}
}

// TestCheckRecipesDir: agent.recipes_dir is loaded as the daemon loads
// it: a recipe the check refuses is a problem at its file and line, one
// writable by group or others a problem naming it; a good one passes.
func TestCheckRecipesDir(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	recipes := filepath.Join(dir, "recipes")
	if err := os.Mkdir(recipes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(recipes, 0o755); err != nil {
		t.Fatal(err)
	}
	anneal, ok := configs.Recipes()["recipes/h2-anneal.yaml"]
	if !ok {
		t.Fatal("no shipped recipe recipes/h2-anneal.yaml")
	}
	lab := strings.Replace(string(anneal), "name: h2-anneal", "name: lab-anneal", 1)
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(recipes, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("lab.yaml", lab, 0o644)
	cfg := filepath.Join(dir, "hcp-edge.yaml")
	text := strings.Replace(string(configs.SimYAML), "  log_level: info\n", "  log_level: info\n  recipes_dir: recipes\n", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	caps := filepath.Join(configsDir, "capabilities")
	if r := Check(cfg, caps); !r.Valid {
		t.Fatalf("a good recipe: %s", report(r))
	}
	hot := write("hot.yaml", strings.Replace(strings.Replace(lab, "name: lab-anneal", "name: hot-anneal", 1), "max: 600", "max: 1200", 1), 0o644)
	open := write("open.yaml", strings.Replace(lab, "name: lab-anneal", "name: open-anneal", 1), 0o666)
	r := Check(cfg, caps)
	rep := report(r)
	if r.Valid || !strings.Contains(rep, hot+":") || !strings.Contains(rep, "1200") || !strings.Contains(rep, open) || !strings.Contains(rep, "writable by group or others") {
		t.Fatalf("problems:\n%s", rep)
	}
}

// TestCheckQuotas (issue 24): a negative quota, default or per caller, and
// a quota that is neither a count nor "*" are problems at their file and
// line, one per mistake.
func TestCheckQuotas(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	text := strings.Replace(string(configs.SimYAML), "    submits_per_minute: 60\n", "    submits_per_minute: -1   # NEG\n", 1)
	text = strings.Replace(text, "      local: {submits_per_minute: \"*\", open_sessions: \"*\"}\n",
		"      local: {submits_per_minute: \"*\", open_sessions: \"*\"}\n      harness-beta-002:\n        open_sessions: -3    # CALLER\n        submits_per_minute: lots   # WORD\n", 1)
	for _, m := range []string{"# NEG", "# CALLER"} {
		if !strings.Contains(text, m) {
			t.Fatalf("fixture: sim.yaml's quotas not found for %s", m)
		}
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Check(path, filepath.Join(configsDir, "capabilities"))
	out := report(r)
	for _, w := range []want{
		{"# NEG", "gate.quotas.submits_per_minute"},
		{"# CALLER", "gate.quotas.callers.harness-beta-002.open_sessions"},
		{"# WORD", "gate.quotas.callers.harness-beta-002.submits_per_minute"},
	} {
		prefix := fmt.Sprintf("%s:%d: %s", path, lineOf(t, text, w.marker), w.key)
		if !strings.Contains(out, prefix) {
			t.Errorf("missing %q in\n%s", prefix, out)
		}
	}
	if len(r.Problems) != 3 {
		t.Errorf("%d problems, want 3 (one per mistake):\n%s", len(r.Problems), out)
	}
	if r.Valid {
		t.Error("a negative quota passed the check")
	}
}

// TestCheckReportsAProfileAtItsLine: a lab's profile with a problem (a
// scale of zero) in profiles_dir is reported in the profile's own file at
// its line, and the configuration is invalid.
func TestCheckReportsAProfileAtItsLine(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	prof, err := os.ReadFile(filepath.Join(configsDir, "profiles", "hcp-sim-tc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(prof), "type: int16, scale: 0.1, unit: celsius, range: [0, 1200]", "type: int16, scale: 0, unit: celsius, range: [0, 1200]", 1)
	if bad == string(prof) {
		t.Fatal("the edit changed nothing")
	}
	pfile := filepath.Join(dir, "lab-tc.yaml")
	if err := os.WriteFile(pfile, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(configs.SimYAML), "profile: hcp-sim-tc}", "profile: lab-tc}", 1)
	cfg = strings.Replace(cfg, "  outputs:\n", "  profiles_dir: "+dir+"\n  outputs:\n", 1)
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Check(path, filepath.Join(configsDir, "capabilities"))
	out := report(r)
	want := fmt.Sprintf("%s:%d: channels[setpoint].scale: ", pfile, lineOf(t, bad, "scale: 0, unit: celsius, range: [0, 1200]"))
	if r.Valid || !strings.Contains(out, want) {
		t.Fatalf("want %q in:\n%s", want, out)
	}
	t.Log(out)
}

// TestCheckReportsTheProfileCorpusAtItsLines: each broken profile of the
// profile corpus (drivers/profile/testdata/broken), put in profiles_dir and
// named by the furnace, is reported in its own file at the line and key
// its first line names, and nothing is reported in the configuration (the
// reference to a refused profile is no second problem).
func TestCheckReportsTheProfileCorpusAtItsLines(t *testing.T) {
	cleanEnv(t)
	files, _ := filepath.Glob("../../../../drivers/profile/testdata/broken/*.yaml")
	if len(files) < 20 {
		t.Fatalf("%d broken profiles", len(files))
	}
	caps := filepath.Join(configsDir, "capabilities")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want := strings.SplitN(strings.TrimPrefix(first, "# want: "), " ", 3)
			if len(want) != 3 {
				t.Fatalf("first line %q is not # want: LINE KEY MESSAGE", first)
			}
			dir := t.TempDir()
			pfile := filepath.Join(dir, filepath.Base(f))
			if err := os.WriteFile(pfile, data, 0o600); err != nil {
				t.Fatal(err)
			}
			id := strings.TrimSuffix(filepath.Base(f), ".yaml")
			cfg := strings.Replace(string(configs.SimYAML), "profile: hcp-sim-tc}", "profile: "+id+"}", 1)
			cfg = strings.Replace(cfg, "  outputs:\n", "  profiles_dir: "+dir+"\n  outputs:\n", 1)
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			r := Check(path, caps)
			out := report(r)
			prefix := fmt.Sprintf("%s:%s: %s: ", pfile, want[0], want[1])
			found := false
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, prefix) && strings.Contains(l, want[2]) {
					found = true
				}
			}
			if r.Valid || !found {
				t.Errorf("want %q …%s… in:\n%s", prefix, want[2], out)
			}
			for _, p := range r.Problems {
				if p.File != pfile {
					t.Errorf("a problem outside the profile (a follow-on): %s", p.String())
				}
			}
		})
	}
}
