package recipe

import (
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"

	"hcp-edge/session/capability"
)

// MaxSize is the largest recipe file Load parses (1 MiB).
const MaxSize = 1 << 20

// Kind is a phase kind: one of the steps the executor implements.
type Kind string

// Phase kinds, in the order a process usually runs them.
const (
	KindPreflight Kind = "preflight"  // interlock, inputs, scrubber on, reactive gases off, vent closed
	KindPumpDown  Kind = "pump_down"  // vent closed, pump on, gate open; wait for a base pressure
	KindLeakCheck Kind = "leak_check" // isolate, measure the rate of rise over a hold, pump down again
	KindPurge     Kind = "purge"      // an inert gas at a flow for a time (it keeps flowing after)
	KindRamp      Kind = "ramp"       // ramp rate, setpoint, heater on; wait within a band of the setpoint
	KindHold      Kind = "hold"       // gas flows for a time at the furnace's temperature
	KindCool      Kind = "cool"       // purge on, heater off, wait below a temperature, inert gases off
	KindVent      Kind = "vent"       // gate and pump off, vent open to a pressure, vent closed
	KindMeasure   Kind = "measure"    // acquire a Raman spectrum
	KindAnalyse   Kind = "analyse"    // fit the spectrum (no actuator)
)

// Kinds lists every phase kind.
func Kinds() []Kind {
	return []Kind{KindPreflight, KindPumpDown, KindLeakCheck, KindPurge, KindRamp, KindHold, KindCool, KindVent, KindMeasure, KindAnalyse}
}

// stage is the progress stage of a kind (the executor's names).
var stages = map[Kind]string{
	KindPreflight: "preparation", KindPumpDown: "vacuum", KindLeakCheck: "vacuum", KindPurge: "purge",
	KindRamp: "heating", KindHold: "hold", KindCool: "cooling", KindVent: "venting",
	KindMeasure: "characterization", KindAnalyse: "analysis",
}

// InputType is the type of a declared input.
type InputType string

// Input types.
const (
	TypeNumber   InputType = "number"   // a float with a unit, min and max
	TypeInteger  InputType = "integer"  // an integer with min and max (unit optional)
	TypeString   InputType = "string"   // free text; parameters cannot reference it
	TypeDuration InputType = "duration" // an ISO 8601 duration (PT15M) with min and max
	TypeEnum     InputType = "enum"     // one of Values (strings or numbers)
)

// Input is one declared input of a recipe: a task input the capability's
// input_schema is generated from. A dotted Name ("carrier_gas.flow_sccm")
// is the member of an object input ("carrier_gas").
type Input struct {
	Name        string
	Type        InputType
	Unit        string   // number: required; integer: optional
	Min, Max    *float64 // number, integer; duration: seconds
	Default     any      // float64, string or time.Duration; nil: none
	Values      []any    // enum: strings or float64s
	Description string
	Required    bool
	Line        int

	defaultJSON any // the default as the schema states it
}

// Group is the object an input belongs to ("" for a top-level input).
func (in *Input) Group() string {
	g, _, ok := strings.Cut(in.Name, ".")
	if !ok {
		return ""
	}
	return g
}

// Member is the input's name inside its group (its Name at top level).
func (in *Input) Member() string {
	_, m, ok := strings.Cut(in.Name, ".")
	if !ok {
		return in.Name
	}
	return m
}

// Param is one phase parameter: a constant (Const: a float64, a
// time.Duration or a string), a reference to a declared input (Input), or
// the midpoint of two number inputs (Midpoint: a window's low and high
// end, such as temperature_range.min and .max). In YAML a reference is
// written {input: NAME}, a midpoint {midpoint: [LOW, HIGH]}; Resolve
// refuses a task whose LOW is above its HIGH.
type Param struct {
	Const    any
	Input    string
	Midpoint []string // [low, high]: declared number inputs of the parameter's unit
	Line     int
	Column   int
	Key      string // dotted key path of the parameter
}

// PhaseSpec is one phase as written in the recipe.
type PhaseSpec struct {
	Kind        Kind
	Name        string // display name (default: the kind)
	Stage       string // progress stage (default: by kind)
	Description string
	// Params are the kind's parameters by name (see docs/RECIPES.md).
	Params map[string]*Param
	// Flows are a hold's gas flows, gas → flow in sccm.
	Flows []FlowSpec
	// LeaveOpen are the gases of a hold's Flows that keep flowing after it.
	LeaveOpen []string
	// Ask are the questions asked, in order, before the phase runs
	// (question.go).
	Ask []*QuestionSpec
	// Zone is the heated zone a ramp, a hold or a cool acts on (zone:);
	// "" is the rig's only zone.
	Zone   string
	Line   int
	Column int
	Key    string // phases[i].kind

	leaveOpenLine int
	zoneAt        *origin // where zone: is written
}

// FlowSpec is one gas flow of a hold.
type FlowSpec struct {
	Gas  string
	Flow *Param
}

// CleanupSpec is the cleanup that always runs, after success or failure:
// heater off, reactive gases closed, a purge with the inert gas for Purge,
// every gas closed.
type CleanupSpec struct {
	Purge *Param
	Line  int
}

