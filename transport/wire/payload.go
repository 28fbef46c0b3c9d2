package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Payload is a typed L1 payload: it names its message type and validates itself.
type Payload interface {
	MessageType() Type
	// Validate checks the payload's own rules; errors are *DecodeError with
	// Field paths under "payload.".
	Validate() error
}

// Risk levels (L3).
var riskLevels = []string{"R1", "R2", "R3", "R4", "R5"}

// Data classifications (L3/L4).
var dataClassifications = []string{"T1", "T2", "T3", "T4"}

// Priorities (L4 constraints).
var priorities = []string{"low", "normal", "high", "urgent"}

// modelHints are the values of constraints.model_hint.
var modelHints = []string{"fast", "best"}

// idPattern and codePattern are compiled on first use (sync.OnceValue), not
// in package init, which every hcp-edge command pays at start-up: {1,64}
// compiles to as many states (docs/FOOTPRINT.md).
//
// idPattern is what a caller_id or callee_id may be: it becomes an AMQP routing
// key segment and part of a queue name, so no '.', '*', '#' or spaces.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// codePattern is an identifier such as an event_type, reason_code or error_code.
var codePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`) })

// CheckID reports whether id may be used as a caller_id or callee_id:
// 1–64 characters of [A-Za-z0-9_-]. Errors are *DecodeError (Field empty).
func CheckID(id string) error {
	if !idPattern().MatchString(id) {
		return derr("", KindInvalid, "id must be 1–64 of [A-Za-z0-9_-], got "+strconv.Quote(truncate(id)))
	}
	return nil
}

// TaskSubmit is the payload of task_submit (L4).
type TaskSubmit struct {
	Capability        string          `json:"capability"`
	CapabilityVersion string          `json:"capability_version,omitempty"`
	CallerID          string          `json:"caller_id"`
	Intent            string          `json:"intent"`
	Inputs            json.RawMessage `json:"inputs"`
	Constraints       *Constraints    `json:"constraints,omitempty"`
	ExpectedOutput    *ExpectedOutput `json:"expected_output,omitempty"`
	// Context is free-form (purpose, references, notes); L4 does not validate it.
	Context json.RawMessage `json:"context,omitempty"`
}

// Constraints are a task's execution constraints (L4). Durations stay ISO 8601
// strings here; the session layer parses them.
type Constraints struct {
	MaxDuration         string   `json:"max_duration,omitempty"`
	ConfidenceThreshold *float64 `json:"confidence_threshold,omitempty"`
	DataClassification  string   `json:"data_classification,omitempty"`
	Priority            string   `json:"priority,omitempty"`
	// ModelHint is hcp-edge's constraints.model_hint (an extension,
	// docs/PROTOCOL-NOTES.md "Analysis routing"): "fast" keeps the
	// analysis on the agent's local models, "best" asks the best model the
	// task's data class and budgets allow.
	ModelHint string `json:"model_hint,omitempty"`
	// Budgets tightens the capability's resource budgets for this task
	// (an hcp-edge extension, docs/PROTOCOL-NOTES.md "Resource budgets").
	Budgets *Budgets `json:"budgets,omitempty"`
}

// Budgets is constraints.budgets: what a session may use at most, each
// only tighter than the capability's policy (the agent refuses a task
// whose budgets are malformed with invalid_input). Absent fields leave the
// policy's budget as it is.
type Budgets struct {
	// GasVolumeSCC is the volume each gas may use, in standard cm³ (0:
	// the gas may not flow).
	GasVolumeSCC map[string]float64 `json:"gas_volume_scc,omitempty"`
	// HeaterFullPowerS is the heater energy, in seconds at full output.
	HeaterFullPowerS *float64 `json:"heater_full_power_s,omitempty"`
	// MaxActions is the number of actuator actions.
	MaxActions *int `json:"max_actions,omitempty"`
}

// ExpectedOutput describes the desired result (L4). Schema is a JSON Schema,
// kept raw for the session layer to compile.
type ExpectedOutput struct {
	Format         string          `json:"format,omitempty"`
	RequiredFields []string        `json:"required_fields,omitempty"`
	Schema         json.RawMessage `json:"schema,omitempty"`
}

// MessageType returns TypeTaskSubmit.
func (*TaskSubmit) MessageType() Type { return TypeTaskSubmit }

// Validate checks the L4 required fields and enumerations.
func (p *TaskSubmit) Validate() error {
	if p.Capability == "" {
		return derr("payload.capability", KindMissing, "")
	}
	if p.CallerID == "" {
		return derr("payload.caller_id", KindMissing, "")
	}
	if err := CheckID(p.CallerID); err != nil {
		return withField(err, "payload.caller_id")
	}
	if strings.TrimSpace(p.Intent) == "" {
		return derr("payload.intent", KindMissing, "")
	}
	if err := reqObject("payload.inputs", p.Inputs); err != nil {
		return err
	}
	if c := p.Constraints; c != nil {
		if c.ConfidenceThreshold != nil && (*c.ConfidenceThreshold < 0 || *c.ConfidenceThreshold > 1) {
			return derr("payload.constraints.confidence_threshold", KindInvalid, "want 0–1")
		}
		if err := optEnum("payload.constraints.data_classification", c.DataClassification, dataClassifications); err != nil {
			return err
		}
		if err := optEnum("payload.constraints.priority", c.Priority, priorities); err != nil {
			return err
		}
		if err := optEnum("payload.constraints.model_hint", c.ModelHint, modelHints); err != nil {
			return err
		}
	}
	if o := p.ExpectedOutput; o != nil {
		if err := optObject("payload.expected_output.schema", o.Schema); err != nil {
			return err
		}
	}
	return optObject("payload.context", p.Context)
}

// Abort is the payload of abort. L1/L2 define no fields for it; Reason is
// hcp-edge's optional free text (see docs/PROTOCOL-NOTES.md).
type Abort struct {
	Reason string `json:"reason,omitempty"`
}

// MessageType returns TypeAbort.
func (*Abort) MessageType() Type { return TypeAbort }

// Validate accepts any abort payload object.
func (*Abort) Validate() error { return nil }

// TaskAccepted is the payload of task_accepted (L3).
type TaskAccepted struct {
	SessionToken       string               `json:"session_token"`
	RiskLevel          string               `json:"risk_level"`
	DataClassification string               `json:"data_classification,omitempty"`
	SafetyEnvelope     *SafetyEnvelope      `json:"safety_envelope,omitempty"`
	Constraints        *AcceptedConstraints `json:"constraints,omitempty"`
	// Recipe names the process recipe the session runs (an hcp-edge
	// extension, docs/PROTOCOL-NOTES.md "Recipe identity"); nil for a
	// capability that is not a recipe.
	Recipe *RecipeIdentity `json:"recipe,omitempty"`
}

// RecipeIdentity names a recipe exactly: its name, its semantic version
// and the sha256 of the recipe file's bytes (64 lower-case hex digits).
type RecipeIdentity struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
}

// Validate requires every field, and sha256 as 64 lower-case hex digits.
func (r *RecipeIdentity) Validate(path string) error {
	if r == nil {
		return nil
	}
	switch {
	case r.Name == "":
		return derr(path+".name", KindMissing, "")
	case r.Version == "":
		return derr(path+".version", KindMissing, "")
	case len(r.SHA256) != 64 || strings.Trim(r.SHA256, "0123456789abcdef") != "":
		return derr(path+".sha256", KindMalformed, "want 64 lower-case hex digits")
	}
	return nil
}

// AcceptedConstraints are the constraints the callee approved (ISO 8601 durations).
type AcceptedConstraints struct {
	MaxDuration  string `json:"max_duration,omitempty"`
	AbortTimeout string `json:"abort_timeout,omitempty"`
}

// MessageType returns TypeTaskAccepted.
func (*TaskAccepted) MessageType() Type { return TypeTaskAccepted }

// Validate requires session_token and risk_level.
func (p *TaskAccepted) Validate() error {
	if p.SessionToken == "" {
		return derr("payload.session_token", KindMissing, "")
	}
	if p.RiskLevel == "" {
		return derr("payload.risk_level", KindMissing, "")
	}
	if err := optEnum("payload.risk_level", p.RiskLevel, riskLevels); err != nil {
		return err
	}
	if err := optEnum("payload.data_classification", p.DataClassification, dataClassifications); err != nil {
		return err
	}
	if err := p.Recipe.Validate("payload.recipe"); err != nil {
		return err
	}
	return p.SafetyEnvelope.Validate("payload.safety_envelope")
}

// Reason codes of task_rejected named by L3's approval flow.
const (
	ReasonUnauthorized = "unauthorized"
	ReasonForbidden    = "forbidden"
	ReasonInvalidInput = "invalid_input"
	ReasonRiskTooHigh  = "risk_too_high"
)

// TaskRejected is the payload of task_rejected (L3).
type TaskRejected struct {
	ReasonCode        string `json:"reason_code"`
	ReasonMessage     string `json:"reason_message"`
	AssessedRiskLevel string `json:"assessed_risk_level,omitempty"`
	Suggestion        string `json:"suggestion,omitempty"`
	// RetryAfter (an hcp-edge extension, docs/PROTOCOL-NOTES.md) is the
	// number of seconds after which the same submit may be admitted: a
	// quota's resource_unavailable sets it (0: absent).
	RetryAfter int64 `json:"retry_after,omitempty"`
}

// MessageType returns TypeTaskRejected.
func (*TaskRejected) MessageType() Type { return TypeTaskRejected }

// Validate requires reason_code (an identifier) and reason_message.
func (p *TaskRejected) Validate() error {
	if err := reqCode("payload.reason_code", p.ReasonCode); err != nil {
		return err
	}
	if p.ReasonMessage == "" {
		return derr("payload.reason_message", KindMissing, "")
	}
	if p.RetryAfter < 0 {
		return derr("payload.retry_after", KindInvalid, "negative")
	}
	return optEnum("payload.assessed_risk_level", p.AssessedRiskLevel, riskLevels)
}

// Standard L2 event types.
const (
	EventSessionCreated     = "session_created"
	EventStateChanged       = "state_changed"
	EventProgress           = "progress"
	EventIntermediateResult = "intermediate_result"
	EventLog                = "log"
	EventWarning            = "warning"
	EventError              = "error"
	EventCheckpointCreated  = "checkpoint_created"
	EventSessionClosed      = "session_closed"
)

// MaxSequence is the largest sequence accepted: 2^53−1, the largest integer
// every JSON implementation reads exactly.
const MaxSequence = 1<<53 - 1

// Event is the payload of event (L2 event envelope).
type Event struct {
	EventType string          `json:"event_type"`
	Sequence  uint64          `json:"sequence"`
	Data      json.RawMessage `json:"data"`
}

// MessageType returns TypeEvent.
func (*Event) MessageType() Type { return TypeEvent }

// Validate requires event_type (an identifier; the standard ones are the
// Event* constants, others are accepted for forward compatibility), sequence in
// 1..MaxSequence and data as an object.
func (p *Event) Validate() error {
	if err := reqCode("payload.event_type", p.EventType); err != nil {
		return err
	}
	if p.Sequence < 1 || p.Sequence > MaxSequence {
		return derr("payload.sequence", KindInvalid, "want 1.."+strconv.FormatUint(MaxSequence, 10))
	}
	return reqObject("payload.data", p.Data)
}

// Artifact references a generated file by URI (L4).
type Artifact struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	URI       string `json:"uri"`
	SizeBytes int64  `json:"size_bytes"`
	Checksum  string `json:"checksum,omitempty"`
}

// ExecutionSummary summarises a run (L4). Durations are ISO 8601 strings.
type ExecutionSummary struct {
	Duration           string   `json:"duration,omitempty"`
	StepsExecuted      int      `json:"steps_executed,omitempty"`
	CheckpointsCreated int      `json:"checkpoints_created,omitempty"`
	RiskEvents         []string `json:"risk_events,omitempty"`
	Warnings           []string `json:"warnings,omitempty"`
}

// TaskCompleted is the payload of task_completed (L4).
type TaskCompleted struct {
	Outputs          json.RawMessage   `json:"outputs"`
	Artifacts        []Artifact        `json:"artifacts,omitempty"`
	ExecutionSummary *ExecutionSummary `json:"execution_summary,omitempty"`
}

// MessageType returns TypeTaskCompleted.
func (*TaskCompleted) MessageType() Type { return TypeTaskCompleted }

// Validate requires outputs as an object and well-formed artifacts.
func (p *TaskCompleted) Validate() error {
	if err := reqObject("payload.outputs", p.Outputs); err != nil {
		return err
	}
	return checkArtifacts(p.Artifacts)
}

// Standard error codes of task_failed (L4).
const (
	ErrorExecution           = "execution_error"
	ErrorTimeout             = "timeout"
	ErrorSafetyViolation     = "safety_violation"
	ErrorResourceUnavailable = "resource_unavailable"
	ErrorInternal            = "internal_error"
	ErrorInput               = "input_error"
)

// TaskFailed is the payload of task_failed (L4).
type TaskFailed struct {
	ErrorCode        string            `json:"error_code"`
	ErrorMessage     string            `json:"error_message"`
	ErrorDetails     json.RawMessage   `json:"error_details,omitempty"`
	PartialOutputs   json.RawMessage   `json:"partial_outputs,omitempty"`
	Artifacts        []Artifact        `json:"artifacts,omitempty"`
	ExecutionSummary *ExecutionSummary `json:"execution_summary,omitempty"`
}

// MessageType returns TypeTaskFailed.
func (*TaskFailed) MessageType() Type { return TypeTaskFailed }

// Validate requires error_code (an identifier) and error_message.
func (p *TaskFailed) Validate() error {
	if err := reqCode("payload.error_code", p.ErrorCode); err != nil {
		return err
	}
	if p.ErrorMessage == "" {
		return derr("payload.error_message", KindMissing, "")
	}
	if err := optObject("payload.error_details", p.ErrorDetails); err != nil {
		return err
	}
	if err := optObject("payload.partial_outputs", p.PartialOutputs); err != nil {
		return err
	}
	return checkArtifacts(p.Artifacts)
}

func checkArtifacts(as []Artifact) error {
	for i, a := range as {
		f := "payload.artifacts[" + strconv.Itoa(i) + "]"
		switch {
		case a.Name == "":
			return derr(f+".name", KindMissing, "")
		case a.URI == "":
			return derr(f+".uri", KindMissing, "")
		case a.SizeBytes < 0:
			return derr(f+".size_bytes", KindInvalid, "negative")
		}
	}
	return nil
}

// newPayload returns an empty typed payload for t.
func newPayload(t Type) Payload {
	switch t {
	case TypeTaskSubmit:
		return &TaskSubmit{}
	case TypeAbort:
		return &Abort{}
	case TypeTaskAccepted:
		return &TaskAccepted{}
	case TypeTaskRejected:
		return &TaskRejected{}
	case TypeEvent:
		return &Event{}
	case TypeTaskCompleted:
		return &TaskCompleted{}
	case TypeTaskFailed:
		return &TaskFailed{}
	case TypeSessionHandoff:
		return &SessionHandoff{}
	case TypeCapabilitiesRequest:
		return &CapabilitiesRequest{}
	case TypeCapabilitiesResponse:
		return &CapabilitiesResponse{}
	case TypeArtifactRequest:
		return &ArtifactRequest{}
	case TypeArtifactChunk:
		return &ArtifactChunk{}
	case TypeRequestRefused:
		return &RequestRefused{}
	case TypePreviewRequest:
		return &PreviewRequest{}
	case TypePreviewResponse:
		return &PreviewResponse{}
	}
	return nil
}

func (env *Envelope) validatePayload() *DecodeError {
	p := newPayload(env.Type)
	if p == nil {
		return derr("type", KindUnknownType, "")
	}
	if err := decodePayload(env.Payload, p); err != nil {
		return err
	}
	return nil
}

// DecodePayload decodes env's payload into its typed form (*TaskSubmit,
// *Event, …) and validates it.
func (env *Envelope) DecodePayload() (Payload, error) {
	p := newPayload(env.Type)
	if p == nil {
		return nil, derr("type", KindUnknownType, strconv.Quote(truncate(string(env.Type))))
	}
	if err := decodePayload(env.Payload, p); err != nil {
		return nil, err
	}
	return p, nil
}

func payloadAs[P Payload](env *Envelope, t Type) (P, error) {
	var zero P
	if env.Type != t {
		return zero, derr("type", KindInvalid, "have "+string(env.Type)+", want "+string(t))
	}
	p, err := env.DecodePayload()
	if err != nil {
		return zero, err
	}
	return p.(P), nil
}

// TaskSubmit returns the typed payload of a task_submit envelope.
func (env *Envelope) TaskSubmit() (*TaskSubmit, error) {
	return payloadAs[*TaskSubmit](env, TypeTaskSubmit)
}

// Abort returns the typed payload of an abort envelope.
func (env *Envelope) Abort() (*Abort, error) { return payloadAs[*Abort](env, TypeAbort) }

// TaskAccepted returns the typed payload of a task_accepted envelope.
func (env *Envelope) TaskAccepted() (*TaskAccepted, error) {
	return payloadAs[*TaskAccepted](env, TypeTaskAccepted)
}

// TaskRejected returns the typed payload of a task_rejected envelope.
func (env *Envelope) TaskRejected() (*TaskRejected, error) {
	return payloadAs[*TaskRejected](env, TypeTaskRejected)
}

// Event returns the typed payload of an event envelope.
func (env *Envelope) Event() (*Event, error) { return payloadAs[*Event](env, TypeEvent) }

// TaskCompleted returns the typed payload of a task_completed envelope.
func (env *Envelope) TaskCompleted() (*TaskCompleted, error) {
	return payloadAs[*TaskCompleted](env, TypeTaskCompleted)
}

// TaskFailed returns the typed payload of a task_failed envelope.
func (env *Envelope) TaskFailed() (*TaskFailed, error) {
	return payloadAs[*TaskFailed](env, TypeTaskFailed)
}

// decodePayload compacts raw (so nested raw values are canonical), unmarshals
// it into p, normalises it (null optional objects and empty slices become nil)
// and validates it.
func decodePayload(raw json.RawMessage, p Payload) *DecodeError {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return &DecodeError{Field: "payload", Kind: KindSyntax, Err: err}
	}
	if err := json.Unmarshal(buf.Bytes(), p); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			f := "payload"
			if ute.Field != "" {
				f += "." + ute.Field
			}
			return &DecodeError{Field: f, Kind: KindWrongType, Detail: "want " + ute.Type.String(), Err: err}
		}
		return &DecodeError{Field: "payload", Kind: KindSyntax, Err: err}
	}
	normalise(p)
	if err := p.Validate(); err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			return de
		}
		return &DecodeError{Field: "payload", Kind: KindInvalid, Err: err}
	}
	return nil
}

func normalise(p Payload) {
	nilNull := func(r *json.RawMessage) {
		if isNull(*r) {
			*r = nil
		}
	}
	summary := func(s *ExecutionSummary) {
		if s != nil {
			if len(s.RiskEvents) == 0 {
				s.RiskEvents = nil
			}
			if len(s.Warnings) == 0 {
				s.Warnings = nil
			}
		}
	}
	switch p := p.(type) {
	case *TaskSubmit:
		nilNull(&p.Context)
		if o := p.ExpectedOutput; o != nil {
			nilNull(&o.Schema)
			if len(o.RequiredFields) == 0 {
				o.RequiredFields = nil
			}
		}
	case *TaskAccepted:
		normaliseSafety(p.SafetyEnvelope)
	case *CapabilitiesResponse:
		for i := range p.Capabilities {
			nilNull(&p.Capabilities[i].Capability.Constraints)
			normaliseSafety(p.Capabilities[i].SafetyEnvelope)
		}
	case *TaskCompleted:
		if len(p.Artifacts) == 0 {
			p.Artifacts = nil
		}
		summary(p.ExecutionSummary)
	case *TaskFailed:
		nilNull(&p.ErrorDetails)
		nilNull(&p.PartialOutputs)
		if len(p.Artifacts) == 0 {
			p.Artifacts = nil
		}
		summary(p.ExecutionSummary)
	}
}

// normaliseSafety makes empty members of s nil, as Encode omits them.
func normaliseSafety(s *SafetyEnvelope) {
	if s == nil {
		return
	}
	if isNull(s.Interlocks) {
		s.Interlocks = nil
	}
	if len(s.Parameters) == 0 {
		s.Parameters = nil
	}
	if len(s.ProhibitedActions) == 0 {
		s.ProhibitedActions = nil
	}
	if len(s.EmergencyProcedures) == 0 {
		s.EmergencyProcedures = nil
	}
}

func reqObject(field string, raw json.RawMessage) error {
	if len(raw) == 0 || isNull(raw) {
		return derr(field, KindMissing, "")
	}
	if raw[0] != '{' {
		return derr(field, KindWrongType, "want object")
	}
	return nil
}

func optObject(field string, raw json.RawMessage) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	if raw[0] != '{' {
		return derr(field, KindWrongType, "want object")
	}
	return nil
}

func optEnum(field, v string, allowed []string) error {
	if v == "" {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return derr(field, KindInvalid, "want one of "+strings.Join(allowed, ", ")+", got "+strconv.Quote(truncate(v)))
}

func reqCode(field, v string) error {
	if v == "" {
		return derr(field, KindMissing, "")
	}
	if !codePattern().MatchString(v) {
		return derr(field, KindInvalid, "want a lower_snake_case identifier, got "+strconv.Quote(truncate(v)))
	}
	return nil
}

func withField(err error, field string) error {
	var de *DecodeError
	if errors.As(err, &de) {
		c := *de
		c.Field = field
		return &c
	}
	return err
}
