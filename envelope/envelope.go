package envelope

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"hcp-edge/device/rig"

	"hcp-edge/device"
)

// Trip is a condition that runs an emergency procedure and latches the
// interlock.
type Trip string

// Trips. Every one needs an emergency procedure.
const (
	TripOverTemperature Trip = "over_temperature"
	TripGasLeak         Trip = "gas_leak_detected"
	TripOverPressure    Trip = "over_pressure"
	TripCommsLoss       Trip = "comms_loss"
	TripEStop           Trip = "estop"
	// TripGasInterlockLost: a gas line is in use while an output its
	// interlock requires on (the exhaust scrubber) reads off, or an input it
	// requires at a level (exhaust_ok, door_closed) reads the other: the
	// condition the gas was admitted under is gone. Its procedure defaults
	// to close_all_valves_and_alert (DefaultGasInterlockLostProcedure).
	TripGasInterlockLost Trip = "gas_interlock_lost"
)

// DefaultGasInterlockLostProcedure is the procedure of gas_interlock_lost
// when emergency_procedures does not name one: the gas lines close, the
// heater and the pumps keep running (the procedure L3 gives the gas leak).
const DefaultGasInterlockLostProcedure = ProcCloseValvesAndAlert

// Trips lists every trip the envelope knows, in a stable order.
func Trips() []Trip {
	return []Trip{TripOverTemperature, TripGasLeak, TripOverPressure, TripCommsLoss, TripEStop, TripGasInterlockLost}
}

// optionalProcedure reports whether a trip's procedure may be left out of
// emergency_procedures, and the one it then runs. gas_interlock_lost came
// after the other trips: an envelope written before it keeps compiling,
// and its lines close whichever procedure runs (each of the three closes
// every gas line).
func optionalProcedure(t Trip) (Procedure, bool) {
	if t == TripGasInterlockLost {
		return DefaultGasInterlockLostProcedure, true
	}
	return "", false
}

// Procedure is an emergency procedure.
type Procedure string

// Procedures.
const (
	// ProcImmediateShutdown: every heated zone's heater off, interlock relay
	// de-energised, every gas flow to zero and every gas line valve closed.
	ProcImmediateShutdown Procedure = "immediate_shutdown"
	// ProcCloseValvesAndAlert: every gas flow to zero and every gas line valve
	// closed, and an alert.
	ProcCloseValvesAndAlert Procedure = "close_all_valves_and_alert"
	// ProcSafeState: every instrument halted (the e-stop path).
	ProcSafeState Procedure = "safe_state"
)

// limit is one channel's compiled hard limit, in device units.
type limit struct {
	channel  string
	kind     kind
	min, max float64
	hasMin   bool
	rate     float64 // per minute; 0: none
	unit     string  // the configured unit, for messages
}

type heaterRule struct {
	maxPressure  device.Pressure
	pUnit        string
	inertGas     string
	minInertFlow device.Flow
	fUnit        string
}

type gasRule struct {
	gas         string
	maxPressure device.Pressure
	pUnit       string
	switches    []string
	inputs      []string // sorted names
	levels      map[string]bool
	minTemp     device.Temperature // with hasMinTemp: min_temperature
	zone        int                // with hasMinTemp: the zone it judges (index in Envelope.zones)
	hasMinTemp  bool
	tUnit       string
}

// heldLine is a gas line whose interlock requires outputs on or inputs at a
// level for as long as the gas is in use (gas_interlock_lost): the gas's
// line valve, and its rule's switches and inputs but for the inputs that
// are trips of their own (inputs.leak, inputs.estop).
type heldLine struct {
	gas, valve string
	index      int // in spec.Gases
	switches   []string
	inputs     []string
	levels     map[string]bool
}

type purgeRule struct {
	inertGas     string
	minInertFlow device.Flow
	maxPressure  device.Pressure // 0: pumping down does not count
	minDuration  time.Duration
}

type ventRule struct {
	valve, gate string
	maxTemp     device.Temperature
	tUnit       string
}

// zone is one heated zone as the envelope judges it: its name, its
// controller's range and its over_temperature limit (its ZoneTemperature
// channel's max).
type zone struct {
	name        string
	temperature string // its ZoneTemperature channel (made once: EvaluateTrips runs at every poll)
	spec        FurnaceSpec
	overTemp    *limit
}

