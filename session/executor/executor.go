package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"hcp-edge/envelope"
	"hcp-edge/session/atrest"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/modelrouter"
	"hcp-edge/session/recipe"
)

// Rig is what an executor may do to the rig: perform an action with the
// session's token, call a catalog tool with it, and read. Nothing else
// reaches an instrument. ToolRig, the production Rig, performs every action
// as a call of its catalog tool through the tool pipeline
// (envelope.Invoker.Act); an envelope refusal unwraps (errors.As) to its
// *envelope.Violation. Invoke is the same pipeline by tool name and
// version: the analyse phase calls the compute tool raman.analyze with it.
type Rig interface {
	Apply(ctx context.Context, token string, a envelope.Action) (envelope.Result, error)
	Invoke(ctx context.Context, token string, ref envelope.ToolRef, input json.RawMessage) (json.RawMessage, error)
	Readings(ctx context.Context) envelope.Readings
	Envelope() *envelope.Envelope
	Latched() (bool, string)
}

// ToolRig is the production Rig: every action is a call of its catalog
// tool, by name and version, through iv (permission, rate limit, input
// schema, the interlock, output schema, per-tool statistics, audit). The
// readings come from the running monitor's cache m (no extra instrument
// traffic per wait); with a nil m, from a fresh snapshot of the
// interlock's View.
func ToolRig(iv *envelope.Invoker, m *envelope.Monitor) Rig {
	return toolRig{iv: iv, view: iv.View(), m: m}
}

type toolRig struct {
	iv   *envelope.Invoker
	view *envelope.View
	m    *envelope.Monitor
}

func (r toolRig) Apply(ctx context.Context, token string, a envelope.Action) (envelope.Result, error) {
	return r.iv.Act(ctx, token, a)
}

func (r toolRig) Invoke(ctx context.Context, token string, ref envelope.ToolRef, input json.RawMessage) (json.RawMessage, error) {
	return r.iv.Invoke(ctx, token, ref, input)
}

func (r toolRig) Readings(ctx context.Context) envelope.Readings {
	if r.m != nil {
		return r.m.Readings()
	}
	return r.view.Readings(ctx)
}

func (r toolRig) Envelope() *envelope.Envelope { return r.view.Envelope() }
func (r toolRig) Latched() (bool, string)      { return r.view.Latched() }

// Sink receives the events of a run; the engine numbers and persists them
// (lifecycle.Machine.Emit). data is one of Progress, IntermediateResult, Log
// and Warning. An error from Emit fails the run (internal_error).
type Sink interface {
	Emit(ctx context.Context, t lifecycle.EventType, data any) error
}

// Progress is the data of a progress event.
type Progress struct {
	Stage   string   `json:"stage"`
	Percent *float64 `json:"percent,omitempty"`
	Message string   `json:"message"`
}

// IntermediateResult is the data of an intermediate_result event.
type IntermediateResult struct {
	ResultType string `json:"result_type"`
	Data       any    `json:"data"`
	IsPartial  bool   `json:"is_partial"`
}

// Log is the data of a log event.
type Log struct {
	Level   string         `json:"level"` // info, warn, error
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Warning is the data of a warning event.
type Warning struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// Audit: the engine records the warning in the session's audit log
	// too, in the event's transaction (a finding about the result, such as
	// CodeMaterialMismatch). It is not part of the event.
	Audit bool `json:"-"`
}

// Checkpoint is a resumable snapshot of a run, handed to the engine after
// every step and periodically inside long holds. State is opaque to the
// engine: give it back to the executor's Resume.
type Checkpoint struct {
	Step        int    // index of the next step to run (after a step) or of the running step (inside a hold)
	StepName    string // the step it belongs to
	Description string
	Resumable   bool
	// State is the recipe's state. With Journaled it lacks the journal (the
	// growth-log rows): a JSON object whose JournalKey the engine fills in
	// at recovery with the Journal rows of every checkpoint of the run.
	State []byte
	// Journaled: Journal holds the journal rows appended since the previous
	// checkpoint (a JSON array, possibly empty), the first of them at index
	// JournalFrom. A checkpoint then costs what changed, not the history.
	Journaled   bool
	Journal     json.RawMessage
	JournalFrom int
}

// JournalKey is the key of a journaled recipe's state object that holds its
// journal; Resume is given the state with the whole journal under it.
const JournalKey = "rows"

// journaled is a Recipe whose state carries an append-only journal (the
// proc's growth-log rows): its checkpoints store the state without the
// journal and the rows added since the previous checkpoint.
type journaled interface {
	// journalState returns the state without its journal, the rows from
	// index from on (a JSON array) and the journal's length.
	journalState(from int) (state []byte, rows json.RawMessage, n int, err error)
	// journalMark is how many rows are in a checkpoint already.
	journalMark() *int
}

