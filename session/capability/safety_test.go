package capability

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/envelope"
	"hcp-edge/transport/wire"
)

// shippedEnvelope compiles the envelope of the shipped configs/sim.yaml
// against the simulated rig.
func shippedEnvelope(t *testing.T) *envelope.Envelope {
	t.Helper()
	b, err := os.ReadFile("../../configs/sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Envelope envelope.Config `yaml:"envelope"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(doc.Envelope, simrig.Spec())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestSafetyEnvelopeShape(t *testing.T) {
	r := loadConfigs(t)
	env := shippedEnvelope(t)
	cvd, err := r.Resolve("cvd-material-synthesis", "")
	if err != nil {
		t.Fatal(err)
	}
	se, err := cvd.SafetyEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	sp := se.Parameters["furnace.setpoint"]
	if sp.Max == nil || *sp.Max != 1000 || sp.Unit != "celsius" || !sp.HardLimit || sp.Min == nil || *sp.Min != 0 {
		t.Errorf("furnace.setpoint = %+v, want 0–1000 celsius, hard", sp)
	}
	h2s := se.Parameters["flow.H2S"]
	if h2s.Max == nil || *h2s.Max != 20 || h2s.Unit != "sccm" || !h2s.HardLimit || h2s.MaxRatePerMinute == nil || *h2s.MaxRatePerMinute != 60 {
		t.Errorf("flow.H2S = %+v", h2s)
	}
	if len(se.Parameters) != len(env.Config().Parameters) {
		t.Errorf("%d parameters, the envelope has %d", len(se.Parameters), len(env.Config().Parameters))
	}
	for ch, p := range se.Parameters {
		if !p.HardLimit {
			t.Errorf("%s: hard_limit false", ch)
		}
	}
	if !strings.Contains(strings.Join(se.ProhibitedActions, ","), "simultaneous_gas_mixing_without_purge") {
		t.Errorf("prohibited_actions = %v", se.ProhibitedActions)
	}
	for trip, want := range map[string]string{"over_temperature": "immediate_shutdown", "gas_leak_detected": "close_all_valves_and_alert",
		"estop": "safe_state", "comms_loss": "safe_state"} {
		if se.EmergencyProcedures[trip] != want {
			t.Errorf("emergency_procedures[%s] = %q, want %q", trip, se.EmergencyProcedures[trip], want)
		}
	}
	var il struct {
		Heater struct {
			MaxPressure string `json:"max_pressure"`
		} `json:"heater"`
		Gases map[string]json.RawMessage `json:"gases"`
	}
	if err := json.Unmarshal(se.Interlocks, &il); err != nil || il.Heater.MaxPressure != "1 mbar" || il.Gases["H2S"] == nil {
		t.Errorf("interlocks = %s (%v)", se.Interlocks, err)
	}
	if !strings.HasPrefix(se.Digest, "sha256:") || len(se.Digest) != len("sha256:")+64 {
		t.Errorf("digest = %q", se.Digest)
	}

	// L3's field names, exactly, on the wire.
	b, err := json.Marshal(se)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"parameters", "prohibited_actions", "emergency_procedures"} {
		if keys[k] == nil {
			t.Errorf("no %q in %s", k, b)
		}
	}
	if !strings.Contains(string(keys["parameters"]), `"furnace.setpoint":{"min":0,"max":1000,"unit":"celsius","hard_limit":true}`) {
		t.Errorf("parameters = %s", keys["parameters"])
	}

	// It travels in task_accepted and decodes equal.
	sid := mustUUID(t)
	acc, err := wire.NewEnvelope(&sid, &wire.TaskAccepted{SessionToken: "t", RiskLevel: "R3", SafetyEnvelope: se}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	body, err := wire.Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := wire.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	ta, err := back.TaskAccepted()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ta.SafetyEnvelope, se) {
		t.Errorf("decoded safety_envelope differs:\n got %+v\nwant %+v", ta.SafetyEnvelope, se)
	}
}

func TestSafetyEnvelopeNonPhysical(t *testing.T) {
	r := loadConfigs(t)
	rs, err := r.Resolve("rig-status", "")
	if err != nil {
		t.Fatal(err)
	}
	se, err := rs.SafetyEnvelope(shippedEnvelope(t))
	if err != nil || se != nil {
		t.Errorf("rig-status: %+v, %v; want none", se, err)
	}
	lc, _ := r.Resolve("leak-check", "")
	if se, err := lc.SafetyEnvelope(nil); err == nil || se != nil {
		t.Errorf("leak-check on a nil envelope: %+v, %v; want an error", se, err)
	}
}

func mustUUID(t *testing.T) uuid.UUID {
	t.Helper()
	id, err := uuid.NewRandom()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
