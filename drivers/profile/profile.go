package profile

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"hcp-edge/drivers/modbus"
)

// MaxSize is the largest profile file Parse reads (1 MiB).
const MaxSize = 1 << 20

// Family is a protocol family: the generic driver that speaks to every model
// of the family.
type Family string

// Protocol families. Adding one means a driver package for it under drivers/,
// its name here with the checks of its channels, and a case in the rig's
// builder (docs/INSTRUMENTS.md, "Adding a protocol family").
const (
	Modbus Family = "modbus" // a Modbus RTU/TCP register map: drivers/regmap
	Alicat Family = "alicat" // the Alicat ASCII serial family: drivers/alicat
	TPG    Family = "tpg"    // the Pfeiffer TPG mnemonic family: drivers/tpg
)

// Kind is what an instrument is in the rig's contracts.
type Kind string

// Kinds.
const (
	TemperatureController Kind = "temperature_controller" // device.TemperatureController
	IOModule              Kind = "io_module"              // device.Switch and device.DigitalInput channels
	FlowController        Kind = "mass_flow_controller"   // device.FlowController
	PressureGauge         Kind = "pressure_gauge"         // device.PressureGauge
)

// Lack is something a model cannot do that the rig's safety depends on.
type Lack string

// Lacks.
const (
	// NoCommsWatchdog: the controller does not drop its output by itself
	// when the host stops talking. A heater on such a controller needs
	// another dead-agent path (the interlock relay held by the agent's
	// heartbeat), or the configuration is refused.
	NoCommsWatchdog Lack = "comms_watchdog"
)

// Role is a channel's part in the rig's contracts.
type Role string

// Roles of a temperature controller's channels, and of an I/O module's.
const (
	RoleProcessValue      Role = "process_value"       // measured temperature
	RoleProcessValueFloat Role = "process_value_float" // the same as an IEEE float (NaN on sensor break)
	RoleSetpoint          Role = "setpoint"            // the setpoint the host writes (at every step)
	RoleWorkingSetpoint   Role = "working_setpoint"    // the ramped setpoint the controller tracks
	RoleRampRate          Role = "ramp_rate"           // the controller's own setpoint ramp
	RoleHeaterEnable      Role = "heater_enable"       // output on/off (On and Off raw values)
	RoleOutputPower       Role = "output_power"        // heater output, %
	RoleAlarmBits         Role = "alarm_bits"          // Bits: high_temperature, sensor_break, watchdog, heater_fault
	RoleStatusBits        Role = "status_bits"         // Bits: heater_active, ramping, relay_permits
	RoleWatchdogTimeout   Role = "watchdog_timeout"    // comms watchdog timeout, ms, set once at start
	RoleWatchdogKick      Role = "watchdog_kick"       // written periodically to kick the watchdog
	RoleAlarmLimit        Role = "alarm_limit"         // the controller's own high-temperature alarm, set once
	RoleUptime            Role = "uptime"              // seconds since power-up
	// RoleInit channels are written once, to Value, when the agent starts
	// the instrument (after its heater is off): the mode the profile's
	// other roles assume (e.g. automatic control, the comms setpoint
	// selected).
	RoleInit   Role = "init"
	RoleOutput Role = "output" // an on/off output (coil) of an I/O module
	RoleInput  Role = "input"  // a binary input of an I/O module
)

// Roles of the serial families' channels: an Alicat data frame's columns
// (and the setpoint, which is also RoleSetpoint) and a TPG's gauges.
const (
	RoleFlow           Role = "flow"            // mass flow, sccm or slpm
	RolePressure       Role = "pressure"        // a pressure (an MFC's line pressure, a gauge's reading)
	RoleTemperature    Role = "temperature"     // gas temperature, celsius
	RoleVolumetricFlow Role = "volumetric_flow" // volumetric flow (reported, not used)
	RoleGas            Role = "gas"             // the gas name the controller is set to (type text)
)

