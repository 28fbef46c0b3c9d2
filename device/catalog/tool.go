package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"hcp-edge/device"
)

// Permission names what a caller must hold to invoke a tool (seeds/004 §3.5).
type Permission string

// The rig's permissions.
const (
	// PermissionRead: read the rig's state (snapshots).
	PermissionRead Permission = "rig.read"
	// PermissionMeasure: run a measurement (laser on, no effect on the process).
	PermissionMeasure Permission = "rig.measure"
	// PermissionOperate: move non-gas actuators (furnace, pump, valves, vent).
	PermissionOperate Permission = "rig.operate"
	// PermissionGas: admit process gases, including toxic ones.
	PermissionGas Permission = "rig.gas"
)

// RiskLevel is the HCP risk level of a tool's effect, R1 (lowest) to R4.
type RiskLevel string

// Risk levels of seeds/000.
const (
	R1 RiskLevel = "R1"
	R2 RiskLevel = "R2"
	R3 RiskLevel = "R3"
	R4 RiskLevel = "R4"
)

// RateLimit caps how often a tool may be invoked: at most MaxCalls in any
// window of length Per. The zero value means no limit.
type RateLimit struct {
	MaxCalls int
	Per      time.Duration
}

// Safety is a tool's safety metadata (seeds/004 §1.2 "safety").
type Safety struct {
	Permission  Permission // permission_required
	RiskLevel   RiskLevel  // static floor of the risk assessment
	Dangerous   bool       // requires the envelope's checks (every actuator tool)
	SideEffects []string   // what it changes, e.g. "furnace_temperature"
	Reversible  bool
	Idempotent  bool
	RateLimit   RateLimit
}

// Performance is a tool's performance metadata (seeds/004 §1.2 "performance").
type Performance struct {
	TypicalLatency time.Duration
	Timeout        time.Duration // the longest an invocation may take before it is abandoned
}

// Tool is one tool specification. The zero value is not usable: fill it and
// Register it; the Registry compiles its schemas, and the Tools that List,
// Describe and Lookup return validate inputs and outputs.
//
// Its JSON form follows seeds/004 §1.2 (tool_id, name, version, ...;
// durations in seconds).
type Tool struct {
	ID           string          // UUID, unique in a registry
	Name         string          // dotted lower-case, e.g. "furnace.set_setpoint"
	Version      string          // semantic version, e.g. "1.0.0"
	Description  string          // one line
	Category     string          // e.g. "actuation", "measurement", "observation"
	Capabilities []string        // semantic tags for discovery
	InputSchema  json.RawMessage // JSON Schema 2020-12 of the input object
	OutputSchema json.RawMessage // JSON Schema 2020-12 of the output object
	Safety       Safety
	Performance  Performance

	in, out *jsonschema.Schema // set by Register
}

// Ref returns "name@version", the tool's reference.
func (t Tool) Ref() string { return t.Name + "@" + t.Version }

// HasCapability reports whether the tool carries the capability tag.
func (t Tool) HasCapability(tag string) bool { return slices.Contains(t.Capabilities, tag) }

// Compiled reports whether the tool came from a Registry (its schemas are
// compiled, so ValidateInput and ValidateOutput work).
func (t Tool) Compiled() bool { return t.in != nil && t.out != nil }

// ValidateInput validates v, a value as encoding/json or jsonschema.UnmarshalJSON
// decode it (map[string]any, []any, float64 or json.Number, string, bool, nil),
// against the input schema. It returns a *ValidationError (ErrInvalidInput).
func (t Tool) ValidateInput(v any) error { return t.validate("input", t.in, v) }

// ValidateOutput validates v against the output schema; a *ValidationError
// (ErrInvalidOutput) otherwise.
func (t Tool) ValidateOutput(v any) error { return t.validate("output", t.out, v) }

// ValidateInputJSON decodes data (numbers as json.Number) and validates it
// against the input schema.
func (t Tool) ValidateInputJSON(data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &ValidationError{Name: t.Name, Version: t.Version, Which: "input", Err: err}
	}
	return t.ValidateInput(v)
}

func (t Tool) validate(which string, s *jsonschema.Schema, v any) error {
	if s == nil {
		return &ValidationError{Name: t.Name, Version: t.Version, Which: which,
			Err: fmt.Errorf("tool not compiled: obtain it from a Registry")}
	}
	if err := s.Validate(v); err != nil {
		return &ValidationError{Name: t.Name, Version: t.Version, Which: which, Err: err}
	}
	return nil
}

// clone returns a copy that shares nothing mutable with t.
func (t Tool) clone() Tool {
	t.Capabilities = slices.Clone(t.Capabilities)
	t.InputSchema = bytes.Clone(t.InputSchema)
	t.OutputSchema = bytes.Clone(t.OutputSchema)
	t.Safety.SideEffects = slices.Clone(t.Safety.SideEffects)
	return t
}

type rateLimitJSON struct {
	MaxCalls   int     `json:"max_calls"`
	PerSeconds float64 `json:"per_seconds"`
}