// Envelope is a compiled, validated safety envelope for one RigSpec. It is
// immutable and safe for concurrent use. Its Check is a pure function of an
// Action, a Readings snapshot and a State.
type Envelope struct {
	cfg          Config
	spec         RigSpec
	limits       map[string]*limit
	zones        []zone // the heated zones, in RigSpec.ZoneList's order; the first's reading is Readings.Furnace
	overPressure *limit
	heater       *heaterRule
	gasRules     map[string]*gasRule
	requiredBy   map[string][]string // switch → gases whose interlock needs it on
	held         []heldLine          // lines whose interlock holds while in use (gas_interlock_lost), by gas
	reactive     []string
	ventPurged   []string // venting_without_purge: the flammable, toxic and corrosive lines, sorted
	tracked      []string // the gases State records in use until a purge: reactive ∪ ventPurged, sorted
	prohibited   map[Rule]bool
	purge        *purgeRule
	vent         *ventRule
	procedures   map[Trip]Procedure
	inputs       Inputs
	unrestricted map[string]string
	maxAge       time.Duration
	commsTimeout time.Duration
	flowOn       device.Flow
	gases        map[string]GasSpec
	gasOfValve   map[string]string
	switches     map[string]SwitchSpec
	inputSet     map[string]bool
	version      string
}

// Config returns the configuration the envelope was compiled from.
func (e *Envelope) Config() Config { return e.cfg }

// VentValves are the vent and gate valves: the envelope's vent section
// where it names them, else the outputs of the layout's vent and gate
// roles ("" where the rig has neither).
func (e *Envelope) VentValves() (vent, gate string) {
	vent, gate = e.spec.Roles.Vent, e.spec.Roles.Gate
	if v := e.cfg.Vent; v != nil {
		if v.Valve != "" {
			vent = v.Valve
		}
		if v.Gate != "" {
			gate = v.Gate
		}
	}
	return vent, gate
}

// Spec returns the rig specification the envelope was compiled against.
func (e *Envelope) Spec() RigSpec {
	s := e.spec
	s.Gases = slices.Clone(s.Gases)
	s.Zones = slices.Clone(s.Zones)
	s.Switches = slices.Clone(s.Switches)
	s.Inputs = slices.Clone(s.Inputs)
	s.Internal = slices.Clone(s.Internal)
	s.Wires = maps.Clone(s.Wires)
	if s.Spectrometer != nil {
		sp := *s.Spectrometer
		s.Spectrometer = &sp
	}
	return s
}

// Procedure returns the emergency procedure of a trip.
func (e *Envelope) Procedure(t Trip) Procedure { return e.procedures[t] }

// MaxReadingAge is the oldest a reading may be for a decision.
func (e *Envelope) MaxReadingAge() time.Duration { return e.maxAge }

// CommsTimeout is how long an instrument may stay silent before comms_loss.
func (e *Envelope) CommsTimeout() time.Duration { return e.commsTimeout }

// WritableChannels lists every channel an Action can write on the rig, sorted.
func (s RigSpec) WritableChannels() []string {
	var ch []string
	for _, z := range s.ZoneList() {
		ch = append(ch, ZoneChannel(z.Name, ZoneSetpoint), ZoneChannel(z.Name, ZoneRampRate), ZoneChannel(z.Name, ZoneHeater))
	}
	for _, g := range s.Gases {
		ch = append(ch, FlowChannel(g.Gas))
	}
	for _, sw := range s.Switches {
		ch = append(ch, SwitchChannel(sw.Name))
	}
	if s.Spectrometer != nil {
		ch = append(ch, ChannelIntegration)
	}
	sort.Strings(ch)
	return ch
}

// channelKind and device range of a channel known to the spec.
func (s RigSpec) channel(name string) (k kind, lo, hi float64, writable, ok bool) {
	if zn, what, found := strings.Cut(name, "."); found {
		if z, ok := s.zoneRange(zn); ok {
			switch what {
			case ZoneSetpoint:
				return kindTemperature, float64(z.SetpointMin), float64(z.SetpointMax), true, true
			case ZoneRampRate:
				return kindRate, 0, float64(z.RampMax), true, true
			case ZoneHeater:
				return kindSwitch, 0, 1, true, true
			case ZoneTemperature:
				return kindTemperature, 0, float64(z.ProcessValueMax), false, true
			}
		}
	}
	switch name {
	case ChannelPressure:
		return kindPressure, float64(s.Gauge.Min), float64(s.Gauge.Max), false, true
	case ChannelIntegration:
		if s.Spectrometer == nil {
			return 0, 0, 0, false, false
		}
		return kindDuration, s.Spectrometer.MinIntegration.Seconds(), s.Spectrometer.MaxIntegration.Seconds(), true, true
	}
	if gas, found := strings.CutPrefix(name, "flow."); found {
		for _, g := range s.Gases {
			if g.Gas == gas {
				return kindFlow, 0, float64(g.FullScale), true, true
			}
		}
	}
	if sw, found := strings.CutPrefix(name, "switch."); found {
		for _, x := range s.Switches {
			if x.Name == sw {
				return kindSwitch, 0, 1, true, true
			}
		}
	}
	return 0, 0, 0, false, false
}

