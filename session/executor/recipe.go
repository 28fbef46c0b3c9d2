package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/session/analysis"
	"hcp-edge/session/jcamp"
	"hcp-edge/session/recipe"
)

// RecipeExecutor runs the recipes of one capability name, one per version
// (session/recipe): Plan resolves the task's inputs against the version
// the gate chose into a recipe.Plan, and every step is one of the Plan's
// phases, run by the phase code of phases.go. The checkpoint state pins the
// whole resolved Plan with the recipe's identity (name, version, sha256),
// so Resume needs no recipe file: a session resumes with the exact recipe
// it started with, whatever has changed on disk since.
type RecipeExecutor struct {
	name     string
	versions map[string]*recipe.Recipe // by semantic version (String)
	latest   *recipe.Recipe            // the highest release
}

var _ Executor = (*RecipeExecutor)(nil)

// NewRecipeExecutor returns the executor of rs, every version of one
// recipe name, each loaded and checked (recipe.CheckAll). Two recipes of
// the same version are refused.
func NewRecipeExecutor(rs ...*recipe.Recipe) (*RecipeExecutor, error) {
	if len(rs) == 0 || rs[0] == nil {
		return nil, errors.New("executor: NewRecipeExecutor needs a recipe")
	}
	x := &RecipeExecutor{name: rs[0].Name, versions: map[string]*recipe.Recipe{}}
	for _, r := range rs {
		if r == nil || r.SemVer == nil || r.Name != x.name {
			return nil, fmt.Errorf("executor: NewRecipeExecutor: every recipe must be a loaded version of %s", x.name)
		}
		v := r.SemVer.String()
		if _, dup := x.versions[v]; dup {
			return nil, fmt.Errorf("executor: recipe %s %s given twice", r.Name, v)
		}
		if _, err := r.Capability(); err != nil {
			return nil, fmt.Errorf("executor: %w", err)
		}
		x.versions[v] = r
		if x.latest == nil || (r.SemVer.Prerelease() == "" && (x.latest.SemVer.Prerelease() != "" || r.SemVer.GreaterThan(x.latest.SemVer))) ||
			(r.SemVer.Prerelease() != "" && x.latest.SemVer.Prerelease() != "" && r.SemVer.GreaterThan(x.latest.SemVer)) {
			x.latest = r
		}
	}
	return x, nil
}

// Capability is the recipe's name.
func (x *RecipeExecutor) Capability() string { return x.name }

// Recipe returns the recipe of version (its semantic version's String;
// "" the highest release).
func (x *RecipeExecutor) Recipe(version string) (*recipe.Recipe, error) {
	if version == "" {
		return x.latest, nil
	}
	r, ok := x.versions[version]
	if !ok {
		return nil, fmt.Errorf("executor: recipe %s has no version %s", x.name, version)
	}
	return r, nil
}

// Identity is the identity of the recipe of version ("" the highest):
// what task_accepted, the audit and the checkpoints record.
func (x *RecipeExecutor) Identity(version string) (recipe.Identity, error) {
	r, err := x.Recipe(version)
	if err != nil {
		return recipe.Identity{}, err
	}
	return r.Identity(), nil
}