type safetyJSON struct {
	Permission  Permission     `json:"permission_required"`
	RiskLevel   RiskLevel      `json:"risk_level"`
	Dangerous   bool           `json:"dangerous"`
	SideEffects []string       `json:"side_effects"`
	Reversible  bool           `json:"reversible"`
	Idempotent  bool           `json:"idempotent"`
	RateLimit   *rateLimitJSON `json:"rate_limit"`
}

type performanceJSON struct {
	TypicalLatency float64 `json:"typical_latency"`
	Timeout        float64 `json:"timeout"`
}

type toolJSON struct {
	ID           string          `json:"tool_id"`
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Description  string          `json:"description"`
	Category     string          `json:"category"`
	Capabilities []string        `json:"capabilities"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Safety       safetyJSON      `json:"safety"`
	Performance  performanceJSON `json:"performance"`
}

// MarshalJSON writes the seeds/004 §1.2 form, durations in seconds.
func (t Tool) MarshalJSON() ([]byte, error) {
	j := toolJSON{
		ID: t.ID, Name: t.Name, Version: t.Version, Description: t.Description,
		Category: t.Category, Capabilities: t.Capabilities,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
		Safety: safetyJSON{
			Permission: t.Safety.Permission, RiskLevel: t.Safety.RiskLevel,
			Dangerous: t.Safety.Dangerous, SideEffects: t.Safety.SideEffects,
			Reversible: t.Safety.Reversible, Idempotent: t.Safety.Idempotent,
		},
		Performance: performanceJSON{
			TypicalLatency: t.Performance.TypicalLatency.Seconds(),
			Timeout:        t.Performance.Timeout.Seconds(),
		},
	}
	if j.Capabilities == nil {
		j.Capabilities = []string{}
	}
	if j.Safety.SideEffects == nil {
		j.Safety.SideEffects = []string{}
	}
	if rl := t.Safety.RateLimit; rl.MaxCalls > 0 {
		j.Safety.RateLimit = &rateLimitJSON{MaxCalls: rl.MaxCalls, PerSeconds: rl.Per.Seconds()}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the form MarshalJSON writes. The result is not compiled
// until it is registered.
func (t *Tool) UnmarshalJSON(data []byte) error {
	var j toolJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("catalog: decode tool: %w", err)
	}
	*t = Tool{
		ID: j.ID, Name: j.Name, Version: j.Version, Description: j.Description,
		Category: j.Category, Capabilities: j.Capabilities,
		InputSchema: j.InputSchema, OutputSchema: j.OutputSchema,
		Safety: Safety{
			Permission: j.Safety.Permission, RiskLevel: j.Safety.RiskLevel,
			Dangerous: j.Safety.Dangerous, SideEffects: j.Safety.SideEffects,
			Reversible: j.Safety.Reversible, Idempotent: j.Safety.Idempotent,
		},
		Performance: Performance{
			TypicalLatency: seconds(j.Performance.TypicalLatency),
			Timeout:        seconds(j.Performance.Timeout),
		},
	}
	if rl := j.Safety.RateLimit; rl != nil {
		t.Safety.RateLimit = RateLimit{MaxCalls: rl.MaxCalls, Per: seconds(rl.PerSeconds)}
	}
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// check validates everything but the schemas.
func (t Tool) check() error {
	bad := func(field, format string, args ...any) error {
		return &InvalidToolError{Name: t.Name, Version: t.Version, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !validName(t.Name) {
		return bad("name", "want dotted lower-case words such as %q", "furnace.set_setpoint")
	}
	if _, err := parseSemver(t.Version); err != nil {
		return bad("version", "%v", err)
	}
	if !validUUID(t.ID) {
		return bad("tool_id", "want a lower-case UUID, got %q", t.ID)
	}
	if strings.TrimSpace(t.Description) == "" {
		return bad("description", "empty")
	}
	if len(t.Capabilities) == 0 {
		return bad("capabilities", "a tool needs at least one capability tag")
	}
	for _, c := range t.Capabilities {
		if !device.Word(c) {
			return bad("capabilities", "tag %q: want lower-case letters, digits and _", c)
		}
	}
	switch t.Safety.Permission {
	case PermissionRead, PermissionMeasure, PermissionOperate, PermissionGas:
	default:
		return bad("safety.permission_required", "unknown permission %q", t.Safety.Permission)
	}
	switch t.Safety.RiskLevel {
	case R1, R2, R3, R4:
	default:
		return bad("safety.risk_level", "want R1..R4, got %q", t.Safety.RiskLevel)
	}
	if rl := t.Safety.RateLimit; rl.MaxCalls < 0 || (rl.MaxCalls > 0 && rl.Per <= 0) {
		return bad("safety.rate_limit", "want max_calls > 0 with a positive window, or none")
	}
	if t.Compute() && t.Safety.Dangerous {
		return bad("safety.dangerous", "a compute tool (category %q) reaches no instrument: it cannot be dangerous", CategoryCompute)
	}
	if t.Performance.Timeout <= 0 {
		return bad("performance.timeout", "must be positive")
	}
	if t.Performance.TypicalLatency < 0 || t.Performance.TypicalLatency > t.Performance.Timeout {
		return bad("performance.typical_latency", "must lie between 0 and the timeout")
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || part[0] < 'a' || part[0] > 'z' || !device.Word(part) {
			return false
		}
	}
	return true
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}