// Compile validates cfg against the rig and returns the envelope. It refuses
// (with errors joining one *ConfigError per problem, each naming the channel
// or field) a limit outside a device's range, a writable channel left without
// a bounding rule, an unknown channel, unit, gas, switch, input, rule, trip or
// procedure, a trip without a procedure (gas_interlock_lost may go without:
// DefaultGasInterlockLostProcedure), a soft limit, and missing timings.
func Compile(cfg Config, spec RigSpec) (*Envelope, error) {
	c := &compiler{cfg: cfg, spec: spec}
	e := c.compile()
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	e.version = version(cfg, spec) // auditreadings.go
	return e, nil
}

type compiler struct {
	cfg  Config
	spec RigSpec
	errs []error
}

// fail is not inlined, nor are violation and stale (check.go): a copy at
// each of their hundred call sites, none on the monitor's path, cost the
// armv7 binary 28 kB (docs/FOOTPRINT.md); so are the zone helpers
// (zoneIndex, zoneReading, Action.Zone, ...).
//
//go:noinline
func (c *compiler) fail(path, format string, args ...any) {
	c.errs = append(c.errs, &ConfigError{Path: path, Reason: fmt.Sprintf(format, args...)})
}

// quantity converts q to device units, recording an error at path.
func (c *compiler) quantity(path string, q Quantity, k kind, required bool) (float64, bool) {
	if q.IsZero() {
		if required {
			c.fail(path, "missing (want a %s such as %q)", k, example(k))
		}
		return 0, false
	}
	v, err := q.to(k)
	if err != nil {
		c.fail(path, "%v", err)
		return 0, false
	}
	return v, true
}

func example(k kind) string {
	switch k {
	case kindPressure:
		return "10 mbar"
	case kindFlow:
		return "50 sccm"
	case kindTemperature:
		return "80 celsius"
	}
	return "1 s"
}

func (c *compiler) compile() *Envelope {
	cfg, spec := c.cfg, c.spec
	e := &Envelope{
		cfg: cfg, spec: spec, limits: map[string]*limit{}, gasRules: map[string]*gasRule{},
		requiredBy: map[string][]string{}, prohibited: map[Rule]bool{}, procedures: map[Trip]Procedure{},
		unrestricted: map[string]string{}, gases: map[string]GasSpec{}, gasOfValve: map[string]string{},
		switches: map[string]SwitchSpec{}, inputSet: map[string]bool{}, inputs: cfg.Inputs,
	}
	c.checkSpec(e)

	// Timing.
	e.maxAge = time.Duration(cfg.MaxReadingAge)
	if e.maxAge <= 0 {
		c.fail("max_reading_age", "must be positive (e.g. \"2s\")")
	}
	e.commsTimeout = time.Duration(cfg.CommsTimeout)
	if e.commsTimeout <= 0 {
		c.fail("comms_timeout", "must be positive (e.g. \"3s\")")
	}
	if v, ok := c.quantity("flow_on_threshold", cfg.FlowOnThreshold, kindFlow, true); ok {
		if v <= 0 {
			c.fail("flow_on_threshold", "must be positive")
		}
		e.flowOn = device.Flow(v)
	}

	c.parameters(e)
	c.interlocks(e)
	c.prohibitedActions(e)
	c.procedures(e)
	c.inputsAndUnrestricted(e)
	c.heldLines(e)
	c.coverage(e)
	return e
}

// maxLines bounds the rig's gas lines: EvaluateTrips, which runs at every
// poll, keeps one bit per line in a word.
const maxLines = 64

