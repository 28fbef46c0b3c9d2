package rigconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/configs"
	"hcp-edge/envelope"
	"hcp-edge/session/gate"
)

func TestEmbeddedSimConfigParses(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	f, err := Parse(bytes.NewReader(configs.SimYAML))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Rig.MFCs[2].Port; got != "/run/test-sim/mfc-h2s" {
		t.Errorf("mfc-h2s port = %q: ${sim_dir} not expanded from HCP_RIG_SIM_DIR", got)
	}
	if got := f.Rig.ModbusBuses["rs485"].Address; got != "/run/test-sim/modbus-rtu" {
		t.Errorf("rs485 address = %q", got)
	}
	if fs, _ := ParseFlow(f.Rig.MFCs[0].FullScale); fs.SCCM() != 500 {
		t.Errorf("Ar full scale = %v", fs)
	}
}

func TestParseRefuses(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	base := string(configs.SimYAML)
	tests := []struct {
		name, from, to, want string
	}{
		{"unknown key", "  sim_dir:", "  sim_dri:", "field sim_dri not found"},
		{"bad transport", "transport: tcp", "transport: udp", "modbus_buses.main.transport"},
		{"missing bus", "furnace: {bus: main", "furnace: {bus: nowhere", "furnace.bus: no modbus bus named \"nowhere\""},
		{"unit zero", "dio: {bus: main, unit: 2,", "dio: {bus: main, unit: 0,", "dio.unit"},
		{"bad unit id", "unit_id: C", "unit_id: c", "mfcs[2].unit_id"},
		{"bad full scale unit", "full_scale: 50 sccm", "full_scale: 50 furlongs", "mfcs[2].full_scale"},
		{"negative full scale", "full_scale: 50 sccm", "full_scale: -50 sccm", "mfcs[2].full_scale"},
		{"duplicate gas", "gas: H2S", "gas: Ar", "mfcs[2].gas: Ar configured twice"},
		{"bad mode", "mode: 19200 8E1", "mode: 19200 9Q1", "modbus_buses.rs485.mode"},
		{"gpio source", "source: sim", "source: magic", "gpio.source"},
		// Issue 41: accepted before, refused now.
		{"two mfcs of one name", "{name: mfc-h2, profile:", "{name: mfc-ar, profile:", `rig.mfcs[1].name: "mfc-ar" is also the name of mfcs[0] (the Ar controller)`},
		{"an mfc named like the spectrometer", "{name: mfc-h2, profile:", "{name: RAMAN, profile:", `rig.raman.name: "raman" is also the name of mfcs[1] (the H2 controller)`},
		{"an mfc named like the furnace", "{name: mfc-h2, profile:", "{name: furnace, profile:", `rig.mfcs[1].name: "furnace" is also the name of the furnace controller`},
		{"two mfcs on one port", `port: "${sim_dir}/mfc-h2",`, `port: "${sim_dir}/mfc-ar",`, "rig.mfcs[1].port: /run/test-sim/mfc-ar is also the port of mfcs[0] (mfc-ar)"},
		{"the gauge on an mfc's port", `port: "${sim_dir}/gauge"`, `port: "${sim_dir}/mfc-h2s"`, "rig.gauge.port: /run/test-sim/mfc-h2s is also the port of mfcs[2] (mfc-h2s)"},
		{"the furnace and the dio at one unit id", "dio: {bus: main, unit: 2,", "dio: {bus: main, unit: 1,", "rig.dio.unit: 1 is also the furnace controller's unit id on bus main"},
		{"a toxic line and no scrubber output", `safe: "on", role: exhaust_scrubber}`, `safe: "on"}`, "rig.mfcs[2].hazard: H2S is toxic, and no output of the layout is the exhaust scrubber"},
		{"a toxic line whose interlock lacks the scrubber", "require_switches_on: [scrubber]", "require_switches_on: []", "envelope.interlocks.gases.H2S.require_switches_on: H2S is toxic (rig.mfcs[2]): its interlock requires the exhaust scrubber, output scrubber, on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.from) {
				t.Fatalf("fixture: %q not in sim.yaml", tt.from)
			}
			_, err := Parse(strings.NewReader(strings.Replace(base, tt.from, tt.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestParseFlow(t *testing.T) {
	for in, want := range map[string]float64{"500 sccm": 500, "0.5 slm": 500, "2 SLM": 2000} {
		f, err := ParseFlow(in)
		if err != nil || f.SCCM() != want {
			t.Errorf("ParseFlow(%q) = %v, %v; want %v sccm", in, f, err, want)
		}
	}
	for _, in := range []string{"", "500", "sccm 500", "NaN sccm", "+Inf sccm", "0 sccm"} {
		if _, err := ParseFlow(in); err == nil {
			t.Errorf("ParseFlow(%q) accepted", in)
		}
	}
}

func TestEmbeddedEnvelopeCompilesAgainstTheDerivedSpec(t *testing.T) {
	f, err := Parse(bytes.NewReader(configs.SimYAML))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Spec(f.Rig)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(f.Envelope, spec)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range env.Coverage() {
		if len(c.Rules) == 0 {
			t.Errorf("%s: no rule", c.Channel)
		}
		seen[c.Channel] = true
	}
	for _, ch := range []string{"furnace.heater", "flow.H2S", "switch.relay", "switch.scrubber"} {
		if !seen[ch] {
			t.Errorf("coverage lacks %s", ch)
		}
	}
	// The derived spec agrees with the simulator's.
	sim := simrig.Spec()
	if len(spec.Gases) != len(sim.Gases) || len(spec.Switches) != len(sim.Switches) || len(spec.Inputs) != len(sim.Inputs) {
		t.Errorf("derived spec %+v differs from SimRigSpec %+v", spec, sim)
	}
}

func TestAgentDefaultsFromEnvironment(t *testing.T) {
	tests := []struct {
		name, stateEnv, sockEnv, wantDir, wantSock string
	}{
		{"defaults", "", "", DefaultStateDir, DefaultStateDir + "/control.sock"},
		{"state dir", "/run/x", "", "/run/x", "/run/x/control.sock"},
		{"socket", "/run/x", "/run/y.sock", "/run/x", "/run/y.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HCP_STATE_DIR", tt.stateEnv)
			t.Setenv("HCP_CONTROL_SOCKET", tt.sockEnv)
			f, err := Parse(bytes.NewReader(configs.SimYAML))
			if err != nil {
				t.Fatal(err)
			}
			if f.Agent.StateDir != tt.wantDir || f.Agent.ControlSocket != tt.wantSock {
				t.Errorf("state %q socket %q, want %q %q", f.Agent.StateDir, f.Agent.ControlSocket, tt.wantDir, tt.wantSock)
			}
			if f.Monitor.FurnaceEvery != 50*time.Millisecond || f.Monitor.KickEvery != time.Second {
				t.Errorf("monitor = %+v", f.Monitor)
			}
		})
	}
}

func TestParseRefusesAgentAndMonitor(t *testing.T) {
	base := string(configs.SimYAML)
	tests := []struct {
		name, from, to, want string
	}{
		{"unknown envelope key", "  reactive_gases:", "  reactive_gasses:", "field reactive_gasses not found"},
		{"unknown monitor key", "  kick_every: 1s", "  kick_evry: 1s", "field kick_evry not found"},
		{"kick too slow", "  kick_every: 1s", "  kick_every: 4s", "monitor.kick_every"},
		{"watchdog out of range", "  watchdog_timeout: 5s", "  watchdog_timeout: 90s", "monitor.watchdog_timeout"},
		{"policy", "shutdown_policy: safe_state", "shutdown_policy: yolo", "agent.shutdown_policy"},
		{"log format", "log_format: text", "log_format: xml", "agent.log_format"},
		{"time scale on a real rig", `gpio: {source: sim, socket: "${sim_dir}/control.sock"}`,
			`gpio: {source: host, estop_pin: GPIO17, leak_pin: GPIO27, relay_pin: GPIO22, relay_feedback_pin: GPIO23}`,
			"agent.time_scale: 300 with gpio source host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.from) {
				t.Fatalf("fixture: %q not in sim.yaml", tt.from)
			}
			_, err := Parse(strings.NewReader(strings.Replace(base, tt.from, tt.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// TestDashboardListen: loopback by default; a LAN address only with
// dashboard_allow_lan; allow_lan alone is a mistake.
func TestDashboardListen(t *testing.T) {
	base := string(configs.SimYAML)
	tests := []struct {
		name, agent, want string
	}{
		{"off", "", ""},
		{"loopback", "  dashboard_listen: 127.0.0.1:9465\n", ""},
		{"localhost", "  dashboard_listen: localhost:9465\n", ""},
		{"LAN without allow", "  dashboard_listen: 0.0.0.0:9465\n", "agent.dashboard_listen"},
		{"LAN allowed", "  dashboard_listen: 192.0.2.10:9465\n  dashboard_allow_lan: true\n", ""},
		{"bad port", "  dashboard_listen: 127.0.0.1:0\n", "agent.dashboard_listen"},
		{"bad port LAN", "  dashboard_listen: 192.0.2.10:99999\n  dashboard_allow_lan: true\n", "agent.dashboard_listen"},
		{"allow without listen", "  dashboard_allow_lan: true\n", "agent.dashboard_allow_lan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(strings.Replace(base, "\nagent:\n", "\nagent:\n"+tt.agent, 1)))
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestQuotasDecodeOverDefaults (issue 24): without a quotas section the
// lab defaults apply; a section naming one quota keeps the other default;
// a caller's override and "*" decode; a negative quota is refused.
func TestQuotasDecodeOverDefaults(t *testing.T) {
	base := string(configs.SimYAML)
	i := strings.Index(base, "  quotas:\n")
	j := strings.Index(base, "  # The simulated rig has no lab hours")
	if i < 0 || j < i {
		t.Fatal("fixture: sim.yaml's quotas section not found")
	}
	parse := func(text string) gate.Quotas {
		t.Helper()
		f, err := Parse(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return f.Gate.Quotas
	}
	if q := parse(base[:i] + base[j:]); q.SubmitsPerMinute != gate.Limit(60) || q.OpenSessions != gate.Limit(10) || len(q.Callers) != 0 {
		t.Errorf("no section: %+v, want the defaults", q)
	}
	q := parse(base[:i] + "  quotas:\n    open_sessions: 3\n" + base[j:])
	if q.SubmitsPerMinute != gate.Limit(60) || q.OpenSessions != gate.Limit(3) {
		t.Errorf("open_sessions only: %+v", q)
	}
	q = parse(base)
	s, o := q.For("local")
	if s != gate.Unlimited || o != gate.Unlimited {
		t.Errorf("sim.yaml's local: %v %v, want * *", s, o)
	}
	if s, o := q.For("harness-beta-002"); s != gate.Limit(60) || o != gate.Limit(10) {
		t.Errorf("sim.yaml's beta: %v %v, want the defaults", s, o)
	}
	if _, err := Parse(strings.NewReader(strings.Replace(base, "    open_sessions: 10\n", "    open_sessions: -1\n", 1))); err == nil ||
		!strings.Contains(err.Error(), "open_sessions") && !strings.Contains(err.Error(), "-1") {
		t.Errorf("negative quota: err = %v", err)
	}
}

// TestRefusedProfileIsOneProblem: a lab's profile that does not parse is
// reported in its own file at its line, and the configuration's reference
// to it is no second problem ("no profile ..." at the rig's line).
func TestRefusedProfileIsOneProblem(t *testing.T) {
	dir := t.TempDir()
	// A new user's first profile: the channels in block style, one key
	// indented by three spaces (line 15).
	prof := "model: Lab TC\nmanual: {document: lab notes, revision: \"1\"}\nfamily: modbus\nkind: temperature_controller\nlacks: [comms_watchdog]\nchannels:\n" +
		"  - name: pv\n    table: input_register\n    address: 0\n    type: int16\n    access: read\n    role: process_value\n" +
		"  - name: sp\n    table: holding_register\n   address: 1\n    type: int16\n"
	if err := os.WriteFile(filepath.Join(dir, "lab-tc.yaml"), []byte(prof), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(configs.SimYAML), "profile: hcp-sim-tc}", "profile: lab-tc}", 1)
	cfg = strings.Replace(cfg, "  outputs:\n", "  profiles_dir: "+dir+"\n  outputs:\n", 1)
	_, err := Parse(strings.NewReader(cfg))
	pp := ProfileProblems(err)
	if len(pp) != 1 || pp[0].Line != 15 || pp[0].File != filepath.Join(dir, "lab-tc.yaml") {
		t.Fatalf("want one problem at lab-tc.yaml:15, got %v", err)
	}
	if strings.Contains(err.Error(), "rig.furnace.profile") {
		t.Errorf("a follow-on at the configuration's furnace line: %v", err)
	}
}

// TestLoadSyntaxErrorAtItsLine: the daemon's own reading of the
// configuration names the line of a mis-indented key, not the line of the
// mapping around it (4 lines above, for this one).
func TestLoadSyntaxErrorAtItsLine(t *testing.T) {
	text := strings.Replace(string(configs.SimYAML), "        require_inputs: {door_closed: true, exhaust_ok", "       require_inputs: {door_closed: true, exhaust_ok", 1)
	line := 0
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "       require_inputs: {door_closed: true, exhaust_ok") {
			line = i + 1
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if want := fmt.Sprintf("yaml: line %d: did not find expected key", line); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestLoadNamesNoGoType: a key the configuration does not know, and a
// value of the wrong kind, are said without the Go types behind them.
func TestLoadNamesNoGoType(t *testing.T) {
	text := strings.Replace(string(configs.SimYAML), "  sim_dir:", "  sim_dri:", 1)
	text = strings.Replace(text, "kick_every: 1s", "kick_every: [1s]", 1)
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "unknown key sim_dri") || strings.Contains(err.Error(), "rigconfig.") ||
		strings.Contains(err.Error(), "time.Duration") || strings.Contains(err.Error(), "!!") {
		t.Fatalf("err = %v", err)
	}
	t.Log(err)
}

// TestGateHazardsVocabulary: the gate's hazards escalation speaks the
// layout's vocabulary (rig.Hazard); a class outside it is refused at its
// key, which config check places at its line.
func TestGateHazardsVocabulary(t *testing.T) {
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	const from = "gate:\n"
	base := string(configs.SimYAML)
	if !strings.Contains(base, from) {
		t.Fatalf("fixture: %q not in sim.yaml", from)
	}
	rule := func(class string) string {
		return strings.Replace(base, from, from+"  escalations:\n    - {name: gases, path: gas, hazards: ["+class+"], level: R4}\n", 1)
	}
	if _, err := Parse(strings.NewReader(rule("flammable"))); err != nil {
		t.Fatalf("a known class refused: %v", err)
	}
	_, err := Parse(strings.NewReader(rule("spicy")))
	if want := `gate.escalations[0].hazards[0]: "spicy" is not a hazard class (inert, toxic, flammable, oxidising or corrosive)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to mention %q", err, want)
	}
}
