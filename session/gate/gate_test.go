package gate

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/device/catalog"
	"hcp-edge/device/rig"
	"hcp-edge/session/audit"
	"hcp-edge/session/capability"
	"hcp-edge/transport/wire"
)

// sulfideDecl is a test capability whose inputs name a sulfur source, for
// the H2S escalation rule.
const sulfideDecl = `{"capability": {
  "name": "sulfide-growth", "version": "0.9.0", "description": "test capability",
  "input_schema": {"type": "object", "required": ["sulfur_source"], "additionalProperties": false,
    "properties": {"sulfur_source": {"enum": ["S", "H2S"]},
      "temperature_range": {"type": "object", "properties": {"min": {"type": "number"}, "max": {"type": "number"},
        "unit": {"type": "string"}}}}},
  "output_schema": {"type": "object"},
  "safety": {"risk_ceiling": "R4", "requires_human_approval": false, "involves_physical_resources": true,
    "resource_types": ["gas_supply"], "hazard_categories": ["toxic_gas"]}}}`

func testRegistry(t testing.TB) *capability.Registry {
	t.Helper()
	r, err := capability.LoadDir("../../configs/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	extra, err := capability.Parse([]byte(sulfideDecl))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := capability.NewRegistry(append(r.All(), extra)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.BrokerUsers = map[string]string{"alpha": "harness-alpha-001", "pipe": "pipeline-7", "lim": "limited",
		"low": "lowrisk", "ghost": "nobody"}
	cfg.Callers = map[string]CallerACL{
		"harness-alpha-001": {Capabilities: []string{"*"}, MaxRiskLevel: capability.R4, MaxDataClassification: T4},
		"pipeline-7":        {Capabilities: []string{"cvd-material-synthesis", "leak-check", "rig-status", "sulfide-growth"}, MaxRiskLevel: capability.R3, MaxDataClassification: T2},
		"limited":           {Capabilities: []string{"rig-status"}, MaxRiskLevel: capability.R4, MaxDataClassification: T4},
		"lowrisk":           {Capabilities: []string{"*"}, MaxRiskLevel: capability.R2, MaxDataClassification: T4},
	}
	cfg.Escalations = append(cfg.Escalations, Escalation{Name: "h2s_precursor", Capability: "sulfide-growth",
		Path: "sulfur_source", Equals: []string{"H2S"}, Level: capability.R4})
	return cfg
}

// memRecorder is an in-memory Recorder.
type memRecorder struct {
	mu      sync.Mutex
	entries []audit.Entry
	fail    error
}

func (m *memRecorder) Append(_ context.Context, e audit.Entry) (audit.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return audit.Entry{}, m.fail
	}
	m.entries = append(m.entries, e)
	return e, nil
}

var (
	weekday = time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC) // a Wednesday
	night   = time.Date(2026, 3, 14, 2, 0, 0, 0, time.UTC)  // a Saturday
)

// seedPayload is the task_submit payload of seeds/002 (MoS2 on SiO2/Si).
const seedPayload = `{
  "capability": "cvd-material-synthesis", "capability_version": "1.x", "caller_id": "harness-alpha-001",
  "intent": "Synthesize monolayer MoS2 on SiO2/Si substrate and perform Raman spectroscopy characterization",
  "inputs": {"target_material": "MoS2", "substrate": "SiO2/Si",
    "temperature_range": {"min": 700, "max": 750, "unit": "celsius"}},
  "constraints": {"max_duration": "PT72H", "confidence_threshold": 0.95, "data_classification": "T2"},
  "expected_output": {"format": "raman_spectrum_analysis", "required_fields": ["peak_distance", "layer_count", "confidence"],
    "schema": {"type": "object", "required": ["peak_distance", "layer_count"],
      "properties": {"peak_distance": {"type": "number"}, "layer_count": {"type": "integer"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}},
  "context": {"purpose": "Verify growth parameters for single-layer MoS2 synthesis optimization",
    "references": ["doi:10.1021/nl903868w"]}}`

func seed(t testing.TB) *wire.TaskSubmit {
	t.Helper()
	var s wire.TaskSubmit
	if err := json.Unmarshal([]byte(seedPayload), &s); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return &s
}