func (c *compiler) checkSpec(e *Envelope) {
	if len(c.spec.Gases) > maxLines {
		c.fail("rig.gases", "%d gas lines: at most %d", len(c.spec.Gases), maxLines)
	}
	for _, g := range c.spec.Gases {
		if _, dup := e.gases[g.Gas]; dup || g.Gas == "" {
			c.fail("rig.gases", "gas %q empty or declared twice", g.Gas)
		}
		e.gases[g.Gas] = g
		if g.FullScale <= 0 {
			c.fail("rig.gases."+g.Gas, "full scale must be positive")
		}
		e.gasOfValve[g.Valve] = g.Gas
	}
	for _, s := range c.spec.Switches {
		if _, dup := e.switches[s.Name]; dup || s.Name == "" {
			c.fail("rig.switches", "switch %q empty or declared twice", s.Name)
		}
		e.switches[s.Name] = s
	}
	for _, g := range c.spec.Gases {
		if sw, ok := e.switches[g.Valve]; !ok || sw.InterlockOwned {
			c.fail("rig.gases."+g.Gas, "line valve %q is not a declared switch", g.Valve)
		}
	}
	for _, in := range c.spec.Inputs {
		e.inputSet[in] = true
	}
	if c.spec.Furnace.SetpointMax <= c.spec.Furnace.SetpointMin || c.spec.Gauge.Max <= c.spec.Gauge.Min {
		c.fail("rig", "furnace setpoint range and gauge range must be non-empty")
	}
	c.checkZones(e)
}

// zoneNameReserved are the first parts of the channels that are not a
// heated zone's: a zone of one of these names would share their channels.
var zoneNameReserved = []string{"flow", "switch", "input", "chamber", "spectrometer", "channel", "rig"}

// checkZones compiles the rig's heated zones: each named, once, with a
// name that is not another channel's first part (nor holds a dot), its
// setpoint range non-empty; the first zone's range is RigSpec.Furnace.
func (c *compiler) checkZones(e *Envelope) {
	zs := c.spec.ZoneList()
	if len(c.spec.Zones) > 0 && c.spec.Zones[0].FurnaceSpec != c.spec.Furnace {
		c.fail("rig.zones", "the first zone's range (%s) is not RigSpec.Furnace", c.spec.Zones[0].Name)
	}
	for _, z := range zs {
		if z.Name == "" || strings.Contains(z.Name, ".") || slices.Contains(zoneNameReserved, z.Name) || e.zoneIndex(z.Name) >= 0 {
			c.fail("rig.zones", "zone %q: empty, declared twice, holding a dot or named %v", z.Name, zoneNameReserved)
		}
		if z.SetpointMax <= z.SetpointMin {
			c.fail("rig.zones."+z.Name, "the setpoint range must be non-empty")
		}
		e.zones = append(e.zones, zone{name: z.Name, temperature: ZoneChannel(z.Name, ZoneTemperature), spec: z.FurnaceSpec})
	}
}

// zoneIndex is the index in e.zones of the zone named name, or -1.
//
//go:noinline
func (e *Envelope) zoneIndex(name string) int {
	for i := range e.zones {
		if e.zones[i].name == name {
			return i
		}
	}
	return -1
}

// ZoneReading returns the reading of zone's controller in r: Furnace for
// the rig's first zone, Zones[zone] for another; ok is false for a zone
// the rig does not have.
func (e *Envelope) ZoneReading(r Readings, zone string) (st device.FurnaceStatus, ok bool) {
	i := e.zoneIndex(zone)
	if i < 0 {
		return st, false
	}
	return e.zoneReading(r, i), true
}

// zoneReading is the reading of the i-th zone's controller in r.
//
//go:noinline
func (e *Envelope) zoneReading(r Readings, i int) device.FurnaceStatus {
	if i == 0 {
		return r.Furnace
	}
	return r.Zones[e.zones[i].name]
}

// unknownZone reports a channel under path whose first part names no
// heated zone of the rig while its second is a zone's quantity
// (sulfur.setpoint on a rig without a zone sulfur): a *ConfigError that
// wraps ErrUnknownZone.
func (c *compiler) unknownZone(path, channel string) bool {
	zn, what, found := strings.Cut(channel, ".")
	switch what {
	case ZoneSetpoint, ZoneRampRate, ZoneHeater, ZoneTemperature:
	default:
		return false
	}
	if !found || slices.Contains(c.spec.ZoneNames(), zn) || slices.Contains(zoneNameReserved, zn) {
		return false // a zone's channel, or another's (flow.setpoint: a gas named setpoint)
	}
	c.noZone(path, zn)
	return true
}