// Bits a bit-field role may name.
var roleBits = map[Role][]string{
	RoleAlarmBits:  {"high_temperature", "sensor_break", "watchdog", "heater_fault"},
	RoleStatusBits: {"heater_active", "ramping", "relay_permits"},
}

// single roles appear at most once in a profile.
var single = map[Role]bool{
	RoleProcessValue: true, RoleProcessValueFloat: true, RoleSetpoint: true, RoleWorkingSetpoint: true,
	RoleRampRate: true, RoleHeaterEnable: true, RoleOutputPower: true, RoleAlarmBits: true,
	RoleStatusBits: true, RoleWatchdogTimeout: true, RoleWatchdogKick: true, RoleAlarmLimit: true, RoleUptime: true,
}

// writtenRoles are written by the agent; repeated says how often.
var writtenRoles = map[Role]string{
	RoleSetpoint: "at every step of a recipe", RoleRampRate: "at every ramp", RoleHeaterEnable: "at every step",
	RoleWatchdogTimeout: "once at start", RoleWatchdogKick: "every kick period", RoleAlarmLimit: "once at start",
	RoleInit:   "once at start",
	RoleOutput: "at every step",
}

// repeated roles are written in a loop: never on memory of limited endurance.
var repeated = map[Role]bool{RoleSetpoint: true, RoleWatchdogKick: true, RoleRampRate: true, RoleHeaterEnable: true, RoleOutput: true}

// required roles of each kind.
var required = map[Kind][]Role{
	TemperatureController: {RoleProcessValue, RoleSetpoint, RoleHeaterEnable},
}

// Manual is the document a profile was written from.
type Manual struct {
	Document string `yaml:"document"` // title and part number
	Revision string `yaml:"revision"` // issue, revision or date
	URL      string `yaml:"url,omitempty"`
}

// Profile is one instrument model.
type Profile struct {
	// ID names the profile in the configuration: the file's name without
	// .yaml (configs/profiles/eurotherm-3200.yaml is eurotherm-3200).
	ID string `yaml:"-"`
	// File is where it was read from, for reports.
	File         string `yaml:"-"`
	Model        string `yaml:"model"`
	Manufacturer string `yaml:"manufacturer"`
	Manual       Manual `yaml:"manual"`
	Family       Family `yaml:"family"`
	Kind         Kind   `yaml:"kind"`
	// Lacks lists what the model cannot do that safety depends on.
	Lacks []Lack `yaml:"lacks,omitempty"`
	// BatchGaps: the model answers a read spanning addresses it does not
	// map (with filler), so reads may bridge gaps between channels.
	BatchGaps bool      `yaml:"batch_gaps,omitempty"`
	Channels  []Channel `yaml:"channels"`
	// Mode is a serial model's factory line setting ("19200 8N1"); the
	// configuration's mode overrides it.
	Mode string `yaml:"mode,omitempty"`
	// FullScale is the range of full scales an alicat model is made in,
	// sccm [min, max]: a configured full scale outside it is refused.
	FullScale []float64 `yaml:"full_scale,omitempty,flow"`
	// NumberWidth is the narrowest number of an alicat data frame, without
	// its sign (the model pads with zeros; 0: any).
	NumberWidth int `yaml:"number_width,omitempty"`
	// Commands of a serial family beyond its channels' (alicat:
	// hold_closed, cancel_hold, version; tpg: unit, ident, error).
	Commands map[string]string `yaml:"commands,omitempty"`
	// StatusCodes maps each status code the model reports to its meaning
	// (family-defined words: docs/INSTRUMENTS.md).
	StatusCodes map[string]string `yaml:"status_codes,omitempty"`
	// Units maps a tpg model's unit codes to pressure units (mbar, torr, pa).
	Units map[string]string `yaml:"units,omitempty"`
	// GaugeIDs are the gauge types a tpg model's identification (TID)
	// must report, one per gauge connector in order (PKR); "" or absent:
	// any gauge. Checked before anything is driven (drivers/tpg Verify).
	GaugeIDs []string `yaml:"gauge_ids,omitempty,flow"`
	// Notes are free text for the technician (commissioning hints).
	Notes string `yaml:"notes,omitempty"`
	// Expect are the settings of a Modbus unit the profile depends on, and
	// its identity: read before anything is driven, never written.
	Expect []Expectation `yaml:"expect,omitempty"`
}