// Plan resolves the task's inputs with the recipe of t.Version. A refused
// input wraps both ErrInput and the recipe's *capability.InputError,
// which names the field. With t.Recipe, a recipe other than that one (its
// file edited, a session recovered before its first checkpoint) is
// refused with ErrRecipeChanged.
func (x *RecipeExecutor) Plan(t Task) (Recipe, error) {
	r, err := x.Recipe(t.Version)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if t.Recipe != nil && *t.Recipe != r.Identity() {
		return nil, fmt.Errorf("%w: the session was accepted with recipe %s %s (sha256 %.12s…), and this agent now has %s %s (sha256 %.12s…)",
			ErrRecipeChanged, t.Recipe.Name, t.Recipe.Version, t.Recipe.SHA256, r.Name, r.Version, r.SHA256)
	}
	p, err := r.Resolve(t.Inputs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	return newRecipeRun(recipeState{Format: recipeStateFormat, Plan: p,
		ThresholdConf: t.ConfidenceThreshold, ExpectedOutput: t.ExpectedOutput, DataClass: t.DataClass, ModelHint: t.ModelHint}), nil
}

// Resume rebuilds the run from a checkpoint's state alone: its pinned Plan.
func (x *RecipeExecutor) Resume(_ Task, state []byte) (Recipe, int, error) {
	var st recipeState
	if err := json.Unmarshal(state, &st); err != nil || st.Format != recipeStateFormat || st.Plan == nil {
		return nil, 0, fmt.Errorf("executor: %s: checkpoint state unreadable (format %d): %v", x.name, st.Format, err)
	}
	if st.Plan.Recipe.Name != x.name {
		return nil, 0, fmt.Errorf("executor: %s: checkpoint state pins recipe %s", x.name, st.Plan.Recipe.Name)
	}
	r := newRecipeRun(st)
	return r, st.Next, nil
}

// recipeStateFormat is the format of recipeState.
const recipeStateFormat = 1

// recipeState is a run's resumable state: the pinned Plan (the recipe's
// identity and every resolved parameter, as adjusted by the preflight to
// the envelope) and the progress.
type recipeState struct {
	Format int          `json:"format"`
	Plan   *recipe.Plan `json:"plan"`
	Next   int          `json:"next"`
	// Held is how much of the running hold (step Next) has been held.
	Held           time.Duration    `json:"held_ns,omitempty"`
	LeakRatePaMin  float64          `json:"leak_rate_pa_per_min,omitempty"`
	Rows           []LogRow         `json:"rows"`
	Spectrum       *device.Spectrum `json:"spectrum,omitempty"`
	Analysis       *analysis.Result `json:"analysis,omitempty"`
	Warnings       []string         `json:"warnings,omitempty"`
	ThresholdConf  float64          `json:"confidence_threshold,omitempty"`
	ExpectedOutput *ExpectedOutput  `json:"expected_output,omitempty"`
	// DataClass and ModelHint feed the analysis's routing.
	DataClass string `json:"data_class,omitempty"`
	ModelHint string `json:"model_hint,omitempty"`
	// Provenance says which model decided the analysis.
	Provenance *Provenance `json:"analysis_provenance,omitempty"`
	// Material is what the spectrum shows against what the recipe grows.
	Material *MaterialFinding `json:"material,omitempty"`
	// Answers are the answers to the recipe's questions so far, by
	// question name (questions.go): in the result as answers.
	Answers map[string]any `json:"answers,omitempty"`
}

// recipeRun is one run of a Plan.
type recipeRun struct {
	proc
	st    recipeState
	steps []Step
	names rigNames
}

func newRecipeRun(st recipeState) *recipeRun {
	r := &recipeRun{st: st}
	r.rows, r.logged = st.Rows, len(st.Rows)
	r.warns = st.Warnings
	for _, ph := range st.Plan.Phases {
		r.steps = append(r.steps, Step{Name: ph.Name, Stage: ph.Stage, Description: ph.Description, Estimate: ph.Estimate})
	}
	return r
}

// Steps are the Plan's phases.
func (r *recipeRun) Steps() []Step { return r.steps }

// State is the resumable state: the pinned Plan and the progress.
func (r *recipeRun) State() ([]byte, error) {
	st := r.st
	st.Rows, st.Warnings = r.rows, r.warns
	return json.Marshal(st)
}

// journalState is State without the rows, and the rows from index from on.
func (r *recipeRun) journalState(from int) ([]byte, json.RawMessage, int, error) {
	st := r.st
	st.Rows, st.Warnings = nil, r.warns
	return r.journalOf(st, from)
}

// Run executes step i: the Plan's phase i.
func (r *recipeRun) Run(ctx context.Context, i int, env *Env) error {
	if err := env.defaults(); err != nil {
		return err
	}
	if i < 0 || i >= len(r.st.Plan.Phases) {
		return fmt.Errorf("executor: %s has no step %d", r.st.Plan.Recipe.Name, i)
	}
	r.begin(env)
	r.names = namesOf(env.Rig.Envelope())
	from := r.elapsed() // the rows of this step, for its profiles
	ph := &r.st.Plan.Phases[i]
	if err := r.ask(ctx, i, ph, env); err != nil {
		return err
	}
	var err error
	switch ph.Kind {
	case recipe.KindPreflight:
		err = r.preflight(ctx)
	case recipe.KindPumpDown:
		err = pumpDown(ctx, &r.proc, r.names, ph.Name, ph.PumpDown.BasePressurePa, ph.PumpDown.Timeout)
	case recipe.KindLeakCheck:
		err = r.leakCheck(ctx, ph)
	case recipe.KindPurge:
		err = r.purge(ctx, ph)
	case recipe.KindRamp:
		err = r.ramp(ctx, ph)
	case recipe.KindHold:
		err = r.holdPhase(ctx, i, ph)
	case recipe.KindCool:
		err = r.cool(ctx, ph)
	case recipe.KindVent:
		err = r.vent(ctx, ph)
	case recipe.KindMeasure:
		err = r.measure(ctx, ph)
	case recipe.KindAnalyse:
		err = r.analyse(ctx, i, ph)
	default:
		err = fmt.Errorf("executor: %s: phase %d has the unknown kind %q", r.st.Plan.Recipe.Name, i, ph.Kind)
	}
	if err != nil {
		return err
	}
	r.st.Next, r.st.Held = i+1, 0
	switch ph.Kind {
	case recipe.KindPumpDown, recipe.KindRamp, recipe.KindHold, recipe.KindCool:
		return r.profiles(ctx, ph.Name, from)
	}
	return nil
}

// analyses reports whether the plan measures and analyses a film.
func (r *recipeRun) analyses() bool {
	for _, ph := range r.st.Plan.Phases {
		if ph.Kind == recipe.KindAnalyse {
			return true
		}
	}
	return false
}

// peakC is the hottest setpoint of the plan's ramps (0: none).
func (r *recipeRun) peakC() float64 {
	t := 0.0
	for _, ph := range r.st.Plan.Phases {
		if ph.Ramp != nil {
			t = max(t, ph.Ramp.TemperatureC)
		}
	}
	return t
}

// Finish builds and validates the outputs and writes the artifacts.
func (r *recipeRun) Finish(ctx context.Context, env *Env) (*Result, error) {
	if err := env.defaults(); err != nil {
		return nil, err
	}
	r.begin(env)
	var outputs map[string]any
	none := false
	if r.analyses() {
		a := r.st.Analysis
		f := r.material()
		none = a != nil && f.Name == analysis.NameNone
		switch {
		case a == nil || r.st.Spectrum == nil:
			return nil, fmt.Errorf("%w: no analysis", ErrResult)
		case none:
			// Nothing the spectrum shows: the session completes and says so.
			outputs = map[string]any{
				"layer_count":             0,
				"confidence":              round3(f.Confidence),
				"growth_temperature":      map[string]any{"value": r.growthC(), "unit": "celsius"},
				"raman_analysis":          r.ramanNone(),
				"growth_log":              r.rows,
				"spectrum_data":           map[string]any{"raman_shift": r.st.Spectrum.Shift, "intensity": r.st.Spectrum.Counts},
				"material_matches_recipe": f.MatchesRecipe,
			}
		case !a.Found:
			return nil, fmt.Errorf("%w: no analysis", ErrResult)
		default:
			outputs = map[string]any{
				"peak_distance":           round3(a.Distance),
				"layer_count":             a.LayerCount,
				"confidence":              round3(a.Confidence),
				"growth_temperature":      map[string]any{"value": r.growthC(), "unit": "celsius"},
				"raman_analysis":          r.ramanOutput(),
				"growth_log":              r.rows,
				"spectrum_data":           map[string]any{"raman_shift": r.st.Spectrum.Shift, "intensity": r.st.Spectrum.Counts},
				"material_matches_recipe": f.MatchesRecipe,
			}
		}
	} else {
		outputs = map[string]any{"process_log": r.rows}
		if t := r.peakC(); t > 0 {
			outputs["peak_temperature"] = map[string]any{"value": t, "unit": "celsius"}
		}
		if r.st.LeakRatePaMin != 0 {
			outputs["leak_rate_pa_per_min"] = r.st.LeakRatePaMin
		}
	}
	if len(r.st.Answers) > 0 {
		outputs["answers"] = r.st.Answers
	}
	arts, err := r.artifacts(env, false)
	if err != nil {
		return nil, err
	}
	if err := r.validate(outputs); err != nil {
		return nil, err
	}
	if a := r.st.Analysis; a != nil && !none { // none has no layer count to be sure of: the outputs say none
		if th := r.st.ThresholdConf; th > 0 && a.Confidence < th {
			return nil, fmt.Errorf("%w: confidence %.3f below the caller's confidence_threshold %g", ErrResult, a.Confidence, th)
		}
	}
	return &Result{Outputs: outputs, Artifacts: arts, Warnings: r.warns}, nil
}

// validate checks outputs, in their JSON form as the caller sees them,
// against the pinned plan's output_schema and the caller's
// expected_output.
func (r *recipeRun) validate(outputs map[string]any) error {
	raw, err := json.Marshal(outputs)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return fmt.Errorf("%w: %v", ErrOutputSchema, err)
	}
	if err := validateJSON("https://hcp-edge.invalid/recipe-output.json", r.st.Plan.OutputSchema(), generic); err != nil {
		return fmt.Errorf("capability output_schema: %w", err)
	}
	return ValidateOutputs(generic, r.st.ExpectedOutput)
}