// noZone records that path names zn, a heated zone the rig does not have.
//
//go:noinline
func (c *compiler) noZone(path, zn string) {
	c.errs = append(c.errs, &ConfigError{Path: path, Err: ErrUnknownZone,
		Reason: fmt.Sprintf("the rig has no heated zone %q (zones: %s)", zn, strings.Join(c.spec.ZoneNames(), ", "))})
}

func (c *compiler) parameters(e *Envelope) {
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Parameters)) {
		p := c.cfg.Parameters[name]
		path := "parameters." + name
		k, lo, hi, writable, ok := c.spec.channel(name)
		if !ok {
			if c.unknownZone(path, name) {
				continue
			}
			known := c.spec.WritableChannels()
			for _, z := range c.spec.ZoneList() {
				known = append(known, ZoneChannel(z.Name, ZoneTemperature))
			}
			c.fail(path, "unknown channel (known: %s, %s)", strings.Join(known, ", "), ChannelPressure)
			continue
		}
		if k == kindSwitch {
			c.fail(path, "an on/off channel takes no numeric limit; bound it with an interlock or a prohibited action")
			continue
		}
		if p.HardLimit != nil && !*p.HardLimit {
			c.fail(path+".hard_limit", "soft limits are not enforced by the envelope: remove it or set it true")
		}
		l := &limit{channel: name, kind: k, unit: p.Unit}
		if _, err := fromDevice(k, 0, p.Unit); err != nil {
			c.fail(path+".unit", "%v", err)
			continue
		}
		conv := func(field string, v *float64) (float64, bool) {
			if v == nil {
				return 0, false
			}
			if !device.Finite(*v) {
				c.fail(path+"."+field, "not a finite number")
				return 0, false
			}
			d, _ := toDevice(k, *v, p.Unit)
			return d, true
		}
		dlo, dhi := display(k, lo, p.Unit), display(k, hi, p.Unit)
		if v, ok := conv("max", p.Max); ok {
			l.max = v
			if v > hi*(1+1e-12) {
				c.fail(path+".max", "%s %s lies beyond the device range %s .. %s %s", fmtNum(*p.Max), p.Unit, fmtNum(dlo), fmtNum(dhi), p.Unit)
			}
		} else {
			c.fail(path+".max", "missing: %s is unlimited", name)
			continue
		}
		if v, ok := conv("min", p.Min); ok {
			l.min, l.hasMin = v, true
			if v < lo*(1-1e-12)-1e-12 {
				c.fail(path+".min", "%s %s lies below the device range %s .. %s %s", fmtNum(*p.Min), p.Unit, fmtNum(dlo), fmtNum(dhi), p.Unit)
			}
			if v > l.max {
				c.fail(path, "min %s above max %s", fmtNum(*p.Min), fmtNum(*p.Max))
			}
		} else {
			l.min = lo // the device range bounds it from below
		}
		if p.MaxRatePerMinute != nil {
			if !writable {
				c.fail(path+".max_rate_per_minute", "a read-only channel takes no rate limit")
			} else if r := *p.MaxRatePerMinute; !device.Finite(r) || r <= 0 {
				c.fail(path+".max_rate_per_minute", "must be positive")
			} else {
				l.rate, _ = deltaToDevice(k, r, p.Unit)
			}
		}
		switch zn, what, _ := strings.Cut(name, "."); {
		case name == ChannelPressure:
			e.overPressure = l
		case what == ZoneTemperature && e.zoneIndex(zn) >= 0:
			e.zones[e.zoneIndex(zn)].overTemp = l
		default:
			e.limits[name] = l
		}
	}
	for _, z := range e.zones {
		if z.overTemp == nil {
			c.fail("parameters."+ZoneChannel(z.name, ZoneTemperature), "missing: the over_temperature trip needs a max")
		}
	}
	if e.overPressure == nil {
		c.fail("parameters."+ChannelPressure, "missing: the over_pressure trip needs a max")
	}
}

func (c *compiler) gasKnown(path, gas string) bool {
	if _, _, _, _, ok := c.spec.channel(FlowChannel(gas)); !ok {
		c.fail(path, "unknown gas %q", gas)
		return false
	}
	return true
}

