package envelope

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

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
