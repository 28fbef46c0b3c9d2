package budget

import (
	"maps"
	"slices"
	"sync"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
)

// Usage is what a session has consumed.
type Usage struct {
	// Wall is the process time since the session started running.
	Wall time.Duration `json:"wall_ns"`
	// GasVolume is the volume of each gas, in scc.
	GasVolume map[string]float64 `json:"gas_scc,omitempty"`
	// HeaterEnergy is in seconds at full power.
	HeaterEnergy float64 `json:"heater_full_power_s"`
	// Actions counts the actuator actions executed for the session.
	Actions int `json:"actions"`
	// Estimated: some interval between two readings of a channel was longer
	// than Opts.MaxGap (or spanned an outage) and was charged at the larger
	// rate of its ends.
	Estimated bool `json:"estimated,omitempty"`
}

func (u Usage) clone() Usage {
	u.GasVolume = maps.Clone(u.GasVolume)
	return u
}

// Sample is the last reading of one channel: its instant (the
// instrument's clock) and its rate (sccm for a gas, fraction of full power
// for the heater).
type Sample struct {
	At   time.Time `json:"at"`
	Rate float64   `json:"rate"`
}

// State is a Tracker's whole state, for a checkpoint.
type State struct {
	Usage  Usage             `json:"usage"`
	Gas    map[string]Sample `json:"gas_last,omitempty"`
	Heater *Sample           `json:"heater_last,omitempty"`
	// Zones are the last heater samples of the heated zones after the
	// first (envelope.Readings.Zones), by name: a rig of several zones is
	// charged every zone's heater.
	Zones map[string]Sample `json:"zones_heater_last,omitempty"`
}

// Opts tunes a Tracker.
type Opts struct {
	// Scale is process seconds per wall second (the engine's time scale;
	// 1 on a real rig, the default).
	Scale float64
	// MaxGap is the longest interval between two readings of a channel
	// that is not marked Estimated (default 5 s, wall time).
	MaxGap time.Duration
	// Start is when the session started running (wall): the first reading
	// of a channel is charged back to it. Zero: from the first reading.
	Start time.Time
}

// Tracker is the live usage of one session against its limits. Its
// methods are safe for concurrent use.
type Tracker struct {
	limits Limits
	opts   Opts

	mu     sync.Mutex
	st     State
	exceed *ExceededError
}

// NewTracker returns a tracker of limits from from (a recovered session's
// State; the zero State for a new one).
func NewTracker(limits Limits, from State, opts Opts) *Tracker {
	if opts.Scale <= 0 {
		opts.Scale = 1
	}
	if opts.MaxGap <= 0 {
		opts.MaxGap = 5 * time.Second
	}
	st := State{Usage: from.Usage.clone(), Gas: maps.Clone(from.Gas), Zones: maps.Clone(from.Zones)}
	if from.Heater != nil {
		h := *from.Heater
		st.Heater = &h
	}
	if st.Gas == nil {
		st.Gas = map[string]Sample{}
	}
	return &Tracker{limits: limits, opts: opts, st: st}
}

// Limits returns the tracker's limits.
func (t *Tracker) Limits() Limits { return t.limits }

// Observe charges the readings r: each gas's measured flow and the
// furnace's output, from the last reading of each (see the package
// documentation for gaps, ties and stale readings).
func (t *Tracker) Observe(r envelope.Readings) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for gas, st := range r.Flows {
		if st.At.IsZero() {
			continue
		}
		last, ok := t.st.Gas[gas]
		next, charge := t.advance(last, ok, st.At, max(st.Flow.SCCM(), 0))
		t.st.Gas[gas] = next
		if charge > 0 {
			if t.st.Usage.GasVolume == nil {
				t.st.Usage.GasVolume = map[string]float64{}
			}
			t.st.Usage.GasVolume[gas] += charge / 60 // sccm × s → scc
		}
	}
	if f := r.Furnace; !f.At.IsZero() {
		var last Sample
		ok := t.st.Heater != nil
		if ok {
			last = *t.st.Heater
		}
		next, charge := t.advance(last, ok, f.At, heaterRate(f))
		t.st.Heater = &next
		t.st.Usage.HeaterEnergy += charge
	}
	for name, z := range r.Zones {
		if z.At.IsZero() {
			continue
		}
		last, ok := t.st.Zones[name]
		next, charge := t.advance(last, ok, z.At, heaterRate(z))
		if t.st.Zones == nil {
			t.st.Zones = map[string]Sample{}
		}
		t.st.Zones[name] = next
		t.st.Usage.HeaterEnergy += charge
	}
}

// heaterRate is a controller's output as a fraction of full power (0..1).
func heaterRate(f device.FurnaceStatus) float64 {
	return min(max(float64(f.OutputPower), 0), 100) / 100
}

// advance takes a reading (at, rate) of a channel whose last sample is
// last (ok: there is one) and returns the new last sample and the charge
// in rate × process seconds.
func (t *Tracker) advance(last Sample, ok bool, at time.Time, rate float64) (Sample, float64) {
	if !ok {
		var charge float64
		if !t.opts.Start.IsZero() && at.After(t.opts.Start) {
			charge = rate * t.process(at.Sub(t.opts.Start))
		}
		return Sample{At: at, Rate: rate}, charge
	}
	switch {
	case at.Before(last.At):
		return last, 0 // older than what was charged: nothing new
	case at.Equal(last.At):
		last.Rate = max(last.Rate, rate) // a tie: the larger rate from here on
		return last, 0
	}
	dt := at.Sub(last.At)
	if dt > t.opts.MaxGap {
		t.st.Usage.Estimated = true
	}
	return Sample{At: at, Rate: rate}, max(last.Rate, rate) * t.process(dt)
}