// checkpoint stores cp with rec's state: a journaled recipe's state without
// its journal and the rows since its previous checkpoint.
func checkpoint(ctx context.Context, env *Env, rec Recipe, cp Checkpoint) (string, error) {
	j, ok := rec.(journaled)
	n := 0
	var err error
	if ok {
		cp.Journaled, cp.JournalFrom = true, *j.journalMark()
		cp.State, cp.Journal, n, err = j.journalState(cp.JournalFrom)
	} else {
		cp.State, err = rec.State()
	}
	if err != nil {
		return "", err
	}
	id, err := env.Checkpoints.Checkpoint(ctx, cp)
	if err != nil {
		return "", fmt.Errorf("%w: checkpoint: %w", errSink, err)
	}
	if ok {
		*j.journalMark() = n
	}
	return id, nil
}

// Checkpointer stores a checkpoint durably and returns its id (the engine
// emits checkpoint_created). An error fails the run (internal_error).
type Checkpointer interface {
	Checkpoint(ctx context.Context, cp Checkpoint) (id string, err error)
}

// Env is what the engine hands a run.
type Env struct {
	Rig         Rig
	Token       string // the session token every Apply carries
	Clock       Clock
	Sink        Sink
	Checkpoints Checkpointer
	// Questions is whom a recipe's questions reach (questions.go); nil: a
	// recipe that asks fails at its first question (ErrNoAsker).
	Questions Asker
	// ArtifactDir is where the run writes its artifacts (created if missing).
	ArtifactDir string
	// SessionID names the artifacts' URIs: hcp://{session}/artifacts/{file}.
	SessionID string
	// AtRest, when set (a T3/T4 session), seals every artifact file under
	// this key (atrest.ArtifactBinding of SessionID and the file name); the
	// Artifact's SizeBytes and Checksum still describe the plaintext, what
	// a reader gets once the file is opened.
	AtRest *atrest.Key
	Logger *slog.Logger // discarded if nil
	// CheckpointEvery is the process time between checkpoints inside long
	// holds (default 5 min).
	CheckpointEvery time.Duration
	// PollEvery is the process time between readings in waits (default 5 s).
	PollEvery time.Duration
	// LogEvery is the process time between growth-log rows (default 30 s).
	LogEvery time.Duration
}

// Analyzer is what answers the analysis tool AnalysisTool: the model
// router (*modelrouter.Router), registered on the Invoker as the handler
// of raman.analyze (RegisterAnalysis, AnalysisCompute); the analyse phase
// reaches it only through the Rig's Invoke. It reads a spectrum and
// advises; it holds no instrument.
type Analyzer interface {
	Analyze(ctx context.Context, req modelrouter.Request) (modelrouter.Decision, error)
}

func (e *Env) defaults() error {
	if e.Rig == nil || e.Clock == nil || e.Sink == nil || e.Checkpoints == nil {
		return errors.New("executor: Env needs a Rig, a Clock, a Sink and a Checkpointer")
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.DiscardHandler)
	}
	if e.CheckpointEvery <= 0 {
		e.CheckpointEvery = 5 * time.Minute
	}
	if e.PollEvery <= 0 {
		e.PollEvery = 5 * time.Second
	}
	if e.LogEvery <= 0 {
		e.LogEvery = 30 * time.Second
	}
	return nil
}

// ExpectedOutput is the caller's expected_output (L4).
type ExpectedOutput struct {
	Format         string          `json:"format,omitempty"`
	RequiredFields []string        `json:"required_fields,omitempty"`
	Schema         json.RawMessage `json:"schema,omitempty"`
}

// Task is what an executor needs of an accepted task_submit.
type Task struct {
	SessionID string
	// Version is the capability version the gate resolved (its semantic
	// version's String; "" the highest): a RecipeExecutor runs that
	// version's recipe.
	Version string
	// Recipe, when set, is the identity of the recipe the session was
	// accepted with: a RecipeExecutor refuses to plan any other.
	Recipe         *recipe.Identity
	Intent         string
	Inputs         json.RawMessage // valid against the capability's input_schema (the gate checked it)
	ExpectedOutput *ExpectedOutput
	// ConfidenceThreshold is constraints.confidence_threshold (0: none).
	ConfidenceThreshold float64
	// DataClass is the session's data classification (T1–T4; "": T1): a
	// model not cleared for it is never sent the spectrum.
	DataClass string
	// ModelHint is constraints.model_hint ("", "fast" or "best").
	ModelHint string
}

// Step is one named step of a recipe.
type Step struct {
	Name        string        `json:"name"`
	Stage       string        `json:"stage"` // the progress stage (phase) it belongs to
	Description string        `json:"description"`
	Estimate    time.Duration `json:"estimate_ns"` // process time, for percent
}

// Artifact is one file a run wrote.
type Artifact struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // MIME
	URI       string `json:"uri"`
	Path      string `json:"-"` // local file
	SizeBytes int64  `json:"size_bytes"`
	Checksum  string `json:"checksum"` // "sha256:<hex>"
	// Sealed: the file is an atrest blob; SizeBytes and Checksum describe
	// its plaintext.
	Sealed bool `json:"sealed,omitempty"`
}