// Safety is the declared safety section. Load derives the effective risk
// floor and data classification from what the recipe does; a declared
// value is a minimum.
type Safety struct {
	RiskFloor             capability.RiskLevel
	RiskCeiling           capability.RiskLevel
	DataClassification    string // T1..T4
	RequiresHumanApproval *bool
}

// Recipe is a loaded recipe: its format, checked for shape, types and
// references (Load); Check judges it against a rig's envelope.
type Recipe struct {
	File        string // the name Load was given
	Name        string
	Version     string
	SemVer      *semver.Version
	Description string
	SHA256      string // hex sha256 of the file's bytes
	Safety      Safety
	Constraints capability.Constraints
	Budgets     *capability.Budgets // declared; nil: all derived
	Inputs      []*Input
	Phases      []*PhaseSpec
	Cleanup     *CleanupSpec

	root        *yaml.Node
	source      []byte // the file's bytes, as Load was given them
	versionLine int
	byName      map[string]*Input
	derived     derived
	capab       *capability.Capability
}

// Source returns the recipe file's bytes, as Load was given them (their
// sha256 is SHA256): what a session keeps, so that it recovers with this
// very recipe whatever the file on disk has become.
func (r *Recipe) Source() []byte { return r.source }

// Input returns the declared input of that name.
func (r *Recipe) Input(name string) (*Input, bool) {
	in, ok := r.byName[name]
	return in, ok
}

// paramKind is what a parameter holds.
type paramKind int

const (
	pNumber paramKind = iota + 1
	pInteger
	pDuration
	pString
)

func (k paramKind) String() string {
	switch k {
	case pNumber:
		return "a number"
	case pInteger:
		return "an integer"
	case pDuration:
		return "an ISO 8601 duration (e.g. PT5M)"
	case pString:
		return "a string"
	}
	return "?"
}

// Units of parameters (their key's suffix says which).
const (
	unitCelsius = "celsius"
	unitRate    = "celsius_per_minute"
	unitPa      = "Pa"
	unitSCCM    = "sccm"
	unitSecond  = "s"
	unitPaMin   = "Pa/min"
)

// unitAliases are the unit spellings an input may declare for a parameter unit.
var unitAliases = map[string][]string{
	unitCelsius: {"celsius", "°c", "degc", "c"},
	unitRate:    {"celsius_per_minute", "°c/min", "c/min", "degc/min"},
	unitPa:      {"pa", "pascal"},
	unitSCCM:    {"sccm"},
	unitSecond:  {"s", "second", "seconds"},
	unitPaMin:   {"pa/min", "pa_per_minute"},
}

func sameUnit(param, input string) bool {
	for _, a := range unitAliases[param] {
		if strings.EqualFold(strings.TrimSpace(input), a) {
			return true
		}
	}
	return false
}

// paramDef declares one parameter of a phase kind.
type paramDef struct {
	name     string
	kind     paramKind
	unit     string
	required bool
	def      any // default when absent and not required
}

// phaseParams are the parameters of each kind; flows and leave_open of a
// hold are decoded apart.
var phaseParams = map[Kind][]paramDef{
	KindPreflight: nil,
	KindPumpDown: {{name: "base_pressure_pa", kind: pNumber, unit: unitPa, required: true},
		{name: "timeout", kind: pDuration, required: true}},
	KindLeakCheck: {{name: "hold", kind: pDuration, required: true},
		{name: "max_rate_pa_per_min", kind: pNumber, unit: unitPaMin, required: true}},
	KindPurge: {{name: "gas", kind: pString, required: true}, {name: "flow_sccm", kind: pNumber, unit: unitSCCM, required: true},
		{name: "duration", kind: pDuration, required: true}},
	KindRamp: {{name: "temperature_c", kind: pNumber, unit: unitCelsius, required: true},
		{name: "rate_c_per_min", kind: pNumber, unit: unitRate, required: true},
		{name: "settle_band_c", kind: pNumber, unit: unitCelsius, def: 5.0},
		{name: "timeout", kind: pDuration}},
	KindHold: {{name: "duration", kind: pDuration, required: true}, {name: "temperature_c", kind: pNumber, unit: unitCelsius}},
	KindCool: {{name: "purge", kind: pDuration, def: time.Duration(0)}, {name: "below_c", kind: pNumber, unit: unitCelsius, required: true},
		{name: "timeout", kind: pDuration, required: true}},
	KindVent: {{name: "pressure_pa", kind: pNumber, unit: unitPa, required: true},
		{name: "timeout", kind: pDuration, required: true}},
	KindMeasure: {{name: "integration_s", kind: pNumber, unit: unitSecond, required: true}},
	KindAnalyse: {{name: "material", kind: pString, required: true}, {name: "target_layers", kind: pInteger}},
}

// commonPhaseKeys are accepted by every phase.
var commonPhaseKeys = []string{"name", "stage", "description", "ask"}

func defOf(k Kind, name string) (paramDef, bool) {
	for _, d := range phaseParams[k] {
		if d.name == name {
			return d, true
		}
	}
	return paramDef{}, false
}