func newGate(t testing.TB, at time.Time, prot Protection) (*Gate, *memRecorder) {
	t.Helper()
	rec := &memRecorder{}
	g, err := New(testConfig(), testRegistry(t), rec, Opts{Clock: func() time.Time { return at }, Protection: prot})
	if err != nil {
		t.Fatal(err)
	}
	return g, rec
}

func TestDecide(t *testing.T) {
	type edit func(r *Request)
	as := func(user, caller string) edit {
		return func(r *Request) { r.BrokerUser, r.Submit.CallerID = user, caller }
	}
	inputs := func(js string) edit { return func(r *Request) { r.Submit.Inputs = json.RawMessage(js) } }
	capab := func(name, rng, in string) edit {
		return func(r *Request) {
			r.Submit.Capability, r.Submit.CapabilityVersion, r.Submit.Inputs = name, rng, json.RawMessage(in)
			r.Submit.Constraints = nil
			r.Submit.ExpectedOutput = nil // the seed's asks for the synthesis' Raman fields
		}
	}
	class := func(c string) edit { return func(r *Request) { r.Submit.Constraints.DataClassification = c } }
	temp := func(lo, hi, unit string) edit {
		return inputs(`{"target_material": "MoS2", "substrate": "SiO2/Si", "temperature_range": {"min": ` + lo + `, "max": ` + hi + `, "unit": "` + unit + `"}}`)
	}
	pipe := as("pipe", "pipeline-7")
	full := []catalog.Permission{catalog.PermissionRead, catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas}

	tests := []struct {
		name       string
		edits      []edit
		at         time.Time
		prot       Protection
		outcome    Outcome
		code       ReasonCode
		risk       capability.RiskLevel
		suggestion string
		paths      []string
		sentinel   error
		check      func(t *testing.T, d Decision)
	}{
		{name: "seed MoS2 waits for approval at R3", outcome: PendingApproval, risk: capability.R3,
			check: func(t *testing.T, d Decision) {
				if d.DataClassification != T2 || !d.AuditedAccess || d.Encrypted || !slices.Equal(d.Permissions, full) ||
					d.MaxDuration != 72*time.Hour || d.AbortTimeout != 5*time.Minute || d.CallerID != "harness-alpha-001" ||
					d.Capability.Ref() != (capability.Ref{Name: "cvd-material-synthesis", Version: "1.0.0"}) {
					t.Fatalf("%+v", d)
				}
			}},
		{name: "seed by the R3 pipeline", edits: []edit{pipe}, outcome: PendingApproval, risk: capability.R3},
		{name: "rig-status accepted", edits: []edit{capab("rig-status", "", `{}`)}, outcome: Accepted, risk: capability.R1,
			check: func(t *testing.T, d Decision) {
				if !slices.Equal(d.Permissions, []catalog.Permission{catalog.PermissionRead}) || d.AuditedAccess || d.DataClassification != T1 || d.MaxDuration != time.Minute {
					t.Fatalf("%+v", d)
				}
			}},
		{name: "leak-check accepted without approval", edits: []edit{capab("leak-check", "^1.0", `{"hold_seconds": 60}`)}, outcome: Accepted, risk: capability.R2},
		{name: "task max_duration bounded by the capability", edits: []edit{func(r *Request) { r.Submit.Constraints.MaxDuration = "P30D" }},
			outcome: PendingApproval, risk: capability.R3, check: func(t *testing.T, d Decision) {
				if d.MaxDuration != 72*time.Hour {
					t.Fatal(d.MaxDuration)
				}
			}},
		{name: "shorter task max_duration kept", edits: []edit{func(r *Request) { r.Submit.Constraints.MaxDuration = "PT4H" }},
			outcome: PendingApproval, risk: capability.R3, check: func(t *testing.T, d Decision) {
				if d.MaxDuration != 4*time.Hour {
					t.Fatal(d.MaxDuration)
				}
			}},

		// expected_output the capability can meet (expected.go)
		{name: "expected_output that does not compile", edits: []edit{func(r *Request) { r.Submit.ExpectedOutput.Schema = json.RawMessage(`{"type":"objekt"}`) }},
			outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/expected_output/schema"}, sentinel: capability.ErrInvalidInput},
		{name: "expected_output requiring what is never produced", edits: []edit{func(r *Request) {
			r.Submit.ExpectedOutput.Schema = json.RawMessage(`{"type":"object","required":["peak_distance","bandgap_ev"]}`)
		}}, outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/expected_output/schema/required/1"}, sentinel: ErrInvalidInput},
		{name: "expected_output of the wrong type", edits: []edit{func(r *Request) {
			r.Submit.ExpectedOutput.Schema = json.RawMessage(`{"properties":{"layer_count":{"type":"string"}}}`)
		}}, outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/expected_output/schema/properties/layer_count/type"}},

		// unauthorized
		{name: "no broker user", edits: []edit{as("", "harness-alpha-001")}, outcome: Rejected, code: ReasonUnauthorized, sentinel: ErrUnauthorized},
		{name: "unknown broker user", edits: []edit{as("mallory", "harness-alpha-001")}, outcome: Rejected, code: ReasonUnauthorized, sentinel: ErrUnauthorized},
		{name: "broker user claims another caller", edits: []edit{as("pipe", "harness-alpha-001")}, outcome: Rejected, code: ReasonUnauthorized, sentinel: ErrUnauthorized},

		// capability known
		{name: "unknown capability", edits: []edit{capab("teleport", "", `{}`)}, outcome: Rejected, code: ReasonInvalidInput,
			paths: []string{"/capability"}, sentinel: ErrUnknownCapability},
		{name: "no version in range", edits: []edit{capab("rig-status", ">=2.0.0", `{}`)}, outcome: Rejected, code: ReasonInvalidInput,
			paths: []string{"/capability_version"}, sentinel: ErrUnknownCapability},
		{name: "bad version range", edits: []edit{capab("rig-status", "one point oh", `{}`)}, outcome: Rejected, code: ReasonInvalidInput,
			paths: []string{"/capability_version"}, sentinel: capability.ErrBadRange},

		// forbidden
		{name: "caller without ACL", edits: []edit{as("ghost", "nobody")}, outcome: Rejected, code: ReasonForbidden, sentinel: ErrForbidden},
		{name: "capability not in ACL", edits: []edit{as("lim", "limited")}, outcome: Rejected, code: ReasonForbidden},
		{name: "floor above caller's risk", edits: []edit{as("low", "lowrisk")}, outcome: Rejected, code: ReasonForbidden},
		{name: "classification above caller's", edits: []edit{pipe, class("T3")}, outcome: Rejected, code: ReasonForbidden},
		{name: "T3 without TLS and key", edits: []edit{class("T3")}, outcome: Rejected, code: ReasonForbidden, sentinel: ErrUnprotected},
		{name: "T4 with TLS, no key", edits: []edit{class("T4")}, prot: Protection{UplinkTLS: true}, outcome: Rejected, code: ReasonForbidden, sentinel: ErrUnprotected},
		{name: "T4 with TLS and key", edits: []edit{class("T4")}, prot: Protection{UplinkTLS: true, AtRestKey: true}, outcome: PendingApproval, risk: capability.R3,
			check: func(t *testing.T, d Decision) {
				if !d.Encrypted || !d.AuditedAccess {
					t.Fatalf("%+v", d)
				}
			}},
		{name: "unknown classification", edits: []edit{class("T9")}, outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/constraints/data_classification"}},

		// invalid_input
		{name: "missing substrate, max out of schema range", edits: []edit{inputs(`{"target_material": "MoS2", "temperature_range": {"min": 700, "max": 2000}}`)},
			outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/inputs", "/inputs/temperature_range/max"}, sentinel: capability.ErrInvalidInput},
		{name: "unknown input", edits: []edit{inputs(`{"target_material": "MoS2", "substrate": "SiO2/Si", "pressure": 3}`)},
			outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/inputs"}},
		{name: "no inputs", edits: []edit{inputs(``)}, outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/inputs"}},
		{name: "inputs not an object", edits: []edit{inputs(`[1,2]`)}, outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/inputs"}},
		{name: "min above max", edits: []edit{temp("750", "700", "celsius")}, outcome: Rejected, code: ReasonInvalidInput,
			paths: []string{"/inputs/temperature_range/max", "/inputs/temperature_range/min"}},
		{name: "min above max in kelvin", edits: []edit{temp("1000", "990", "kelvin")}, outcome: Rejected, code: ReasonInvalidInput,
			paths: []string{"/inputs/temperature_range/max", "/inputs/temperature_range/min"}},
		{name: "unparseable max_duration", edits: []edit{func(r *Request) { r.Submit.Constraints.MaxDuration = "72 hours" }},
			outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/constraints/max_duration"}},
		{name: "zero max_duration", edits: []edit{func(r *Request) { r.Submit.Constraints.MaxDuration = "PT0S" }},
			outcome: Rejected, code: ReasonInvalidInput, paths: []string{"/constraints/max_duration"}},

		// risk_too_high and suggestions
		{name: "850 °C for an R3 caller", edits: []edit{pipe, temp("700", "850", "celsius")}, outcome: Rejected, code: ReasonRiskTooHigh,
			risk: capability.R4, suggestion: "reduce temperature_range.max below 800 °C to qualify for R3"},
		{name: "exactly 800 °C", edits: []edit{pipe, temp("700", "800", "celsius")}, outcome: Rejected, code: ReasonRiskTooHigh,
			risk: capability.R4, suggestion: "reduce temperature_range.max below 800 °C to qualify for R3"},
		{name: "799 °C qualifies", edits: []edit{pipe, temp("700", "799", "celsius")}, outcome: PendingApproval, risk: capability.R3},
		{name: "1100 K for an R3 caller", edits: []edit{pipe, temp("1000", "1100", "kelvin")}, outcome: Rejected, code: ReasonRiskTooHigh,
			risk: capability.R4, suggestion: "reduce temperature_range.max below 800 °C (1073.15 K) to qualify for R3"},
		{name: "1050 K qualifies", edits: []edit{pipe, temp("1000", "1050", "kelvin")}, outcome: PendingApproval, risk: capability.R3},
		{name: "850 °C for an R4 caller", edits: []edit{temp("700", "850", "celsius")}, outcome: PendingApproval, risk: capability.R4,
			check: func(t *testing.T, d Decision) {
				if len(d.Fired) != 1 || d.Fired[0].Rule != "high_temperature" {
					t.Fatalf("fired %+v", d.Fired)
				}
			}},
		{name: "unattended", edits: []edit{pipe}, at: night, outcome: Rejected, code: ReasonRiskTooHigh, risk: capability.R4,
			suggestion: "submit during attended hours (mon,tue,wed,thu,fri 08:00–18:00 UTC) to qualify for R3"},
		{name: "unattended and hot", edits: []edit{pipe, temp("700", "900", "celsius")}, at: night, outcome: Rejected, code: ReasonRiskTooHigh, risk: capability.R4,
			suggestion: "reduce temperature_range.max below 800 °C and submit during attended hours (mon,tue,wed,thu,fri 08:00–18:00 UTC) to qualify for R3"},
		{name: "unattended read-only task", edits: []edit{pipe, capab("rig-status", "", `{}`)}, at: night, outcome: Accepted, risk: capability.R1},
		{name: "shared equipment busy", edits: []edit{pipe, func(r *Request) { r.BusyResources = []string{"vacuum_system", "sensors"} }},
			outcome: Rejected, code: ReasonRiskTooHigh, risk: capability.R4, suggestion: "wait until vacuum_system is free to qualify for R3"},
		{name: "above the capability's ceiling", edits: []edit{capab("leak-check", "", `{}`), func(r *Request) { r.BusyResources = []string{"vacuum_system"} }},
			outcome: Rejected, code: ReasonRiskTooHigh, risk: capability.R4, suggestion: "wait until vacuum_system is free to qualify for R2",
			check: func(t *testing.T, d Decision) {
				if !strings.Contains(d.Rejection.Message, "risk ceiling R2 of leak-check") {
					t.Fatal(d.Rejection.Message)
				}
			}},
		{name: "H2S for an R3 caller", edits: []edit{pipe, capab("sulfide-growth", "0.x", `{"sulfur_source": "H2S"}`)},
			outcome: Rejected, code: ReasonRiskTooHigh, risk: capability.R4, suggestion: "use a sulfur_source other than H2S to qualify for R3"},
		{name: "sulfur for an R3 caller", edits: []edit{pipe, capab("sulfide-growth", "0.x", `{"sulfur_source": "S"}`)},
			outcome: Accepted, risk: capability.R3},

		// resource_unavailable
		{name: "second synthesis", edits: []edit{func(r *Request) { r.Running = 1 }}, outcome: Rejected, code: ReasonResourceUnavailable, sentinel: ErrResourceUnavailable},
		{name: "fourth rig-status", edits: []edit{capab("rig-status", "", `{}`), func(r *Request) { r.Running = 3 }}, outcome: Accepted, risk: capability.R1},
		{name: "fifth rig-status", edits: []edit{capab("rig-status", "", `{}`), func(r *Request) { r.Running = 4 }}, outcome: Rejected, code: ReasonResourceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := tt.at
			if at.IsZero() {
				at = weekday
			}
			g, rec := newGate(t, at, tt.prot)
			req := Request{MessageID: "m-1", SessionID: "s-1", BrokerUser: "alpha", Submit: seed(t)}
			for _, e := range tt.edits {
				e(&req)
			}
			d, err := g.Decide(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tt.outcome {
				t.Fatalf("outcome %s, want %s (%v)", d.Outcome, tt.outcome, d.Rejection)
			}
			if len(rec.entries) != 1 || rec.entries[0].Kind != audit.KindGate || rec.entries[0].SessionID != "s-1" {
				t.Fatalf("audit %+v", rec.entries)
			}
			var det auditDetail
			if err := json.Unmarshal([]byte(rec.entries[0].Detail), &det); err != nil || det.Outcome != tt.outcome || det.ReasonCode != tt.code {
				t.Fatalf("audit detail %s (%v)", rec.entries[0].Detail, err)
			}
			if tt.outcome == Rejected {
				r := d.Rejection
				if r == nil || r.Code != tt.code || r.Message == "" {
					t.Fatalf("rejection %+v, want %s", r, tt.code)
				}
				if !errors.Is(r, codeSentinel[tt.code]) || (tt.sentinel != nil && !errors.Is(r, tt.sentinel)) {
					t.Fatalf("%v does not match its sentinels", r)
				}
				if r.AssessedRiskLevel != tt.risk || r.Suggestion != tt.suggestion {
					t.Fatalf("risk %q suggestion %q, want %q %q", r.AssessedRiskLevel, r.Suggestion, tt.risk, tt.suggestion)
				}
				if tt.paths != nil && !slices.Equal(r.Paths, tt.paths) {
					t.Fatalf("paths %q, want %q", r.Paths, tt.paths)
				}
				if err := r.Payload().Validate(); err != nil {
					t.Fatalf("task_rejected payload: %v", err)
				}
			} else {
				if d.Rejection != nil || d.RiskLevel != tt.risk || len(d.Permissions) == 0 || d.MaxDuration <= 0 {
					t.Fatalf("%+v, want risk %s", d, tt.risk)
				}
				if err := d.Capability.ValidateInput(req.Submit.Inputs); err != nil {
					t.Fatalf("admitted invalid inputs: %v", err)
				}
			}
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}

func TestNilSubmit(t *testing.T) {
	g, rec := newGate(t, weekday, Protection{})
	d, err := g.Decide(context.Background(), Request{MessageID: "m-9", BrokerUser: "alpha"})
	if err != nil || d.Outcome != Rejected || d.Rejection.Code != ReasonInvalidInput || rec.entries[0].SessionID != "m-9" {
		t.Fatalf("%+v %v %+v", d, err, rec.entries)
	}
}

func TestRecorderFailure(t *testing.T) {
	rec := &memRecorder{fail: errors.New("disk full")}
	g, err := New(testConfig(), testRegistry(t), rec, Opts{Clock: func() time.Time { return weekday }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Decide(context.Background(), Request{MessageID: "m", BrokerUser: "alpha", Submit: seed(t)}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
}

func TestAuditChain(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	log, err := audit.Open(db, audit.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(testConfig(), testRegistry(t), log, Opts{Clock: func() time.Time { return weekday }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := g.Decide(ctx, Request{MessageID: "m-1", SessionID: "s-1", BrokerUser: "alpha", Submit: seed(t)}); err != nil {
		t.Fatal(err)
	}
	bad := seed(t)
	bad.CallerID = "pipeline-7"
	if _, err := g.Decide(ctx, Request{MessageID: "m-2", BrokerUser: "alpha", Submit: bad}); err != nil {
		t.Fatal(err)
	}
	if n, err := log.Verify(ctx); err != nil || n != 2 {
		t.Fatalf("verify: %d %v", n, err)
	}
	for sid, want := range map[string]string{"s-1": `"outcome":"pending_approval"`, "m-2": `"reason_code":"unauthorized"`} {
		es, err := log.Replay(ctx, sid)
		if err != nil || len(es) != 1 || es[0].Kind != audit.KindGate || !strings.Contains(es[0].Detail, want) {
			t.Fatalf("replay %s: %+v %v", sid, es, err)
		}
	}
}

func TestConfigRefused(t *testing.T) {
	hot := 900.0
	tests := []struct {
		name string
		edit func(c *Config)
	}{
		{"caller risk", func(c *Config) { c.Callers["x"] = CallerACL{MaxRiskLevel: "R9", MaxDataClassification: T1} }},
		{"caller class", func(c *Config) { c.Callers["x"] = CallerACL{MaxRiskLevel: "R1", MaxDataClassification: "secret"} }},
		{"empty user", func(c *Config) { c.BrokerUsers[""] = "x" }},
		{"floor", func(c *Config) { c.Capabilities["x"] = CapabilityPolicy{RiskFloor: "high"} }},
		{"permission", func(c *Config) { c.Capabilities["x"] = CapabilityPolicy{Permissions: []catalog.Permission{"rig.all"}} }},
		{"rule without test", func(c *Config) { c.Escalations = append(c.Escalations, Escalation{Name: "r", Path: "a", Level: "R4"}) }},
		{"rule with both tests", func(c *Config) {
			c.Escalations = append(c.Escalations, Escalation{Name: "r", Path: "a", AtOrAbove: &hot, Equals: []string{"x"}, Level: "R4"})
		}},
		{"rule unit", func(c *Config) {
			c.Escalations = append(c.Escalations, Escalation{Name: "r", Path: "a", AtOrAbove: &hot, Unit: "rankine", Level: "R4"})
		}},
		{"rule level", func(c *Config) {
			c.Escalations = append(c.Escalations, Escalation{Name: "r", Path: "a", AtOrAbove: &hot})
		}},
		{"window order", func(c *Config) { c.Unattended.Attended[0].End = "07:00" }},
		{"window day", func(c *Config) { c.Unattended.Attended[0].Days = []string{"someday"} }},
		{"timezone", func(c *Config) { c.Unattended.Timezone = "Mars/Olympus" }},
		{"shared level", func(c *Config) { c.SharedEquipment.Level = "" }},
		{"rule hazard outside the vocabulary", func(c *Config) {
			c.Escalations = append(c.Escalations, Escalation{Name: "r", Path: "a", Hazards: []rig.Hazard{"spicy"}, Level: "R4"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			tt.edit(&c)
			if _, err := New(c, testRegistry(t), &memRecorder{}, Opts{}); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestTimezone(t *testing.T) {
	c := testConfig()
	c.Unattended.Timezone = "Europe/Berlin"
	// 07:30 UTC on a Wednesday is 08:30 in Berlin (CET, winter): attended.
	at := time.Date(2026, 1, 14, 7, 30, 0, 0, time.UTC)
	g, err := New(c, testRegistry(t), &memRecorder{}, Opts{Clock: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	s := seed(t)
	s.CallerID = "pipeline-7"
	d, err := g.Decide(context.Background(), Request{MessageID: "m", BrokerUser: "pipe", Submit: s})
	if err != nil || d.Outcome != PendingApproval {
		t.Fatalf("%+v %v", d.Rejection, err)
	}
}

func TestDerived(t *testing.T) {
	reg := testRegistry(t)
	tests := []struct {
		name  string
		floor capability.RiskLevel
		perms []catalog.Permission
	}{
		{"cvd-material-synthesis", capability.R3, []catalog.Permission{catalog.PermissionGas, catalog.PermissionOperate, catalog.PermissionRead}},
		{"leak-check", capability.R2, []catalog.Permission{catalog.PermissionOperate, catalog.PermissionRead}},
		{"rig-status", capability.R1, []catalog.Permission{catalog.PermissionRead}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := reg.Resolve(tt.name, "")
			if err != nil {
				t.Fatal(err)
			}
			if f := derivedFloor(c); f != tt.floor {
				t.Fatalf("floor %s", f)
			}
			if p := derivedPermissions(c); !slices.Equal(p, tt.perms) {
				t.Fatalf("permissions %v", p)
			}
		})
	}
}
