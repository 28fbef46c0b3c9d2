package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// Config is the safety envelope as configured for one rig, the seeds/000
// safety_envelope extended: parameters (per-channel hard limits, keyed by
// channel name), interlocks, prohibited actions, emergency procedures, and
// what those need (inputs, purge, vent, timing). Compile checks it against a
// RigSpec and turns it into an Envelope.
//
// Every number carries its unit; Compile converts explicitly with
// device.TemperatureIn, FlowIn and PressureIn.
type Config struct {
	// Parameters are hard limits keyed by channel: every writable numeric
	// channel (each heated zone's <zone>.setpoint and <zone>.ramp_rate,
	// furnace.* for the zone named furnace; flow.<gas>,
	// spectrometer.integration) needs one; the read-only channels
	// <zone>.temperature (each zone's) and chamber.pressure take a max that
	// is that zone's over_temperature and the over_pressure trip threshold.
	Parameters map[string]Parameter `yaml:"parameters" json:"parameters"`
	// Interlocks are cross-channel conditions for heating and for gases.
	Interlocks Interlocks `yaml:"interlocks" json:"interlocks"`
	// ProhibitedActions names the prohibited-action rules in force:
	// simultaneous_gas_mixing_without_purge, venting_while_hot,
	// venting_with_gas_flowing, venting_while_pumping,
	// venting_without_purge.
	ProhibitedActions []string `yaml:"prohibited_actions" json:"prohibited_actions"`
	// ReactiveGases are the gases that must not mix without a purge and must
	// not flow while venting (e.g. H2, a toxic precursor).
	ReactiveGases []string `yaml:"reactive_gases" json:"reactive_gases"`
	// Purge says what counts as a purge between reactive gases.
	Purge *Purge `yaml:"purge,omitempty" json:"purge,omitempty"`
	// Vent names the vent and gate valves and the hottest temperature at
	// which the chamber may be vented.
	Vent *Vent `yaml:"vent,omitempty" json:"vent,omitempty"`
	// EmergencyProcedures maps every trip (over_temperature,
	// gas_leak_detected, over_pressure, comms_loss, estop and, optional:
	// close_all_valves_and_alert when absent, gas_interlock_lost) to a
	// procedure (immediate_shutdown, close_all_valves_and_alert,
	// safe_state).
	EmergencyProcedures map[string]string `yaml:"emergency_procedures" json:"emergency_procedures"`
	// Inputs names the digital inputs whose true level is a trip.
	Inputs Inputs `yaml:"inputs" json:"inputs"`
	// Unrestricted lists writable on/off channels deliberately bound by no
	// rule, each with the reason (shown by the coverage report).
	Unrestricted map[string]string `yaml:"unrestricted,omitempty" json:"unrestricted,omitempty"`
	// MaxReadingAge is the oldest a reading may be for a decision that needs it.
	MaxReadingAge Duration `yaml:"max_reading_age" json:"max_reading_age"`
	// CommsTimeout is how long an instrument may stay silent before comms_loss.
	CommsTimeout Duration `yaml:"comms_timeout" json:"comms_timeout"`
	// FlowOnThreshold is the measured flow above which a gas counts as
	// flowing (MFCs read a few tenths of a sccm of noise around zero).
	FlowOnThreshold Quantity `yaml:"flow_on_threshold" json:"flow_on_threshold"`
}

// Parameter is a hard limit on one channel (seeds/000: max, unit,
// hard_limit), extended with min and a maximum rate of change.
type Parameter struct {
	Min  *float64 `yaml:"min,omitempty" json:"min,omitempty"`
	Max  *float64 `yaml:"max,omitempty" json:"max,omitempty"`
	Unit string   `yaml:"unit" json:"unit"`
	// HardLimit must be absent or true: the envelope enforces no soft limits.
	HardLimit *bool `yaml:"hard_limit,omitempty" json:"hard_limit,omitempty"`
	// MaxRatePerMinute bounds |new − last accepted| / elapsed minutes, in Unit
	// per minute.
	MaxRatePerMinute *float64 `yaml:"max_rate_per_minute,omitempty" json:"max_rate_per_minute,omitempty"`
}