// Channel is one value of the instrument.
type Channel struct {
	Name string `yaml:"name"`
	// Table is coil, discrete_input, input_register or holding_register.
	Table   string `yaml:"table"`
	Address *int   `yaml:"address"`
	// Type is bool, int16, uint16, int32, uint32 or float32 (bool for bits);
	// an alicat column is a number (no type) or text.
	Type string `yaml:"type"`
	// WordOrder of a 32-bit value: ABCD (high word first, the default),
	// CDAB, BADC or DCBA.
	WordOrder string `yaml:"word_order,omitempty"`
	// Scale and Offset: engineering value = raw × scale + offset. Scale
	// absent means 1; a scale of 0 is refused.
	Scale  *float64 `yaml:"scale,omitempty"`
	Offset float64  `yaml:"offset,omitempty"`
	Unit   string   `yaml:"unit,omitempty"`
	// Range is the device's own range in engineering units [min, max]:
	// a reading outside it is a fault of the channel, a write outside it
	// is refused before it is sent.
	Range []float64 `yaml:"range,omitempty,flow"`
	// Also are values outside Range the device accepts with a meaning of
	// their own (e.g. 0: watchdog disabled).
	Also []float64 `yaml:"also,omitempty,flow"`
	// Access is read or read_write.
	Access string `yaml:"access"`
	Role   Role   `yaml:"role,omitempty"`
	// Bits of a bit-field role: name → bit number.
	Bits map[string]int `yaml:"bits,omitempty"`
	// On and Off are the raw values of a heater_enable channel.
	On  *int64 `yaml:"on,omitempty"`
	Off *int64 `yaml:"off,omitempty"`
	// Value is what an init channel is set to at start (engineering units).
	Value *float64 `yaml:"value,omitempty"`
	// Invalid is a raw value the device reports instead of a reading
	// (e.g. 32767 on sensor break).
	Invalid *int64 `yaml:"invalid_raw,omitempty"`
	// WriteEndurance is the rated number of writes of the memory behind a
	// writable channel (0: unlimited). A role written in a loop may not
	// sit on such a channel.
	WriteEndurance int `yaml:"write_endurance,omitempty"`
	// NonVolatile: the device keeps the channel in non-volatile memory. The
	// driver reads it before writing and writes only a change, so a halt of
	// a halted controller or a start on a unit already in the profile's
	// mode writes nothing to that memory.
	NonVolatile bool `yaml:"non_volatile,omitempty"`
	// Command is a serial channel's command: a tpg gauge's mnemonic (PR1),
	// an alicat setpoint's command letter (S).
	Command string `yaml:"command,omitempty"`
	// FSRange is an alicat flow column's range as fractions of the
	// instance's full scale [min, max]: outside it is a fault.
	FSRange []float64 `yaml:"fs_range,omitempty,flow"`

	line int
}

// Line is the channel's line in its profile file.
func (c Channel) Line() int { return c.line }

// Writable reports whether the channel may be written.
func (c Channel) Writable() bool { return c.Access == "read_write" }

// Lacking reports whether the model lacks l.
func (p *Profile) Lacking(l Lack) bool { return slices.Contains(p.Lacks, l) }

// Channel returns the named channel.
func (p *Profile) Channel(name string) (Channel, bool) {
	for _, c := range p.Channels {
		if c.Name == name {
			return c, true
		}
	}
	return Channel{}, false
}