// growthC is the temperature of the last ramp before the analysis.
func (r *recipeRun) growthC() float64 {
	t := 0.0
	for _, ph := range r.st.Plan.Phases {
		if ph.Ramp != nil {
			t = ph.Ramp.TemperatureC
		}
	}
	return t
}

func (r *recipeRun) ramanOutput() map[string]any {
	a := r.st.Analysis
	return map[string]any{
		"e2g_cm1": a.E2g.Position, "a1g_cm1": a.A1g.Position, "e2g_fwhm_cm1": a.E2g.FWHM, "a1g_fwhm_cm1": a.A1g.FWHM,
		"e2g_err_cm1": a.E2g.PositionErr, "a1g_err_cm1": a.A1g.PositionErr,
		"peak_distance": a.Distance, "peak_distance_err": a.DistanceErr, "layer_count": a.LayerCount, "bulk": a.Bulk,
		"confidence": a.Confidence, "fit_residual": a.FitResidual, "r_squared": a.RSquared, "snr": a.SNR,
		"method":     "two Lorentzians on a linear baseline, Levenberg–Marquardt; layer bands after " + analysis.BandsReference(a.Material),
		"provenance": r.provenance(),
		"material":   r.material(),
	}
}

// ramanNone is raman_analysis when the spectrum shows no material: the
// finding, why, and who analysed it.
func (r *recipeRun) ramanNone() map[string]any {
	a := r.st.Analysis
	return map[string]any{"found": false, "reason": a.Reason, "layer_count": 0, "confidence": round3(r.material().Confidence),
		"provenance": r.provenance(), "material": r.material()}
}