// Result is a completed run.
type Result struct {
	Outputs   map[string]any
	Artifacts []Artifact
	Warnings  []string
	Steps     int // steps executed
}

// Recipe is one planned run: its steps, run one at a time by index, and
// the result once all have run. A Recipe is used by one goroutine.
type Recipe interface {
	Steps() []Step
	// Run executes step i. Inside long holds it checkpoints through env.
	Run(ctx context.Context, i int, env *Env) error
	// Finish builds the outputs (validated) and writes the artifacts.
	Finish(ctx context.Context, env *Env) (*Result, error)
	// State is the resumable state blob after the last completed step.
	State() ([]byte, error)
	// Partial returns the outputs produced so far and the artifacts written
	// for them (a partial growth log), for task_failed.
	Partial(env *Env) (map[string]any, []Artifact)
	// Cleanup drives the rig towards its safe state after a failure or an
	// abort (best effort; only safe actions).
	Cleanup(ctx context.Context, env *Env) error
}

// Executor plans the recipes of one capability.
type Executor interface {
	// Capability is the capability name the executor serves.
	Capability() string
	// Plan turns the task into a recipe; an error wraps ErrInput.
	Plan(t Task) (Recipe, error)
	// Resume rebuilds a recipe from a checkpoint's State and returns the index
	// of the step to run next.
	Resume(t Task, state []byte) (Recipe, int, error)
}

// Execute runs rec's steps from index from to the end, checkpointing after
// each, and returns the Result. Any failure is a *Failure with its L4 code;
// the recipe's Cleanup has run by then (bounded by 30 s of wall time,
// whatever ctx says).
func Execute(ctx context.Context, rec Recipe, env *Env, from int) (*Result, error) {
	if err := env.defaults(); err != nil {
		return nil, &Failure{Code: CodeInternal, Err: err}
	}
	steps := rec.Steps()
	var total time.Duration
	for _, s := range steps {
		total += s.Estimate
	}
	var done time.Duration
	for _, s := range steps[:min(from, len(steps))] {
		done += s.Estimate
	}
	fail := func(i int, err error) (*Result, error) {
		f := &Failure{Code: Classify(ctx, err), StepIndex: i, Err: err}
		if i < len(steps) {
			f.Step, f.Phase = steps[i].Name, steps[i].Stage
		}
		f.Recoverable = f.Code != CodeSafetyViolation && f.Code != CodeInput
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cerr := rec.Cleanup(cctx, env); cerr != nil {
			env.Logger.Error("cleanup after failure", "err", cerr)
		}
		return nil, f
	}
	for i := from; i < len(steps); i++ {
		s := steps[i]
		pct := percent(done, total)
		if err := env.Sink.Emit(ctx, lifecycle.EventProgress, Progress{Stage: s.Stage, Percent: &pct,
			Message: fmt.Sprintf("step %d/%d %s: %s", i+1, len(steps), s.Name, s.Description)}); err != nil {
			return fail(i, fmt.Errorf("%w: %w", errSink, err))
		}
		if err := rec.Run(ctx, i, env); err != nil {
			return fail(i, err)
		}
		done += s.Estimate
		if _, err := checkpoint(ctx, env, rec, Checkpoint{Step: i + 1, StepName: s.Name,
			Description: "completed step " + s.Name, Resumable: true}); err != nil {
			return fail(i, err)
		}
	}
	res, err := rec.Finish(ctx, env)
	if err != nil {
		return fail(len(steps), err)
	}
	res.Steps = len(steps) - from
	hundred := 100.0
	_ = env.Sink.Emit(ctx, lifecycle.EventProgress, Progress{Stage: "done", Percent: &hundred, Message: "recipe complete"})
	return res, nil
}

// errSink marks a failure of the engine's sink or checkpointer (internal).
var errSink = fmt.Errorf("%w: event sink or checkpoint store failed", envelope.ErrAudit)

func percent(done, total time.Duration) float64 {
	if total <= 0 {
		return 0
	}
	return float64(int(1000*float64(done)/float64(total))) / 10
}

// ValidateOutputs checks outputs against the caller's expected_output:
// every required field present, and valid against its schema (JSON Schema
// 2020-12 unless the schema says otherwise; no remote references).
func ValidateOutputs(outputs map[string]any, exp *ExpectedOutput) error {
	if exp == nil {
		return nil
	}
	for _, f := range exp.RequiredFields {
		if _, ok := outputs[f]; !ok {
			return fmt.Errorf("%w: required field %q missing", ErrOutputSchema, f)
		}
	}
	if len(bytes.TrimSpace(exp.Schema)) == 0 {
		return nil
	}
	return validateJSON("https://hcp-edge.invalid/expected_output.json", exp.Schema, outputs)
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("executor: schema loading disabled (%s)", url)
}

func validateJSON(url string, schema []byte, v any) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("%w: schema: %v", ErrOutputSchema, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("%w: schema: %v", ErrOutputSchema, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("%w: schema: %v", ErrOutputSchema, err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	return nil
}