func (c *compiler) interlocks(e *Envelope) {
	if h := c.cfg.Interlocks.Heater; h != nil {
		r := &heaterRule{pUnit: h.MaxPressure.Unit, inertGas: h.InertGas, fUnit: h.MinInertFlow.Unit}
		if v, ok := c.quantity("interlocks.heater.max_pressure", h.MaxPressure, kindPressure, true); ok {
			r.maxPressure = device.Pressure(v)
			if r.maxPressure > c.spec.Gauge.Max || r.maxPressure < c.spec.Gauge.Min {
				c.fail("interlocks.heater.max_pressure", "%v lies outside the gauge range", h.MaxPressure)
			}
		}
		if c.gasKnown("interlocks.heater.inert_gas", h.InertGas) {
			if hz := e.gases[h.InertGas].Hazard; hz != "" && hz != rig.Inert {
				c.fail("interlocks.heater.inert_gas", "%s is %s in the rig's layout (its hazard class), not inert", h.InertGas, hz)
			}
			if v, ok := c.quantity("interlocks.heater.min_inert_flow", h.MinInertFlow, kindFlow, true); ok {
				r.minInertFlow = device.Flow(v)
				if fs := e.gases[h.InertGas].FullScale; r.minInertFlow > fs || r.minInertFlow <= 0 {
					c.fail("interlocks.heater.min_inert_flow", "%v lies outside 0 .. %v (the %s controller's range)", h.MinInertFlow, fs, h.InertGas)
				}
			}
		}
		e.heater = r
	}
	for _, gas := range slices.Sorted(maps.Keys(c.cfg.Interlocks.Gases)) {
		g := c.cfg.Interlocks.Gases[gas]
		path := "interlocks.gases." + gas
		if !c.gasKnown(path, gas) {
			continue
		}
		r := &gasRule{gas: gas, pUnit: g.MaxPressure.Unit, levels: map[string]bool{}}
		if v, ok := c.quantity(path+".max_pressure", g.MaxPressure, kindPressure, true); ok {
			r.maxPressure = device.Pressure(v)
			if r.maxPressure > c.spec.Gauge.Max || r.maxPressure < c.spec.Gauge.Min {
				c.fail(path+".max_pressure", "%v lies outside the gauge range", g.MaxPressure)
			}
		}
		if q := g.MinTemperature; q != nil {
			c.minTemperature(e, r, path, g.Zone, *q)
		} else if g.Zone != "" {
			c.fail(path+".zone", "names the zone of min_temperature, which is not given")
		}
		for _, sw := range g.RequireSwitchesOn {
			if s, ok := e.switches[sw]; !ok || s.InterlockOwned {
				c.fail(path+".require_switches_on", "unknown switch %q", sw)
				continue
			}
			r.switches = append(r.switches, sw)
			e.requiredBy[sw] = append(e.requiredBy[sw], gas)
		}
		for _, in := range slices.Sorted(maps.Keys(g.RequireInputs)) {
			if !e.inputSet[in] {
				c.fail(path+".require_inputs", "unknown input %q", in)
				continue
			}
			r.inputs = append(r.inputs, in)
			r.levels[in] = g.RequireInputs[in]
		}
		e.gasRules[gas] = r
	}
	for _, gas := range c.cfg.ReactiveGases {
		if c.gasKnown("reactive_gases", gas) && !slices.Contains(e.reactive, gas) {
			e.reactive = append(e.reactive, gas)
		}
	}
	sort.Strings(e.reactive)
}

// minTemperature compiles a gas interlock's min_temperature, judged on
// the zone it names (zone:, required on a rig of several zones; the only
// zone else): within that zone's setpoint range and at or below its hard
// limit, else the gas could never be admitted (or always).
func (c *compiler) minTemperature(e *Envelope, r *gasRule, path, zn string, q Quantity) {
	i := 0
	switch {
	case zn != "":
		if i = e.zoneIndex(zn); i < 0 {
			c.noZone(path+".zone", zn)
			return
		}
	case len(e.zones) > 1:
		c.fail(path+".zone", "missing: the rig has %d heated zones (%s); name the one min_temperature judges", len(e.zones), strings.Join(c.spec.ZoneNames(), ", "))
		return
	case len(e.zones) == 0:
		return // reported by checkZones
	}
	path += ".min_temperature"
	v, ok := c.quantity(path, q, kindTemperature, true)
	if !ok {
		return
	}
	z := e.zones[i]
	r.minTemp, r.hasMinTemp, r.tUnit, r.zone = device.Temperature(v), true, q.Unit, i
	hi := float64(z.spec.SetpointMax)
	if l := e.limits[ZoneChannel(z.name, ZoneSetpoint)]; l != nil {
		hi = l.max
	}
	if v <= float64(z.spec.SetpointMin) || v > hi {
		c.fail(path, "%v lies outside the furnace's setpoint range up to its hard limit: %s could never be admitted, or always", q, r.gas)
	}
}