func (r *recipeRun) artifacts(env *Env, partial bool) ([]Artifact, error) {
	var arts []Artifact
	if sp := r.st.Spectrum; sp != nil {
		raw, err := json.Marshal(map[string]any{"raman_shift_cm1": sp.Shift, "intensity_counts": sp.Counts,
			"integration_ms": sp.Integration.Milliseconds(), "acquired_at": sp.At.UTC().Format(time.RFC3339Nano)})
		if err != nil {
			return nil, err
		}
		a, err := writeArtifact(env, "raw_spectrum", "raman_raw.json", "application/json", raw)
		if err != nil {
			return nil, err
		}
		arts = append(arts, a)
		jdx, err := r.jcampSpectrum(env, sp) // jcampart.go
		if err != nil {
			return nil, err
		}
		if a, err = writeArtifact(env, jcampName, jcampFile, jcamp.MIME, jdx); err != nil {
			return nil, err
		}
		arts = append(arts, a)
	}
	name, file := "growth_log", "growth_log.csv"
	if partial {
		name, file = "partial_growth_log", "growth_log_partial.csv"
	}
	a, err := writeArtifact(env, name, file, "text/csv", growthCSV(r.rows, logZones(rigEnvelope(env))))
	if err != nil {
		return nil, err
	}
	return r.plots(env, append(arts, a), partial) // plots.go
}