// Interlocks are the cross-channel conditions.
type Interlocks struct {
	Heater *HeaterInterlock        `yaml:"heater" json:"heater"`
	Gases  map[string]GasInterlock `yaml:"gases" json:"gases"`
}

// HeaterInterlock: the heater may be enabled (or its setpoint raised while it
// is enabled) only with the chamber at or below MaxPressure (vacuum) or with
// InertGas flowing at MinInertFlow or more.
type HeaterInterlock struct {
	MaxPressure  Quantity `yaml:"max_pressure" json:"max_pressure"`
	InertGas     string   `yaml:"inert_gas" json:"inert_gas"`
	MinInertFlow Quantity `yaml:"min_inert_flow" json:"min_inert_flow"`
}

// GasInterlock: the gas may be admitted (flow above zero or its line valve
// opened) only with the chamber at or below MaxPressure, the listed outputs
// on, the listed inputs at the given levels (e.g. door_closed: true,
// exhaust_ok: true, leak_detected: false) and, with MinTemperature, the
// furnace hot: heater enabled, setpoint and process value at or above it.
// An output listed here cannot be switched off while the gas is in use.
type GasInterlock struct {
	MaxPressure       Quantity        `yaml:"max_pressure" json:"max_pressure"`
	RequireSwitchesOn []string        `yaml:"require_switches_on" json:"require_switches_on"`
	RequireInputs     map[string]bool `yaml:"require_inputs" json:"require_inputs"`
	// MinTemperature (optional) holds the gas closed unless the furnace is
	// at least this hot (e.g. a carbon source that must not meet a cold
	// substrate). It judges the admission only: a furnace that cools while
	// the gas flows is the recipe check's business (a ramp below it with
	// the gas open is refused), not a trip.
	MinTemperature *Quantity `yaml:"min_temperature,omitempty" json:"min_temperature,omitempty"`
	// Zone names the heated zone min_temperature judges: required on a rig
	// of several zones, the only zone when absent.
	Zone string `yaml:"zone,omitempty" json:"zone,omitempty"`
}

// Purge: all reactive gases (and, under venting_without_purge, the lines
// of a flammable, toxic or corrosive gas) off and either InertGas at MinInertFlow or more,
// or (if MaxPressure is set) the chamber at or below MaxPressure, continuously
// for MinDuration.
type Purge struct {
	InertGas     string   `yaml:"inert_gas" json:"inert_gas"`
	MinInertFlow Quantity `yaml:"min_inert_flow" json:"min_inert_flow"`
	MaxPressure  Quantity `yaml:"max_pressure,omitempty" json:"max_pressure,omitempty"`
	MinDuration  Duration `yaml:"min_duration" json:"min_duration"`
}

// Vent names the valves of the venting rules and the vent temperature limit.
type Vent struct {
	Valve          string   `yaml:"valve" json:"valve"`
	Gate           string   `yaml:"gate" json:"gate"`
	MaxTemperature Quantity `yaml:"max_temperature" json:"max_temperature"`
}

// Inputs names the digital inputs that trip when true.
type Inputs struct {
	EStop string `yaml:"estop" json:"estop"` // true = e-stop pressed
	Leak  string `yaml:"leak" json:"leak"`   // true = gas leak detected
}

// LoadYAML decodes a Config from YAML, refusing unknown fields. It does not
// validate: Compile does.
func LoadYAML(r io.Reader) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("envelope config: %w", err)
	}
	return c, nil
}

// LoadJSON decodes a Config from JSON, refusing unknown fields.
func LoadJSON(data []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("envelope config: %w", err)
	}
	return c, nil
}