// ByRole returns the channel of a single role.
func (p *Profile) ByRole(r Role) (Channel, bool) {
	for _, c := range p.Channels {
		if c.Role == r {
			return c, true
		}
	}
	return Channel{}, false
}

// Register returns the Modbus encoding of a channel of a Modbus profile.
func (c Channel) Register() modbus.RegisterSpec {
	s := modbus.RegisterSpec{Table: tables[c.Table], Type: modbus.Type(c.Type), Offset: c.Offset, Scale: 1}
	if c.Address != nil {
		s.Address = uint16(*c.Address)
	}
	if c.Scale != nil {
		s.Scale = *c.Scale
	}
	if c.WordOrder != "" {
		s.ByteOrder, s.WordOrder, _ = modbus.ParseOrder(c.WordOrder)
	}
	if s.IsBit() {
		s.Type = modbus.Bool
	}
	return s
}

// InRange reports whether an engineering value lies in the channel's
// declared range (always, when it declares none).
func (c Channel) InRange(v float64) bool {
	if slices.Contains(c.Also, v) {
		return true
	}
	if len(c.Range) != 2 {
		return !math.IsNaN(v)
	}
	return v >= c.Range[0] && v <= c.Range[1]
}

var tables = map[string]modbus.Table{
	"coil": modbus.Coil, "discrete_input": modbus.Discrete,
	"input_register": modbus.Input, "holding_register": modbus.Holding,
}

// Problem is one thing wrong with a profile, at its place in the file.
type Problem struct {
	File    string
	Line    int
	Key     string
	Message string
}

func (p *Problem) Error() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Key, p.Message)
}

// ErrProfile is wrapped by every Problem list Parse returns.
var ErrProfile = errors.New("profile: refused")

// Parse reads the profile in data, read from file (its base name without
// .yaml is the profile's ID). It returns every problem at once, joined, each
// a *Problem; errors.Is(err, ErrProfile) holds for any of them.
func Parse(file string, data []byte) (*Profile, error) {
	id := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	v := &validator{file: file}
	if len(data) > MaxSize {
		v.add(1, "(file)", "%d bytes: a profile is at most %d (1 MiB)", len(data), MaxSize)
		return nil, v.err()
	}
	p := &Profile{ID: id, File: file}
	if !v.decode(data, p) {
		return nil, v.err()
	}
	v.check(p)
	if len(v.problems) > 0 {
		return nil, v.err()
	}
	return p, nil
}

type validator struct {
	file     string
	root     *yaml.Node
	problems []error
}

func (v *validator) add(line int, key, format string, a ...any) {
	v.problems = append(v.problems, &Problem{File: v.file, Line: line, Key: key, Message: fmt.Sprintf(format, a...)})
}

func (v *validator) err() error {
	sort.SliceStable(v.problems, func(i, j int) bool { return v.problems[i].(*Problem).Line < v.problems[j].(*Problem).Line })
	return fmt.Errorf("%w: %w", ErrProfile, errors.Join(v.problems...))
}

// node returns the value node at a path of mapping keys and sequence
// indexes below the document, or nil.
func (v *validator) node(path ...any) *yaml.Node {
	n := v.root
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, step := range path {
		switch s := step.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return nil
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == s {
					next = n.Content[i+1]
				}
			}
			if next == nil {
				return nil
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || s >= len(n.Content) {
				return nil
			}
			n = n.Content[s]
		}
	}
	return n
}

// line is the line of the key at path (of the item, for an index), or of
// the nearest ancestor present.
func (v *validator) line(path ...any) int {
	for i := len(path); i > 0; i-- {
		if key, ok := path[i-1].(string); ok {
			if parent := v.node(path[:i-1]...); parent != nil && parent.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(parent.Content); j += 2 {
					if parent.Content[j].Value == key {
						return parent.Content[j].Line
					}
				}
			}
			continue
		}
		if n := v.node(path[:i]...); n != nil {
			return n.Line
		}
	}
	return 1
}