// Partial returns what the run produced before it failed.
func (r *recipeRun) Partial(env *Env) (map[string]any, []Artifact) {
	logKey := "process_log"
	if r.analyses() {
		logKey = "growth_log"
	}
	out := map[string]any{logKey: map[string]any{"entries_before_failure": len(r.rows)}}
	if a := r.st.Analysis; a != nil && a.Found {
		out["raman_analysis"] = r.ramanOutput()
		out["peak_distance"] = round3(a.Distance)
		out["layer_count"] = a.LayerCount
		out["confidence"] = round3(a.Confidence)
	} else if a != nil {
		out["raman_analysis"] = map[string]any{"found": false, "reason": a.Reason}
	}
	if f := r.st.Material; f != nil {
		if ra, ok := out["raman_analysis"].(map[string]any); ok {
			ra["material"] = *f
		}
		out["material_matches_recipe"] = f.MatchesRecipe
	}
	if r.st.LeakRatePaMin != 0 {
		out["leak_rate_pa_per_min"] = r.st.LeakRatePaMin
	}
	if len(r.st.Answers) > 0 {
		out["answers"] = r.st.Answers
	}
	var arts []Artifact
	if env != nil && env.ArtifactDir != "" {
		arts, _ = r.artifacts(env, true)
	}
	return out, arts
}

// Cleanup drives the reactive gases off and the heater off (safe actions
// only, which pass even while latched), lets the carrier flush the
// reactive gas out for the plan's cleanup purge, then closes the carrier
// too: its flow and its line valve. The pump stays as it is: a pumped
// chamber is the right place to cool, and a carrier left flowing after
// the session ended would run the cylinder empty with nobody owning the
// rig.
func (r *recipeRun) Cleanup(ctx context.Context, env *Env) error {
	if env == nil || env.Rig == nil {
		return nil
	}
	n := namesOf(env.Rig.Envelope())
	purge := defaultCleanupPurge
	if p := r.st.Plan.Cleanup.Purge; p > 0 {
		purge = p
	}
	return errors.Join(cleanupReactive(ctx, env, n), closeCarriers(ctx, env, n, purge))
}

// defaultCleanupPurge is the cleanup's purge when the plan has none.
const defaultCleanupPurge = 5 * time.Minute

// CVDName is the capability of the first shipped recipe
// (configs/recipes/, the seed task's synthesis), by the name callers have
// always used.
const CVDName = "cvd-material-synthesis"

// RecipeExecutors groups rs (recipes that passed recipe.CheckAll) by name
// into one RecipeExecutor each, in the order of their first recipe.
func RecipeExecutors(rs []*recipe.Recipe) ([]*RecipeExecutor, error) {
	var names []string
	by := map[string][]*recipe.Recipe{}
	for _, r := range rs {
		if _, ok := by[r.Name]; !ok {
			names = append(names, r.Name)
		}
		by[r.Name] = append(by[r.Name], r)
	}
	out := make([]*RecipeExecutor, 0, len(names))
	for _, n := range names {
		x, err := NewRecipeExecutor(by[n]...)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
