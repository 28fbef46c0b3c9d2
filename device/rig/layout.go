package rig

import (
	"sort"
	"strconv"
	"time"

	"hcp-edge/device"
)

// Kind is what an instrument is; the words are the instrument profiles'
// kinds (drivers/profile), plus the spectrometer, which has no profile.
type Kind string

// The instrument kinds.
const (
	KindTemperatureController Kind = "temperature_controller"
	KindIOModule              Kind = "io_module"
	KindFlowController        Kind = "mass_flow_controller"
	KindPressureGauge         Kind = "pressure_gauge"
	KindSpectrometer          Kind = "spectrometer"
)

// Instrument is one instrument of the rig: its name (unique without case),
// its kind, the profile that describes it, and where it is reached: a unit
// on a named Modbus bus, or a serial port of its own.
type Instrument struct {
	Name    string
	Kind    Kind
	Profile string // the instrument profile's ID ("" for the spectrometer)
	// Key is the configuration key it is written at (rig.furnace,
	// rig.mfcs[1]): messages name it, and config check places them by it.
	Key string
	// Bus and Unit: a Modbus instrument.
	Bus  string
	Unit byte
	// Port, Mode and Timeout: a serial instrument on its own line.
	Port    string
	Mode    string
	Timeout time.Duration
}

// OnBus reports whether the instrument is a unit on a Modbus bus.
func (i Instrument) OnBus() bool { return i.Bus != "" }

// Zone is one heated zone: the temperature controller that heats it.
type Zone struct {
	Name       string
	Controller string // an Instrument of kind KindTemperatureController
}

// Gauge roles: what a gauge head's reading is used for.
const (
	HeadProcess  = "process"  // the process pressure the interlocks read
	HeadRoughing = "roughing" // the roughing line
)

// Head is one gauge head: a channel of a gauge controller, with its role.
type Head struct {
	Name       string
	Controller string // an Instrument of kind KindPressureGauge
	Channel    string // the controller profile's gauge ("": its first)
	Role       string // HeadProcess or HeadRoughing
}

// Switch is one on/off output: a channel of an I/O module.
type Switch struct {
	Name    string
	Module  string // an Instrument of kind KindIOModule
	Channel string
	Safe    bool   // the level Halt drives it to
	Role    string // RolePump, RoleGate, RoleVent, RoleScrubber or ""
}

// Sense is one binary input: a channel of an I/O module.
type Sense struct {
	Name    string
	Module  string
	Channel string
	Invert  bool
	Role    string // RoleDoor or ""
}

// Line is one gas line: its mass-flow controller, hazard class and valve.
type Line struct {
	Gas        string
	Controller string // an Instrument of kind KindFlowController
	UnitID     string
	FullScale  device.Flow
	Hazard     Hazard
	Valve      string // a Switch
}

// Layout is the rig as one typed model: every instrument, and what it
// serves: the heated zones, the gauge heads, the outputs and inputs of the
// I/O modules, the gas lines. Each list may hold any number; the lists are
// in a fixed order (the configuration's, outputs and inputs by name).
type Layout struct {
	Buses       map[string]Bus
	Instruments []Instrument
	Zones       []Zone
	Heads       []Head
	Outputs     []Switch
	Inputs      []Sense
	Lines       []Line
	GPIO        GPIO
}

// Instrument returns the instrument of a name.
func (l Layout) Instrument(name string) (Instrument, bool) {
	for _, i := range l.Instruments {
		if i.Name == name {
			return i, true
		}
	}
	return Instrument{}, false
}

// Of returns the instruments of a kind, in the layout's order.
func (l Layout) Of(k Kind) []Instrument {
	var out []Instrument
	for _, i := range l.Instruments {
		if i.Kind == k {
			out = append(out, i)
		}
	}
	return out
}

// Role returns the output, else the input, of a role ("" if none).
func (l Layout) Role(role string) string {
	for _, o := range l.Outputs {
		if o.Role == role {
			return o.Name
		}
	}
	for _, in := range l.Inputs {
		if in.Role == role {
			return in.Name
		}
	}
	return ""
}

// Output returns the output of a name.
func (l Layout) Output(name string) (Switch, bool) {
	for _, o := range l.Outputs {
		if o.Name == name {
			return o, true
		}
	}
	return Switch{}, false
}

// HazardOf returns the hazard class of each gas.
func (l Layout) HazardOf() map[string]Hazard {
	out := map[string]Hazard{}
	for _, ln := range l.Lines {
		out[ln.Gas] = ln.Hazard
	}
	return out
}

// Layout maps the configuration, in either shape, onto the model. Each
// zone's controller is an instrument and the zone is named as written (the
// one-entry shape's furnace: one zone named furnace); each I/O module an
// instrument (dio: one module named dio), and each output and input is on
// the module it names (Config.ModuleOf); each gauge controller an
// instrument with its heads (gauge: one process head named as the
// controller); each mfcs entry one line. The instruments are in the order
// zone controllers, modules, flow controllers, gauges, spectrometer. A
// full scale that does not parse is zero here (Validate reports it).
func (c Config) Layout() Layout {
	l := Layout{Buses: c.ModbusBuses, GPIO: c.GPIO}
	for _, z := range c.ZoneEntries() {
		l.Instruments = append(l.Instruments, Instrument{Name: z.Controller, Kind: KindTemperatureController, Profile: z.Profile, Key: "rig." + z.Key, Bus: z.Bus, Unit: z.Unit})
		l.Zones = append(l.Zones, Zone{Name: z.Name, Controller: z.Controller})
	}
	for _, m := range c.ModuleEntries() {
		l.Instruments = append(l.Instruments, Instrument{Name: m.Name, Kind: KindIOModule, Profile: m.Profile, Key: "rig." + m.Key, Bus: m.Bus, Unit: m.Unit})
	}
	for _, name := range sortedKeys(c.Outputs) {
		o := c.Outputs[name]
		l.Outputs = append(l.Outputs, Switch{Name: name, Module: c.ModuleOf(o.Module), Channel: o.Channel, Safe: o.Safe == "on", Role: o.Role})
	}
	for _, name := range sortedKeys(c.Inputs) {
		in := c.Inputs[name]
		l.Inputs = append(l.Inputs, Sense{Name: name, Module: c.ModuleOf(in.Module), Channel: in.Channel, Invert: in.Invert, Role: in.Role})
	}
	for i, m := range c.MFCs {
		l.Instruments = append(l.Instruments, serial(m.Serial, m.Name, KindFlowController, m.Profile, "rig.mfcs["+strconv.Itoa(i)+"]"))
		fs, _ := ParseFlow(m.FullScale)
		l.Lines = append(l.Lines, Line{Gas: m.Gas, Controller: m.Name, UnitID: m.UnitID, FullScale: fs, Hazard: m.Hazard, Valve: m.Valve})
	}
	for _, g := range c.GaugeEntries() {
		l.Instruments = append(l.Instruments, serial(g.Serial, g.Name, KindPressureGauge, g.Profile, "rig."+g.Key))
		for _, h := range g.Heads {
			l.Heads = append(l.Heads, Head{Name: h.Name, Controller: g.Name, Channel: h.Channel, Role: h.Role})
		}
	}
	l.Instruments = append(l.Instruments, serial(c.Raman.Serial, c.RamanName(), KindSpectrometer, "", "rig.raman"))
	return l
}

func serial(s Serial, name string, k Kind, profile, key string) Instrument {
	return Instrument{Name: name, Kind: k, Profile: profile, Key: key, Port: s.Port, Mode: s.Mode, Timeout: s.Timeout}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
