package gate

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"hcp-edge/session/audit"
	"hcp-edge/transport/wire"
)

// FuzzGate feeds arbitrary task_submit payload bytes to the gate: it must
// not panic, every rejection must be a valid task_rejected payload, and it
// must never admit inputs that fail the capability's schema or the
// semantic checks.
func FuzzGate(f *testing.F) {
	f.Add([]byte(seedPayload), false, uint8(0))
	f.Add([]byte(seedPayload), true, uint8(1))
	for _, in := range []string{
		`{"target_material": "MoS2", "substrate": "SiO2/Si", "temperature_range": {"min": 700, "max": 850, "unit": "celsius"}}`,
		`{"target_material": "MoS2", "substrate": "SiO2/Si", "temperature_range": {"min": 1000, "max": 1100, "unit": "kelvin"}}`,
		`{"target_material": "MoS2", "substrate": "SiO2/Si", "temperature_range": {"min": 750, "max": 700}}`,
		`{"target_material": "MoS2", "substrate": "SiO2/Si", "temperature_range": {"min": 700, "max": 750, "unit": "rankine"}}`,
		`{"target_material": "MoS2", "temperature_range": {"min": 700, "max": 2000}}`,
		`{"target_material": "MoS2", "substrate": "SiO2/Si", "temperature_range": {"min": 7e2, "max": 7.5e2}, "target_layers": 1}`,
		`{"target_material": "MoS2", "substrate": "SiO2/Si", "temperature_range": {"min": 700, "max": 750, "unit": "celsius"}, "sulfur_source": "H2S"}`,
		`[]`, `null`, `"x"`,
	} {
		var m map[string]any
		_ = json.Unmarshal([]byte(seedPayload), &m)
		m["inputs"] = json.RawMessage(in)
		b, _ := json.Marshal(m)
		f.Add(b, false, uint8(0))
	}
	f.Add([]byte(`{"capability": "rig-status", "caller_id": "pipeline-7", "intent": "look", "inputs": {"include": ["furnace"]}}`), true, uint8(3))
	f.Add([]byte(`{"capability": "leak-check", "capability_version": ">=1.0.0", "caller_id": "lowrisk", "intent": "x", "inputs": {}}`), false, uint8(0))
	f.Add([]byte(`{"capability": "sulfide-growth", "caller_id": "pipeline-7", "intent": "x", "inputs": {"sulfur_source": "H2S"}}`), false, uint8(0))
	f.Add([]byte(`{"capability": "cvd-material-synthesis", "caller_id": "harness-alpha-001", "intent": "x", "inputs": {}, "constraints": {"data_classification": "T4", "max_duration": "PT"}}`), false, uint8(0))
	f.Add([]byte(`{}`), false, uint8(0))
	f.Add([]byte(`not json`), false, uint8(0))

	reg := testRegistry(f)
	cfg := testConfig()
	users := map[string]string{}
	for u, c := range cfg.BrokerUsers {
		users[c] = u
	}
	rec := &discard{}
	gates := map[bool]*Gate{}
	for _, atNight := range []bool{false, true} {
		at := weekday
		if atNight {
			at = night
		}
		g, err := New(cfg, reg, rec, Opts{Clock: func() time.Time { return at }, Protection: Protection{UplinkTLS: true}})
		if err != nil {
			f.Fatal(err)
		}
		gates[atNight] = g
	}

	f.Fuzz(func(t *testing.T, payload []byte, atNight bool, running uint8) {
		env := &wire.Envelope{HCPVersion: "1.0", MessageID: uuid.New(), Type: wire.TypeTaskSubmit, Payload: payload}
		s, err := env.TaskSubmit()
		if err != nil {
			// The gate must also survive payloads the wire layer would refuse.
			var raw wire.TaskSubmit
			if json.Unmarshal(payload, &raw) != nil {
				return
			}
			s = &raw
		}
		user, ok := users[s.CallerID]
		if !ok {
			user = "alpha"
		}
		req := Request{MessageID: "m", SessionID: "s", BrokerUser: user, Submit: s, Running: int(running % 4)}
		d, err := gates[atNight].Decide(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		switch d.Outcome {
		case Rejected:
			if d.Rejection == nil {
				t.Fatal("rejected without a rejection")
			}
			if err := d.Rejection.Payload().Validate(); err != nil {
				t.Fatalf("invalid task_rejected: %v (%+v)", err, d.Rejection)
			}
			return
		case Accepted, PendingApproval:
		default:
			t.Fatalf("outcome %q", d.Outcome)
		}
		c, err := reg.Resolve(s.Capability, s.CapabilityVersion)
		if err != nil || c != d.Capability {
			t.Fatalf("admitted %v, resolve says %v %v", d.Capability, c, err)
		}
		if err := c.ValidateInput(s.Inputs); err != nil {
			t.Fatalf("admitted inputs that fail the schema: %v\n%s", err, s.Inputs)
		}
		doc, err := decodeInputs(s.Inputs)
		if err != nil {
			t.Fatalf("admitted undecodable inputs: %v", err)
		}
		if p, _ := semantic(cfg.Ranges, c.Name, doc); len(p) > 0 {
			t.Fatalf("admitted inputs failing %v", p)
		}
		acl := cfg.Callers[d.CallerID]
		if d.RiskLevel.Rank() < 1 || d.RiskLevel.Rank() > acl.MaxRiskLevel.Rank() || d.RiskLevel.Rank() > c.Safety.RiskCeiling.Rank() {
			t.Fatalf("admitted at %s (caller up to %s, ceiling %s)", d.RiskLevel, acl.MaxRiskLevel, c.Safety.RiskCeiling)
		}
		if d.DataClassification.Rank() > acl.MaxDataClassification.Rank() || (d.DataClassification.Rank() >= 3 && !d.Encrypted) {
			t.Fatalf("admitted data %s: %+v", d.DataClassification, d)
		}
		if lim := c.Constraints.ConcurrentLimit; lim > 0 && req.Running >= lim {
			t.Fatalf("admitted beyond concurrent_limit %d with %d running", lim, req.Running)
		}
		if d.MaxDuration <= 0 || (c.MaxDuration > 0 && d.MaxDuration > c.MaxDuration) {
			t.Fatalf("max duration %v", d.MaxDuration)
		}
	})
}

// discard is a Recorder that keeps nothing.
type discard struct{}

func (*discard) Append(_ context.Context, e audit.Entry) (audit.Entry, error) { return e, nil }