func (c *compiler) prohibitedActions(e *Envelope) {
	for _, name := range c.cfg.ProhibitedActions {
		r := Rule(name)
		if !slices.Contains(prohibitedRules, r) {
			c.fail("prohibited_actions", "unknown prohibited action %q (known: %v)", name, prohibitedRules)
			continue
		}
		e.prohibited[r] = true
	}
	if e.prohibited[RuleMixing] || e.prohibited[RuleVentGas] {
		if len(e.reactive) == 0 {
			c.fail("reactive_gases", "%s and %s need the reactive gases listed", RuleMixing, RuleVentGas)
		}
	}
	// The purge definition is compiled whenever it is given, not only for the
	// mixing rule: the purge history (State.UsedSincePurge) is also what the
	// recipe check's "purged before a vent" reads, on a rig whose reactive
	// gases may mix (a hydrocarbon in H2) as on one whose may not.
	for _, r := range []Rule{RuleMixing, RuleVentPurge} {
		if e.prohibited[r] && c.cfg.Purge == nil {
			c.fail("purge", "%s needs a purge definition", r)
		}
	}
	// venting_without_purge follows the layout's hazard classes, not names:
	// a line of a flammable, toxic or corrosive gas used since the last
	// purge keeps the vent valve shut.
	e.tracked = slices.Clone(e.reactive)
	if e.prohibited[RuleVentPurge] {
		for _, g := range c.spec.Gases {
			switch g.Hazard {
			case rig.Flammable, rig.Toxic, rig.Corrosive:
				e.ventPurged = append(e.ventPurged, g.Gas)
				if !slices.Contains(e.tracked, g.Gas) {
					e.tracked = append(e.tracked, g.Gas)
				}
			}
		}
		sort.Strings(e.ventPurged)
		sort.Strings(e.tracked)
	}
	{
		p := c.cfg.Purge
		if p != nil {
			r := &purgeRule{inertGas: p.InertGas, minDuration: time.Duration(p.MinDuration)}
			if c.gasKnown("purge.inert_gas", p.InertGas) {
				if h := e.gases[p.InertGas].Hazard; h != "" && h != rig.Inert {
					c.fail("purge.inert_gas", "%s is %s in the rig's layout (its hazard class): a purge uses an inert gas", p.InertGas, h)
				} else if slices.Contains(e.reactive, p.InertGas) {
					c.fail("purge.inert_gas", "%s is listed as reactive", p.InertGas)
				}
				if v, ok := c.quantity("purge.min_inert_flow", p.MinInertFlow, kindFlow, true); ok {
					r.minInertFlow = device.Flow(v)
					if fs := e.gases[p.InertGas].FullScale; r.minInertFlow > fs || r.minInertFlow <= 0 {
						c.fail("purge.min_inert_flow", "%v lies outside 0 .. %v", p.MinInertFlow, fs)
					}
				}
			}
			if v, ok := c.quantity("purge.max_pressure", p.MaxPressure, kindPressure, false); ok {
				r.maxPressure = device.Pressure(v)
			}
			if r.minDuration <= 0 {
				c.fail("purge.min_duration", "must be positive")
			}
			e.purge = r
		}
	}
	if e.prohibited[RuleVentHot] || e.prohibited[RuleVentGas] || e.prohibited[RuleVentPumping] || e.prohibited[RuleVentPurge] {
		v := c.cfg.Vent
		if v == nil {
			c.fail("vent", "the venting rules need the vent valve named")
			return
		}
		valve, gate := e.VentValves()
		r := &ventRule{valve: valve, gate: gate, tUnit: v.MaxTemperature.Unit}
		if s, ok := e.switches[valve]; !ok || s.InterlockOwned {
			c.fail("vent.valve", "unknown switch %q (and the layout gives no output the vent role)", valve)
		}
		if e.prohibited[RuleVentPumping] {
			if s, ok := e.switches[gate]; !ok || s.InterlockOwned || gate == valve {
				c.fail("vent.gate", "unknown switch %q (and the layout gives no output the gate role)", gate)
			}
		}
		if e.prohibited[RuleVentHot] {
			if t, ok := c.quantity("vent.max_temperature", v.MaxTemperature, kindTemperature, true); ok {
				r.maxTemp = device.Temperature(t)
			}
		}
		e.vent = r
	}
}

