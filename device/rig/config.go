package rig

import "time"

// Config is a rig section as the configuration file writes it (the `rig:`
// key of hcp-edge.yaml), in either of two shapes. The one-entry shape has
// one furnace controller (furnace:), one I/O module (dio:) and one gauge
// controller (gauge:); the list shape has any number of heated zones
// (zones:), I/O modules (modules:) and gauge controllers with their heads
// (gauges:). Both have one spectrometer and a list of gas lines. A kind is
// written in one shape or the other, never both (Validate). Layout turns
// either into the model (layout.go).
type Config struct {
	// SimDir, when set, is substituted for ${sim_dir} in every path below.
	SimDir      string         `yaml:"sim_dir"`
	ModbusBuses map[string]Bus `yaml:"modbus_buses"`
	// ProfilesDir holds the lab's own instrument profiles (profile.yaml
	// files), beside and over the shipped ones (configs/profiles).
	ProfilesDir string `yaml:"profiles_dir"`
	// Furnace is the one heated zone's controller of the one-entry shape
	// (the zone named furnace); Zones is the list shape's.
	Furnace ModbusDevice `yaml:"furnace"`
	Zones   []ZoneConfig `yaml:"zones"`
	// DIO is the one I/O module of the one-entry shape (named dio);
	// Modules is the list shape's.
	DIO     ModbusDevice   `yaml:"dio"`
	Modules []ModuleConfig `yaml:"modules"`
	// Outputs is the layout of the rig's on/off outputs: each name (a
	// valve, the pump, the scrubber) on a channel of the I/O module, with
	// its safe level and its role.
	Outputs map[string]Output `yaml:"outputs"`
	// Inputs is the layout of the I/O module's binary inputs.
	Inputs map[string]Input `yaml:"inputs"`
	// MFCs are the gas lines: each gas's mass-flow controller, hazard
	// class and line valve.
	MFCs []MFC `yaml:"mfcs"`
	// Gauge is the one gauge controller of the one-entry shape (one
	// process head); Gauges is the list shape's, each with its heads.
	Gauge  Gauge         `yaml:"gauge"`
	Gauges []GaugeConfig `yaml:"gauges"`
	Raman  Raman         `yaml:"raman"`
	GPIO   GPIO          `yaml:"gpio"`
}

// Modbus transports of a bus.
const (
	TransportTCP = "tcp" // a Modbus TCP gateway
	TransportRTU = "rtu" // an RS-485 line
)

// Bus is one Modbus line: a TCP gateway or an RS-485 line.
type Bus struct {
	Transport string        `yaml:"transport"` // tcp or rtu
	Address   string        `yaml:"address"`   // host:port, or the serial device
	Mode      string        `yaml:"mode"`      // rtu only, e.g. "19200 8E1"
	Timeout   time.Duration `yaml:"timeout"`
	Retries   *int          `yaml:"retries"`
}

// ModbusDevice is an instrument on a named bus, described by a profile.
type ModbusDevice struct {
	Bus     string `yaml:"bus"`
	Unit    byte   `yaml:"unit"`
	Profile string `yaml:"profile"` // the instrument profile's ID (configs/profiles)
}

// ZoneConfig is one heated zone of the list shape (rig.zones[i]): its name
// and the temperature controller that heats it.
type ZoneConfig struct {
	Name       string     `yaml:"name"`
	Controller Controller `yaml:"controller"`
}

// Controller is a zone's temperature controller: a unit on a named bus,
// described by a profile, and the instrument's name (default: the zone's).
type Controller struct {
	ModbusDevice `yaml:",inline"`
	Name         string `yaml:"name"`
}

// ModuleConfig is one I/O module of the list shape (rig.modules[i]): the
// outputs and inputs name it (Output.Module, Input.Module).
type ModuleConfig struct {
	Name         string `yaml:"name"`
	ModbusDevice `yaml:",inline"`
}

// GaugeConfig is one gauge controller of the list shape (rig.gauges[i]):
// its serial line (Name is required), its profile and the heads it reads.
type GaugeConfig struct {
	Serial  `yaml:",inline"`
	Profile string       `yaml:"profile"` // the instrument profile's ID (family tpg)
	Heads   []HeadConfig `yaml:"heads"`
}

// HeadConfig is one gauge head of a gauge controller (rig.gauges[i].heads[j]).
type HeadConfig struct {
	Name    string `yaml:"name"`
	Channel string `yaml:"channel"` // the controller profile's gauge
	Role    string `yaml:"role"`    // HeadProcess or HeadRoughing
}

// Output roles: the outputs the recipes' phases and the envelope's
// interlocks drive by what they do, whatever the rig calls them.
const (
	RolePump     = "pump"             // the roughing pump
	RoleGate     = "gate"             // the gate valve between chamber and pump
	RoleVent     = "vent"             // the vent valve (admits air)
	RoleScrubber = "exhaust_scrubber" // the exhaust scrubber
	RoleDoor     = "door"             // input: the door is closed
)