// process is the process seconds of a wall interval.
func (t *Tracker) process(d time.Duration) float64 { return d.Seconds() * t.opts.Scale }

// SetActions records the number of actuator actions executed for the
// session so far (never fewer than already recorded).
func (t *Tracker) SetActions(n int) {
	t.mu.Lock()
	t.st.Usage.Actions = max(t.st.Usage.Actions, n)
	t.mu.Unlock()
}

// SetWall records the process time since the session started running.
func (t *Tracker) SetWall(d time.Duration) {
	t.mu.Lock()
	t.st.Usage.Wall = max(t.st.Usage.Wall, d)
	t.mu.Unlock()
}

// Usage returns the usage at now (wall): what was charged up to each
// channel's last reading, plus its last rate from then to now.
func (t *Tracker) Usage(now time.Time) Usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.usageLocked(now)
}

func (t *Tracker) usageLocked(now time.Time) Usage {
	u := t.st.Usage.clone()
	for gas, s := range t.st.Gas {
		if now.After(s.At) && s.Rate > 0 {
			if u.GasVolume == nil {
				u.GasVolume = map[string]float64{}
			}
			u.GasVolume[gas] += s.Rate * t.process(now.Sub(s.At)) / 60
		}
	}
	if s := t.st.Heater; s != nil && now.After(s.At) {
		u.HeaterEnergy += s.Rate * t.process(now.Sub(s.At))
	}
	for _, s := range t.st.Zones {
		if now.After(s.At) {
			u.HeaterEnergy += s.Rate * t.process(now.Sub(s.At))
		}
	}
	return u
}

// State returns the tracker's state for a checkpoint: what was charged up
// to each channel's last reading (the provisional charge since is not
// included; the next reading charges it).
func (t *Tracker) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := State{Usage: t.st.Usage.clone(), Gas: maps.Clone(t.st.Gas), Zones: maps.Clone(t.st.Zones)}
	if t.st.Heater != nil {
		h := *t.st.Heater
		st.Heater = &h
	}
	return st
}

// Check returns the first budget whose usage at now passed its limit, as
// an *ExceededError (nil when none): actions, then heater energy, then
// each gas by name. Once a budget has been exceeded Check keeps returning
// it. The wall-time budget is not checked here (Limits.Wall).
func (t *Tracker) Check(now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exceed != nil {
		return t.exceed
	}
	u := t.usageLocked(now)
	l := t.limits
	switch {
	case l.Actions > 0 && u.Actions > l.Actions:
		t.exceed = &ExceededError{Budget: Actions, Unit: Actions.Unit(), Limit: float64(l.Actions), Used: float64(u.Actions)}
	case l.HeaterEnergy > 0 && u.HeaterEnergy > l.HeaterEnergy:
		t.exceed = &ExceededError{Budget: HeaterEnergy, Unit: HeaterEnergy.Unit(), Limit: l.HeaterEnergy, Used: u.HeaterEnergy}
	default:
		for _, gas := range slices.Sorted(maps.Keys(l.GasVolume)) {
			if lim := l.GasVolume[gas]; u.GasVolume[gas] > lim {
				t.exceed = &ExceededError{Budget: GasVolume, Gas: gas, Unit: GasVolume.Unit(), Limit: lim, Used: u.GasVolume[gas]}
				break
			}
		}
	}
	if t.exceed == nil {
		return nil
	}
	return t.exceed
}

// Line is one budget of a Report.
type Line struct {
	Budget Budget   `json:"budget"`
	Gas    string   `json:"gas,omitempty"`
	Unit   string   `json:"unit"`
	Used   float64  `json:"used"`
	Limit  *float64 `json:"limit,omitempty"` // nil: no limit
}

// Report is usage against limits, for display and for progress events
// (data.budgets).
type Report struct {
	Lines []Line `json:"items"`
	// Estimated: Usage.Estimated.
	Estimated bool `json:"estimated,omitempty"`
	// Exceeded names the budget that was exceeded, if one was.
	Exceeded *ExceededError `json:"exceeded,omitempty"`
}

// Report returns the usage at now against the limits: wall time, actions,
// heater energy, then every gas that has a limit or has flowed, by name.
func (t *Tracker) Report(now time.Time) Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.usageLocked(now)
	l := t.limits
	lim := func(v float64) *float64 {
		if v == 0 {
			return nil
		}
		return &v
	}
	r := Report{Estimated: u.Estimated, Exceeded: t.exceed, Lines: []Line{
		{Budget: WallTime, Unit: WallTime.Unit(), Used: round(u.Wall.Seconds()), Limit: lim(l.Wall.Seconds())},
		{Budget: Actions, Unit: Actions.Unit(), Used: float64(u.Actions), Limit: lim(float64(l.Actions))},
		{Budget: HeaterEnergy, Unit: HeaterEnergy.Unit(), Used: round(u.HeaterEnergy), Limit: lim(l.HeaterEnergy)},
	}}
	gases := slices.Collect(maps.Keys(u.GasVolume))
	for g := range l.GasVolume {
		if !slices.Contains(gases, g) {
			gases = append(gases, g)
		}
	}
	slices.Sort(gases)
	for _, g := range gases {
		ln := Line{Budget: GasVolume, Gas: g, Unit: GasVolume.Unit(), Used: round(u.GasVolume[g])}
		if v, ok := l.GasVolume[g]; ok {
			ln.Limit = &v
		}
		r.Lines = append(r.Lines, ln)
	}
	return r
}

// round keeps three decimals: a display figure.
func round(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
