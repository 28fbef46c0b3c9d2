package capability

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed declaration.schema.json
var declarationSchema []byte

// Sentinel errors of the package.
var (
	// ErrInvalidDeclaration is matched by every refused declaration.
	ErrInvalidDeclaration = errors.New("invalid capability declaration")
	// ErrUnknownCapability is a name no declaration has.
	ErrUnknownCapability = errors.New("unknown capability")
	// ErrNoMatchingVersion is a known name with no version in the range.
	ErrNoMatchingVersion = errors.New("no version satisfies the range")
	// ErrBadRange is a version range that does not parse.
	ErrBadRange = errors.New("bad version range")
	// ErrInvalidInput is matched by every *InputError.
	ErrInvalidInput = errors.New("invalid input")
	// ErrDuplicate is a second declaration of the same name and version.
	ErrDuplicate = errors.New("duplicate capability declaration")
)

// RiskLevel is an L3 risk level, R1 (minimal) to R5 (critical).
type RiskLevel string

// Risk levels.
const (
	R1 RiskLevel = "R1"
	R2 RiskLevel = "R2"
	R3 RiskLevel = "R3"
	R4 RiskLevel = "R4"
	R5 RiskLevel = "R5"
)

// Rank returns 1..5 for R1..R5 and 0 for anything else.
func (r RiskLevel) Rank() int {
	if len(r) == 2 && r[0] == 'R' && r[1] >= '1' && r[1] <= '5' {
		return int(r[1] - '0')
	}
	return 0
}

// Safety is the safety declaration of a capability.
type Safety struct {
	RiskCeiling               RiskLevel `json:"risk_ceiling"`
	RequiresHumanApproval     bool      `json:"requires_human_approval"`
	InvolvesPhysicalResources bool      `json:"involves_physical_resources"`
	ResourceTypes             []string  `json:"resource_types,omitempty"`
	HazardCategories          []string  `json:"hazard_categories,omitempty"`
}

// Constraints are a capability's operational constraints as declared.
type Constraints struct {
	MaxDuration     string `json:"max_duration,omitempty"`
	AbortTimeout    string `json:"abort_timeout,omitempty"`
	ConcurrentLimit int    `json:"concurrent_limit,omitempty"` // 0: not declared
}

// Budgets is a capability's resource policy (an hcp-edge extension of the
// declaration, docs/PROTOCOL-NOTES.md "Resource budgets"): what one session
// of it may consume at most. A task may ask for tighter budgets in its
// constraints, never looser ones (session/budget). Its fields are those of
// budget.Spec, which it converts to.
type Budgets struct {
	// GasVolume is the volume each gas may use, in standard cm³ (scc); a
	// gas not listed has no budget, a gas listed with 0 may not flow.
	GasVolume map[string]float64 `json:"gas_volume_scc,omitempty"`
	// HeaterFullPower is the heater energy, in seconds at full output
	// (kJ = this × the heater's rated power in kW).
	HeaterFullPower *float64 `json:"heater_full_power_s,omitempty"`
	// MaxActions is the number of actuator actions the interlock executes
	// for the session.
	MaxActions *int `json:"max_actions,omitempty"`
}

// Declaration is the JSON form of a capability declaration.
type Declaration struct {
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Safety       Safety          `json:"safety"`
	Constraints  Constraints     `json:"constraints,omitzero"`
	// Budgets is the resource policy; nil: none.
	Budgets *Budgets `json:"budgets,omitempty"`
}

// Capability is a checked declaration with its compiled schemas.
type Capability struct {
	Declaration
	SemVer       *semver.Version
	MaxDuration  time.Duration // 0 when not declared
	AbortTimeout time.Duration // 0 when not declared
	// RiskFloor, when set, is a risk floor the gate never goes below: a
	// recipe's, derived from what it does (session/recipe Policy). It is
	// not part of the declaration.
	RiskFloor RiskLevel
	// MinDataClassification, when set (T1–T4), is the least data
	// classification of the capability's sessions: a recipe's, derived from
	// what it does. It is not part of the declaration.
	MinDataClassification string

	input, output *jsonschema.Schema
	check         func(raw []byte) error // SetInputCheck

}

// Ref is the CapabilityRef of seeds/003: a capability by name and version.
type Ref struct {
	Name    string `json:"capability_id"`
	Version string `json:"version"`
}

// Ref returns c's reference.
func (c *Capability) Ref() Ref { return Ref{Name: c.Name, Version: c.SemVer.String()} }

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("capability: schema loading is disabled (%s)", url)
}