// Output is one on/off output of the layout.
type Output struct {
	// Module is the I/O module it is on (a name of rig.modules; "": the
	// only module).
	Module  string `yaml:"module"`
	Channel string `yaml:"channel"` // the I/O module profile's channel
	// Safe is the level Halt drives it to: on or off.
	Safe string `yaml:"safe"`
	Role string `yaml:"role"` // pump, gate, vent, scrubber, or none
}

// Input is one binary input of the layout.
type Input struct {
	Module  string `yaml:"module"` // as Output.Module
	Channel string `yaml:"channel"`
	Invert  bool   `yaml:"invert"`
	Role    string `yaml:"role"` // door, or none
}

// Serial is an instrument on its own serial port.
type Serial struct {
	Name    string        `yaml:"name"`
	Port    string        `yaml:"port"`
	Mode    string        `yaml:"mode"` // e.g. "9600 8N1"
	Timeout time.Duration `yaml:"timeout"`
}

// Gauge is the pressure gauge controller, described by a profile.
type Gauge struct {
	Serial  `yaml:",inline"`
	Profile string `yaml:"profile"` // the instrument profile's ID (family tpg)
	// Channel is the profile's gauge the envelope reads ("": its first).
	Channel string `yaml:"channel"`
}

// MFC is one mass-flow controller, described by a profile.
type MFC struct {
	Serial    `yaml:",inline"`
	Profile   string `yaml:"profile"` // the instrument profile's ID (family alicat)
	Gas       string `yaml:"gas"`
	UnitID    string `yaml:"unit_id"`
	FullScale string `yaml:"full_scale"` // e.g. "500 sccm"
	// Hazard is the gas's hazard class. The envelope's interlocks, the
	// recipe check and the derived risk policy read it.
	Hazard Hazard `yaml:"hazard"`
	// Valve is the output (rig.outputs) that opens this gas's line.
	Valve string `yaml:"valve"`
}

// ValveName returns the output of the gas line valve.
func (m MFC) ValveName() string { return m.Valve }

// Raman is the spectrometer; TimeScale is the simulator's (1 on real hardware).
type Raman struct {
	Serial    `yaml:",inline"`
	TimeScale float64 `yaml:"time_scale"`
}

// GPIO says where the e-stop, leak and relay lines come from.
type GPIO struct {
	// Source is "sim" (the simulator's control socket) or "host" (the
	// host's GPIO lines through periph.io/x/host, e.g. a Raspberry Pi).
	Source string `yaml:"source"`
	// Socket is the simulator's control socket (source: sim).
	Socket string `yaml:"socket"`
	// Pin names as periph's gpioreg knows them, e.g. "GPIO17" (source:
	// host; all four required): the e-stop input, the leak detector input,
	// the interlock relay output and the relay's read-back input.
	EStopPin         string `yaml:"estop_pin"`
	LeakPin          string `yaml:"leak_pin"`
	RelayPin         string `yaml:"relay_pin"`
	RelayFeedbackPin string `yaml:"relay_feedback_pin"`
	// RelayWatchdog is the hold time of a watchdog relay in front of the
	// interlock relay's coil: the relay drops unless the agent's heartbeat
	// pin toggles within it (0: none). It is the dead-agent path of a heater
	// whose controller has no comms watchdog; the agent toggles the
	// heartbeat at a third of it.
	RelayWatchdog time.Duration `yaml:"relay_watchdog"`
	// HeartbeatPin is the heartbeat output of source host.
	HeartbeatPin string `yaml:"heartbeat_pin"`
}

// Names the agent gives the GPIO lines (the e-stop, leak and relay
// read-back inputs) and the interlock relay output, as the envelope knows
// them.
const (
	InputEStop   = "estop_pressed" // true: e-stop pressed (pin low)
	InputLeak    = "leak_detected" // true: gas leak (pin low)
	InputRelayFB = "relay_fb"      // true: relay energised (read-back contact high)
	SwitchRelay  = "relay"         // the interlock relay output
)

// Default instrument names of the single-instrument keys of today's shape.
const (
	FurnaceName = "furnace" // the furnace controller (rig.furnace)
	DIOName     = "dio"     // the I/O module (rig.dio)
	GaugeName   = "gauge"   // the gauge controller when rig.gauge.name is empty
	RamanName   = "raman"   // the spectrometer when rig.raman.name is empty
)

// GaugeName returns the gauge controller's name (GaugeName when unset).
func (c Config) GaugeName() string {
	if c.Gauge.Name != "" {
		return c.Gauge.Name
	}
	return GaugeName
}

// RamanName returns the spectrometer's name (RamanName when unset).
func (c Config) RamanName() string {
	if c.Raman.Name != "" {
		return c.Raman.Name
	}
	return RamanName
}

// OutputNames are the names of the outputs, sorted.
func (c Config) OutputNames() []string { return sortedKeys(c.Outputs) }

// InputNames are the names of the inputs, sorted.
func (c Config) InputNames() []string { return sortedKeys(c.Inputs) }

// BusNames are the names of the Modbus buses, sorted.
func (c Config) BusNames() []string { return sortedKeys(c.ModbusBuses) }
