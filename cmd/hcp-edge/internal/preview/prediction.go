package preview

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/session/analysis"
	"hcp-edge/session/executor"
)

// Duration is a span of time that JSON carries as seconds (a number).
type Duration time.Duration

// MarshalJSON writes the seconds, to the millisecond.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, math.Round(time.Duration(d).Seconds()*1000)/1000, 'f', -1, 64), nil
}

// UnmarshalJSON reads seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = Duration(s * float64(time.Second))
	return nil
}

// String is the duration rounded to the second.
func (d Duration) String() string { return time.Duration(d).Round(time.Second).String() }

// Prediction is what a preview predicts of a run. Times are process time
// since the run started (At) or spans of it.
type Prediction struct {
	Capability string `json:"capability"`
	// Completed: the recipe ran to its end and built its outputs.
	Completed bool `json:"completed"`
	// Failure is why it would not complete (nil when Completed).
	Failure *Failure `json:"failure,omitempty"`
	// ProcessTime is the predicted duration of the run.
	ProcessTime Duration `json:"process_time_s"`
	// WallTime is what the preview took, SpeedUp ProcessTime / WallTime.
	WallTime Duration `json:"wall_time_s"`
	SpeedUp  float64  `json:"speed_up"`
	// Steps are the recipe's steps in order, Phases the same time summed
	// by progress stage in order of first appearance.
	Steps  []Step  `json:"steps"`
	Phases []Phase `json:"phases"`
	// GasSCC is the volume of each gas, in scc (standard cm³), integrated
	// from the controllers' measured flows.
	GasSCC map[string]float64 `json:"gas_scc"`
	// HeaterFullPowerS is the heater's energy in seconds at full output
	// (× the heater's rated power = energy): the first heated zone's, as
	// the session's heater_energy budget counts it (Zones has each one's).
	HeaterFullPowerS float64 `json:"heater_full_power_s"`
	// Zones is each heated zone's predicted course, in the rig's order.
	Zones []Zone `json:"zones"`
	// Margins is, for each limit of the envelope on a channel with a
	// reading, the smallest headroom while the limit applied, and when:
	// every upper limit, and each lower limit above zero.
	Margins []Margin `json:"margins"`
	// Refusals are the actions the interlock or the tool pipeline refused.
	Refusals []Refusal `json:"refusals"`
	// Trips are the emergency procedures the trip rules would have run.
	Trips []Trip `json:"trips"`
	// Product is what grew on the sample (none for a run that grows none).
	Product Product `json:"product"`
	// Outputs are the recipe's outputs (as the task's result would carry).
	Outputs  map[string]any `json:"outputs,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
	// Artifacts are the files written (paths), process_profile.svg among
	// them; none when the preview wrote to a temporary directory.
	Artifacts []string `json:"artifacts,omitempty"`
}

// Failure is why the run would fail: its L4 code, the step and the cause.
type Failure struct {
	Code    string   `json:"code"`
	Step    string   `json:"step,omitempty"`
	Phase   string   `json:"phase,omitempty"`
	At      Duration `json:"at_s"`
	Message string   `json:"message"`
}

// Step is one step's predicted duration.
type Step struct {
	Name     string   `json:"name"`
	Phase    string   `json:"phase"`
	Start    Duration `json:"start_s"`
	Duration Duration `json:"duration_s"`
	Ran      bool     `json:"ran"`
}

// Phase is a progress stage's predicted duration (the sum of its steps).
type Phase struct {
	Name     string   `json:"name"`
	Duration Duration `json:"duration_s"`
}

// Zone is one heated zone's predicted course: the hottest its controller
// reads (when: the margin of its <zone>.temperature), what it reads at the
// end, and its heater's energy in seconds at full output.
type Zone struct {
	_                [0]func() // not comparable: no equality function in the binary
	Name             string    `json:"name"`
	PeakC            float64   `json:"peak_c"`
	FinalC           float64   `json:"final_c"`
	HeaterFullPowerS float64   `json:"heater_full_power_s"`
	out              float64   // the output at the last observation, %
}

// Margin is one limited channel's closest approach to one of its limits.
type Margin struct {
	Channel  string   `json:"channel"`
	Limit    string   `json:"limit"` // "max" or "min"
	Bound    float64  `json:"bound"` // the limit's value
	Unit     string   `json:"unit"`
	Value    float64  `json:"value"`    // the value at the closest approach
	Headroom float64  `json:"headroom"` // distance to the limit, in Unit (negative: beyond it)
	At       Duration `json:"at_s"`
	Step     string   `json:"step,omitempty"`
}

// Refusal is one action refused.
type Refusal struct {
	At     Duration `json:"at_s"`
	Step   string   `json:"step,omitempty"`
	Action string   `json:"action"`
	Rule   string   `json:"rule"`
	Reason string   `json:"reason"`
}

// Trip is one trip rule that fired.
type Trip struct {
	At        Duration `json:"at_s"`
	Step      string   `json:"step,omitempty"`
	Trip      string   `json:"trip"`
	Procedure string   `json:"procedure"`
	Reason    string   `json:"reason"`
}

// Product is the film on the sample at the end, and what the preview
// assumed of the boat.
type Product struct {
	// Material is what grew, as the simulator names it
	// (plant.Snapshot.Material: one material, or two joined by "+"; ""
	// none).
	Material string `json:"material,omitempty"`
	// Layers is the film's mean thickness in layers, a real number
	// (fractional: partial coverage of the next layer).
	Layers float64 `json:"layers"`
	// PredictedLayerCount is the layer count the Raman analysis would
	// report of Layers (analysis.LayerCountOf): the whole count covering
	// most of the sample, 4 with PredictedBulk from the analysis' bulk
	// limit on, 0 for no film. It compares with the run's layer_count.
	PredictedLayerCount int  `json:"predicted_layer_count"`
	PredictedBulk       bool `json:"predicted_bulk"`
	// Film is the thickness per material (plant.Film.Amounts: layers of
	// each TMD; the covered and the bilayer fractions of a foil).
	Film map[string]float64 `json:"film,omitempty"`
	// Coverage is, for a material the analysis counts by coverage (read
	// from its own bands, not from a peak distance: analysis.BandsFor is
	// nil), the fraction of the sample per layer count ("0" bare), and
	// Quality the film's other figures the simulator knows (the D/G ratio
	// "d_g", the domain size "domain_um"); absent for the others.
	Coverage map[string]float64 `json:"coverage,omitempty"`
	Quality  map[string]float64 `json:"quality,omitempty"`
	// ExpectedMaterial is what the recipe grows (its analyse phase's
	// material; "" for a recipe that analyses none).
	ExpectedMaterial string `json:"expected_material,omitempty"`
	// Precursor is what the preview loaded in the simulated boat, and
	// PrecursorBasis why.
	Precursor      string `json:"precursor"`
	PrecursorBasis string `json:"precursor_basis"`
}

// prediction assembles what r observed.
func (r *run) prediction(capab string, steps []executor.Step, res *executor.Result, runErr error) *Prediction {
	p := &Prediction{Capability: capab, Completed: runErr == nil, ProcessTime: Duration(r.clock.Elapsed()),
		Refusals: []Refusal{}, Trips: []Trip{}, Margins: []Margin{}}
	r.mu.Lock()
	for i, s := range steps {
		st := Step{Name: s.Name, Phase: s.Stage}
		if i < len(r.spans) && r.spans[i].ran {
			sp := r.spans[i]
			if sp.end < 0 {
				sp.end = r.clock.Elapsed()
			}
			st.Start, st.Duration, st.Ran = Duration(sp.start), Duration(sp.end-sp.start), true
		}
		p.Steps = append(p.Steps, st)
	}
	for _, k := range slices.Sorted(maps.Keys(r.margins)) {
		p.Margins = append(p.Margins, *r.margins[k])
	}
	p.Trips = append(p.Trips, r.trips...)
	for i := range r.zones { // the run is over: nothing observes them again
		z := &r.zones[i]
		z.PeakC, z.FinalC, z.HeaterFullPowerS = round(z.PeakC, 1), round(z.FinalC, 1), round(z.HeaterFullPowerS, 1)
	}
	p.Zones = r.zones
	warns := r.warns
	r.mu.Unlock()
	for _, s := range p.Steps {
		if !s.Ran {
			continue
		}
		if n := len(p.Phases); n > 0 && p.Phases[n-1].Name == s.Phase {
			p.Phases[n-1].Duration += s.Duration
			continue
		}
		if i := slices.IndexFunc(p.Phases, func(ph Phase) bool { return ph.Name == s.Phase }); i >= 0 {
			p.Phases[i].Duration += s.Duration
			continue
		}
		p.Phases = append(p.Phases, Phase{Name: s.Phase, Duration: s.Duration})
	}
	u := r.tracker.Usage(r.clock.Now())
	p.GasSCC = map[string]float64{}
	for _, g := range r.env.Spec().Gases {
		p.GasSCC[g.Gas] = round(u.GasVolume[g.Gas], 1)
	}
	p.HeaterFullPowerS = round(u.HeaterEnergy, 1)
	for _, e := range r.audit.entries() {
		if e.at.Decision != envelope.DecisionRefused {
			continue
		}
		ref := Refusal{At: e.el, Rule: string(e.at.Rule), Reason: e.at.Reason, Step: r.stepAt(time.Duration(e.el))}
		if e.at.Action != nil {
			ref.Action = e.at.Action.String()
		}
		p.Refusals = append(p.Refusals, ref)
	}
	film := r.plant.Film()
	p.Product = Product{Material: film.Material(), Layers: round(film.Layers(), 3)}
	p.Product.PredictedLayerCount, p.Product.PredictedBulk = analysis.LayerCountOf(film.Layers())
	for k, v := range film.Amounts() {
		if p.Product.Film == nil {
			p.Product.Film = map[string]float64{}
		}
		p.Product.Film[k] = round(v, 3)
	}
	if m, err := analysis.ParseMaterial(film.Material()); err == nil && m != analysis.Auto && analysis.BandsFor(m) == nil {
		// Counted by coverage: the layer count covering most of the
		// covered sample, as the simulator's truth and the analysis name it.
		t := film.Truth()
		p.Product.PredictedLayerCount, p.Product.PredictedBulk = t.LayerCount, false
		p.Product.Coverage = map[string]float64{}
		for n, f := range t.Coverage {
			p.Product.Coverage[strconv.Itoa(n)] = round(f, 3)
		}
		p.Product.Quality = map[string]float64{"d_g": round(t.DG, 3), "domain_um": round(t.DomainUM, 1)}
	}
	if res != nil {
		p.Outputs = res.Outputs
		warns = res.Warnings
		for _, a := range res.Artifacts {
			p.Artifacts = append(p.Artifacts, a.Path)
		}
	}
	p.Warnings = append(p.Warnings, warns...)
	if runErr != nil {
		f := &Failure{Code: "internal_error", Message: runErr.Error(), At: p.ProcessTime}
		var xf *executor.Failure
		if errors.As(runErr, &xf) {
			f.Code, f.Step, f.Phase = string(xf.Code), xf.Step, xf.Phase
		}
		p.Failure = f
	}
	return p
}

// stepAt names the step running at virtual time t.
func (r *run) stepAt(t time.Duration) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ""
	for i, sp := range r.spans {
		if sp.ran && sp.start <= t {
			name = r.names[i]
		}
	}
	return name
}

func round(v float64, digits int) float64 {
	m := math.Pow(10, float64(digits))
	return math.Round(v*m) / m
}