func (c *compiler) procedures(e *Envelope) {
	for _, name := range slices.Sorted(maps.Keys(c.cfg.EmergencyProcedures)) {
		proc := Procedure(c.cfg.EmergencyProcedures[name])
		if !slices.Contains(Trips(), Trip(name)) {
			c.fail("emergency_procedures."+name, "unknown trip (known: %v)", Trips())
			continue
		}
		switch proc {
		case ProcImmediateShutdown, ProcCloseValvesAndAlert, ProcSafeState:
		default:
			c.fail("emergency_procedures."+name, "unknown procedure %q (known: %s, %s, %s)", proc,
				ProcImmediateShutdown, ProcCloseValvesAndAlert, ProcSafeState)
			continue
		}
		e.procedures[Trip(name)] = proc
	}
	for _, t := range Trips() {
		if _, ok := c.cfg.EmergencyProcedures[string(t)]; !ok {
			if p, optional := optionalProcedure(t); optional {
				e.procedures[t] = p
				continue
			}
			c.fail("emergency_procedures."+string(t), "missing: every trip needs a procedure")
		}
	}
	if p, ok := e.procedures[TripEStop]; ok && p != ProcSafeState {
		c.fail("emergency_procedures.estop", "must be %s, got %s", ProcSafeState, p)
	}
}

func (c *compiler) inputsAndUnrestricted(e *Envelope) {
	if !e.inputSet[c.cfg.Inputs.EStop] {
		c.fail("inputs.estop", "unknown input %q (the estop trip needs it)", c.cfg.Inputs.EStop)
	}
	if !e.inputSet[c.cfg.Inputs.Leak] {
		c.fail("inputs.leak", "unknown input %q (the gas_leak_detected trip needs it)", c.cfg.Inputs.Leak)
	}
	writable := c.spec.WritableChannels()
	for ch, why := range c.cfg.Unrestricted {
		if !slices.Contains(writable, ch) {
			if c.unknownZone("unrestricted."+ch, ch) {
				continue
			}
			c.fail("unrestricted."+ch, "not a writable channel of the rig")
			continue
		}
		if k, _, _, _, _ := c.spec.channel(ch); k != kindSwitch {
			c.fail("unrestricted."+ch, "a numeric channel cannot be unrestricted: give it a parameter")
			continue
		}
		if strings.TrimSpace(why) == "" {
			c.fail("unrestricted."+ch, "give the reason")
		}
		e.unrestricted[ch] = why
	}
}

// heldLines lists the gas lines gas_interlock_lost watches: each gas whose
// interlock requires an output on or an input at a level, with those
// outputs and inputs. An input that is a trip of its own (the leak
// detector, the e-stop) is left to its trip and its procedure.
func (c *compiler) heldLines(e *Envelope) {
	for _, gas := range slices.Sorted(maps.Keys(e.gasRules)) {
		r := e.gasRules[gas]
		i := slices.IndexFunc(c.spec.Gases, func(g GasSpec) bool { return g.Gas == gas })
		if i < 0 {
			continue // not a gas of the rig: reported by interlocks
		}
		h := heldLine{gas: gas, valve: e.gases[gas].Valve, index: i,
			switches: slices.Clone(r.switches), levels: map[string]bool{}}
		for _, in := range r.inputs {
			if in == e.inputs.Leak || in == e.inputs.EStop {
				continue
			}
			h.inputs = append(h.inputs, in)
			h.levels[in] = r.levels[in]
		}
		if len(h.switches)+len(h.inputs) > 0 {
			e.held = append(e.held, h)
		}
	}
}

// coverage refuses any writable channel that no rule bounds.
func (c *compiler) coverage(e *Envelope) {
	for _, ch := range c.spec.WritableChannels() {
		if k, _, _, _, _ := c.spec.channel(ch); k != kindSwitch && e.limits[ch] == nil {
			c.fail("channel "+ch, "writable channel has no hard limit: add parameters.%s with a max", ch)
			continue
		}
		if len(e.rulesFor(ch)) == 0 {
			c.fail("channel "+ch, "writable channel is not bounded by any rule: add a parameter or interlock, or list it under unrestricted with a reason")
		}
	}
}