func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	return c
}

func compile(url string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := newCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// metaSchema is the declaration schema, compiled on first use rather than
// at start: every hcp-edge command (the e-stop's CLI among them) would pay
// the ~2 ms at exec.
var metaSchema = sync.OnceValue(func() *jsonschema.Schema {
	s, err := compile("https://hcp-edge.invalid/schemas/capability-declaration.json", declarationSchema)
	if err != nil {
		panic("capability: embedded declaration schema: " + err.Error())
	}
	return s
})

func invalid(name, format string, args ...any) error {
	return fmt.Errorf("capability %s: %w: %s", name, ErrInvalidDeclaration, fmt.Sprintf(format, args...))
}

// Parse checks one declaration file's content (the spec's
// {"capability": {...}} wrapper) and returns the Capability.
func Parse(data []byte) (*Capability, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, invalid("?", "not JSON: %v", err)
	}
	if err := metaSchema().Validate(doc); err != nil {
		return nil, invalid("?", "%v", newInputError(err))
	}
	var w struct {
		Capability Declaration `json:"capability"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, invalid("?", "%v", err)
	}
	d := w.Capability
	c := &Capability{Declaration: d}
	if c.SemVer, err = semver.StrictNewVersion(d.Version); err != nil {
		return nil, invalid(d.Name, "version %q: %v", d.Version, err)
	}
	if c.MaxDuration, err = ParseDuration(d.Constraints.MaxDuration); err != nil {
		return nil, invalid(d.Name, "max_duration: %v", err)
	}
	if c.AbortTimeout, err = ParseDuration(d.Constraints.AbortTimeout); err != nil {
		return nil, invalid(d.Name, "abort_timeout: %v", err)
	}
	base := "https://hcp-edge.invalid/capabilities/" + d.Name + "/" + d.Version + "/"
	if c.input, err = compile(base+"input_schema.json", d.InputSchema); err != nil {
		return nil, invalid(d.Name, "input_schema: %v", err)
	}
	if c.output, err = compile(base+"output_schema.json", d.OutputSchema); err != nil {
		return nil, invalid(d.Name, "output_schema: %v", err)
	}
	return c, nil
}

// Violation is one failing place of a validated document.
type Violation struct {
	Path    string `json:"path"` // JSON Pointer into the document ("" is the root)
	Message string `json:"message"`
}

// InputError lists every violation of a schema; it matches ErrInvalidInput.
type InputError struct {
	Violations []Violation
}

func (e *InputError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		p := v.Path
		if p == "" {
			p = "/"
		}
		parts[i] = p + ": " + v.Message
	}
	return fmt.Sprintf("%v: %s", ErrInvalidInput, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// Paths returns the failing paths, sorted and without duplicates.
func (e *InputError) Paths() []string {
	var out []string
	for _, v := range e.Violations {
		out = append(out, v.Path)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func newInputError(err error) *InputError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &InputError{Violations: []Violation{{Message: err.Error()}}}
	}
	out := &InputError{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			var sb strings.Builder
			for _, tok := range e.InstanceLocation {
				sb.WriteByte('/')
				sb.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
			}
			msg := ""
			if u := e.BasicOutput(); u != nil && u.Error != nil {
				msg = u.Error.String()
			}
			out.Violations = append(out.Violations, Violation{Path: sb.String(), Message: msg})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

func validate(s *jsonschema.Schema, raw []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &InputError{Violations: []Violation{{Message: "not JSON: " + err.Error()}}}
	}
	if err := s.Validate(doc); err != nil {
		return newInputError(err)
	}
	return nil
}

// ValidateInput validates a task's inputs (raw JSON) against the declared
// input_schema; a failure is an *InputError.
//
// With an input check (SetInputCheck), inputs valid against the schema are
// then given to it.
func (c *Capability) ValidateInput(raw []byte) error {
	if err := validate(c.input, raw); err != nil {
		return err
	}
	if c.check != nil {
		return c.check(raw)
	}
	return nil
}

// SetInputCheck sets what ValidateInput asks of inputs valid against the
// input_schema: the rules a schema cannot express (a recipe's duration
// ranges, a window's low end at or below its high end). check returns an
// *InputError naming each failing field.
func (c *Capability) SetInputCheck(check func(raw []byte) error) { c.check = check }

// ValidateOutput validates a task's outputs (raw JSON) against the declared
// output_schema; a failure is an *InputError.
func (c *Capability) ValidateOutput(raw []byte) error { return validate(c.output, raw) }

var durationRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)
})

// maxDuration bounds parsed durations (a year), far below time.Duration's
// range.
const maxDuration = 366 * 24 * time.Hour

// ParseDuration parses an ISO 8601 duration of days, hours, minutes and
// seconds ("PT72H", "P1DT30M", "PT0.5S"); "" is 0. Years, months, weeks,
// an empty "P" or "PT", and anything above a year are refused.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	m := durationRE().FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, fmt.Errorf("duration %q: want PnDTnHnMnS", s)
	}
	var total float64
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil || math.IsInf(v, 0) {
			return 0, fmt.Errorf("duration %q: %v", s, err)
		}
		total += v * float64(unit)
		if total > float64(maxDuration) {
			return 0, fmt.Errorf("duration %q: above %v", s, maxDuration)
		}
	}
	return time.Duration(total), nil
}

// Registry holds capabilities by name and version. It is safe for
// concurrent use; Replace swaps its whole content at once (the agent's
// reload of its recipes), so that everyone holding the Registry sees the
// new set.
type Registry struct {
	mu     sync.RWMutex
	byName map[string][]*Capability // each sorted by ascending version
	// ranges are version ranges parsed before (at most maxRanges: they come
	// from callers), so that resolving "*" for every active session of
	// every submit does not parse it again.
	ranges map[string]*semver.Constraints
}

// maxRanges bounds Registry.ranges.
const maxRanges = 64

// constraint parses rng, or returns it parsed before.
func (r *Registry) constraint(rng string) (*semver.Constraints, error) {
	r.mu.RLock()
	c := r.ranges[rng]
	r.mu.RUnlock()
	if c != nil {
		return c, nil
	}
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.ranges == nil {
		r.ranges = map[string]*semver.Constraints{}
	}
	if len(r.ranges) < maxRanges {
		r.ranges[rng] = c
	}
	r.mu.Unlock()
	return c, nil
}

// NewRegistry indexes caps, refusing two with the same name and version.
func NewRegistry(caps ...*Capability) (*Registry, error) {
	r := &Registry{byName: map[string][]*Capability{}}
	for _, c := range caps {
		for _, o := range r.byName[c.Name] {
			if o.SemVer.Equal(c.SemVer) {
				return nil, fmt.Errorf("capability %s %s: %w", c.Name, c.SemVer, ErrDuplicate)
			}
		}
		r.byName[c.Name] = append(r.byName[c.Name], c)
	}
	for _, list := range r.byName {
		sort.Slice(list, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
			return func(a, b *Capability) int { return a.SemVer.Compare(b.SemVer) }(list[i], list[j]) < 0
		})
	}
	return r, nil
}

// LoadDir parses every *.json file in dir and returns their Registry. Every
// invalid file is reported, each prefixed with its name.
func LoadDir(dir string) (*Registry, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("capability: %w", err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("capability: no declarations in %s", dir)
	}
	var caps []*Capability
	var errs []error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err == nil {
			var c *Capability
			if c, err = Parse(data); err == nil {
				caps = append(caps, c)
				continue
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(p), err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return NewRegistry(caps...)
}

// Replace makes r hold exactly caps (as NewRegistry would index them), all
// at once; on an error r is unchanged.
func (r *Registry) Replace(caps ...*Capability) error {
	next, err := NewRegistry(caps...)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.byName = next.byName
	r.mu.Unlock()
	return nil
}

// All returns every capability, by name then version.
func (r *Registry) All() []*Capability {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*Capability
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, r.byName[n]...)
	}
	return out
}

// Resolve returns the highest version of name that satisfies the semver
// range rng. An empty range takes the highest release (a pre-release only
// when there is nothing else).
func (r *Registry) Resolve(name, rng string) (*Capability, error) {
	r.mu.RLock()
	list := r.byName[name]
	r.mu.RUnlock()
	if len(list) == 0 {
		return nil, fmt.Errorf("capability %q: %w", name, ErrUnknownCapability)
	}
	if strings.TrimSpace(rng) == "" {
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].SemVer.Prerelease() == "" {
				return list[i], nil
			}
		}
		return list[len(list)-1], nil
	}
	cons, err := r.constraint(rng)
	if err != nil {
		return nil, fmt.Errorf("capability %s %q: %w: %v", name, rng, ErrBadRange, err)
	}
	for i := len(list) - 1; i >= 0; i-- {
		if cons.Check(list[i].SemVer) {
			return list[i], nil
		}
	}
	return nil, fmt.Errorf("capability %s %q: %w", name, rng, ErrNoMatchingVersion)
}
