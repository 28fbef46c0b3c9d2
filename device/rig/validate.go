package rig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"hcp-edge/device"
)

// outputRoles and inputRoles are the roles a layout may give.
var (
	outputRoles = map[string]bool{RolePump: true, RoleGate: true, RoleVent: true, RoleScrubber: true}
	inputRoles  = map[string]bool{RoleDoor: true}
)

// Expand expands ${sim_dir} (HCP_RIG_SIM_DIR overrides sim_dir) and the
// environment in every path of c.
func (c *Config) Expand() {
	dir := os.ExpandEnv(c.SimDir)
	if d := os.Getenv("HCP_RIG_SIM_DIR"); d != "" {
		dir = d
	}
	c.ExpandAt(dir)
}

// ExpandAt expands ${sim_dir} as dir, and the environment, in every path
// of c (an unexpanded Config: Decode's).
func (c *Config) ExpandAt(dir string) {
	c.SimDir = dir
	x := func(s string) string {
		s = strings.ReplaceAll(s, "${sim_dir}", c.SimDir)
		return os.ExpandEnv(s)
	}
	for k, b := range c.ModbusBuses {
		b.Address = x(b.Address)
		c.ModbusBuses[k] = b
	}
	for i := range c.MFCs {
		c.MFCs[i].Port = x(c.MFCs[i].Port)
	}
	c.Gauge.Port = x(c.Gauge.Port)
	for i := range c.Gauges {
		c.Gauges[i].Port = x(c.Gauges[i].Port)
	}
	c.Raman.Port = x(c.Raman.Port)
	c.GPIO.Socket = x(c.GPIO.Socket)
	c.ProfilesDir = x(c.ProfilesDir)
}

// Bad reports one problem of a configuration key below rig (e.g.
// "mfcs[2].hazard"); the message is "rig.KEY: ...", which config check
// places at the key's FILE:LINE.
type Bad func(key, format string, a ...any)

// Validate checks the layout's structure without the profiles and without
// hardware: every reference resolves, every name, role, channel, port and
// bus unit is used once, every gas line has a hazard class and a valve, a
// toxic line has an exhaust scrubber. The problems the profiles decide (a
// channel the profile lacks, a profile of the wrong kind) are
// drivers/rigbuild's.
func (c Config) Validate() error {
	var errs []error
	c.Check(func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("rig.%s: "+format, append([]any{key}, a...)...))
	})
	return errors.Join(errs...)
}

// Check is Validate reporting each problem to bad.
func (c Config) Check(bad Bad) {
	for _, name := range sortedKeys(c.ModbusBuses) {
		b := c.ModbusBuses[name]
		if b.Transport != TransportTCP && b.Transport != TransportRTU {
			bad("modbus_buses."+name+".transport", "%q is neither tcp nor rtu", b.Transport)
		}
		if b.Address == "" {
			bad("modbus_buses."+name+".address", "missing")
		}
	}
	c.shapeErrors(bad)
	for _, d := range c.modbusDevices() {
		if _, ok := c.ModbusBuses[d.d.Bus]; !ok {
			bad(d.key+".bus", "no modbus bus named %q", d.d.Bus)
		}
		if d.d.Unit == 0 || d.d.Unit > 247 {
			bad(d.key+".unit", "%d is not a Modbus unit id (1..247)", d.d.Unit)
		}
	}
	c.ioErrors(bad)
	c.lineErrors(bad)
	c.nameErrors(bad)
	c.addressErrors(bad)
	seen := map[string]bool{}
	for i, m := range c.MFCs {
		key := fmt.Sprintf("mfcs[%d]", i)
		if m.Name == "" || m.Port == "" || m.Gas == "" {
			bad(key, "name, port and gas are required")
		}
		if seen[strings.ToLower(m.Gas)] {
			bad(key+".gas", "%s configured twice", m.Gas)
		}
		seen[strings.ToLower(m.Gas)] = true
		if len(m.UnitID) != 1 || m.UnitID[0] < 'A' || m.UnitID[0] > 'Z' {
			bad(key+".unit_id", "%q is not one capital letter", m.UnitID)
		}
		if _, err := ParseFlow(m.FullScale); err != nil {
			bad(key+".full_scale", "%v", err)
		}
	}
	c.gaugeErrors(bad)
	if c.Raman.Port == "" {
		bad("raman.port", "missing")
	}
	c.gpioErrors(bad)
}

// ioErrors checks the outputs and inputs: a safe level, known roles each
// given once, names not taken by the GPIO lines or the relay, and every
// channel of the module used once.
func (c Config) ioErrors(bad Bad) {
	roles := map[string]string{}
	channels := map[string]string{} // by module and channel
	modules := map[string]bool{}
	for _, m := range c.ModuleEntries() {
		modules[m.Name] = true
	}
	module := func(key, named string) string {
		m := c.ModuleOf(named)
		switch {
		case len(modules) == 0: // reported at rig.modules
		case m == "":
			bad(key+".module", "missing: the layout has %d I/O modules (rig.modules); name the one it is on", len(modules))
		case !modules[m]:
			bad(key+".module", "%q is not a module of the layout (rig.modules)", m)
		}
		return m + "\x00"
	}
	for _, name := range sortedKeys(c.Outputs) {
		o := c.Outputs[name]
		key := "outputs." + name
		mod := module(key, o.Module)
		if o.Safe != "on" && o.Safe != "off" {
			bad(key+".safe", "%q: the level Halt drives it to, on or off", o.Safe)
		}
		if o.Role != "" {
			if !outputRoles[o.Role] {
				bad(key+".role", "unknown role %q (pump, gate, vent or exhaust_scrubber)", o.Role)
			} else if prev, dup := roles[o.Role]; dup {
				bad(key+".role", "role %s is also output %s's", o.Role, prev)
			}
			roles[o.Role] = name
		}
		if name == SwitchRelay {
			bad(key, "%q is the interlock relay's name", name)
		}
		if prev, dup := channels[mod+o.Channel]; dup {
			bad(key+".channel", "channel %s is also %s", o.Channel, prev)
		}
		channels[mod+o.Channel] = name
	}
	for _, name := range sortedKeys(c.Inputs) {
		in := c.Inputs[name]
		key := "inputs." + name
		mod := module(key, in.Module)
		if in.Role != "" {
			if !inputRoles[in.Role] {
				bad(key+".role", "unknown role %q (door)", in.Role)
			} else if prev, dup := roles[in.Role]; dup {
				bad(key+".role", "role %s is also input %s's", in.Role, prev)
			}
			roles[in.Role] = name
		}
		if _, clash := c.Outputs[name]; clash || name == InputEStop || name == InputLeak || name == InputRelayFB {
			bad(key, "%q is already the name of an output or a GPIO input", name)
		}
		if prev, dup := channels[mod+in.Channel]; dup {
			bad(key+".channel", "channel %s is also %s", in.Channel, prev)
		}
		channels[mod+in.Channel] = name
	}
}

// lineErrors checks the gas lines: a hazard class each, a valve that is
// an output of the layout without a role and opens one line only, and an
// exhaust scrubber when a line is toxic.
func (c Config) lineErrors(bad Bad) {
	valves := map[string]string{}
	for i, m := range c.MFCs {
		key := fmt.Sprintf("mfcs[%d]", i)
		if !m.Hazard.Valid() {
			bad(key+".hazard", "%q: every gas line names its hazard class (%s)", m.Hazard, HazardWords)
		}
		if _, ok := c.Outputs[m.Valve]; !ok {
			bad(key+".valve", "%q is not an output of the layout (rig.outputs)", m.Valve)
		} else if o := c.Outputs[m.Valve]; o.Role != "" {
			bad(key+".valve", "%q is the %s output, not a line valve", m.Valve, o.Role)
		}
		if prev, dup := valves[m.Valve]; dup {
			bad(key+".valve", "%q already opens the %s line", m.Valve, prev)
		}
		valves[m.Valve] = m.Gas
	}
	if toxic := c.ToxicLines(); len(toxic) > 0 && c.Role(RoleScrubber) == "" {
		for _, i := range toxic {
			bad(fmt.Sprintf("mfcs[%d].hazard", i), "%s is toxic, and no output of the layout is the exhaust scrubber: "+
				"give the scrubber's output role %s (rig.outputs), and require it on in envelope.interlocks.gases.%s.require_switches_on",
				c.MFCs[i].Gas, RoleScrubber, c.MFCs[i].Gas)
		}
	}
}

// ToxicLines are the indexes of the toxic gas lines.
func (c Config) ToxicLines() []int {
	var out []int
	for i, m := range c.MFCs {
		if m.Hazard == Toxic {
			out = append(out, i)
		}
	}
	return out
}

// Role returns the output or input of a role, or "".
func (c Config) Role(role string) string {
	for _, name := range sortedKeys(c.Outputs) {
		if c.Outputs[name].Role == role {
			return name
		}
	}
	for _, name := range sortedKeys(c.Inputs) {
		if c.Inputs[name].Role == role {
			return name
		}
	}
	return ""
}

// nameErrors refuses two instruments of one name (compared without case):
// the zones' controllers and the I/O modules (the one-entry shape's named
// furnace and dio), the mass-flow controllers, the gauge controllers and
// the spectrometer. Their readings,
// faults, audit entries and probe rows are keyed by it.
func (c Config) nameErrors(bad Bad) {
	seen := map[string]string{}
	check := func(key, name, what string) {
		if name == "" {
			return // reported as missing
		}
		if prev, dup := seen[strings.ToLower(name)]; dup {
			bad(key, "%q is also the name of %s: every instrument has its own name", name, prev)
			return
		}
		seen[strings.ToLower(name)] = what
	}
	// The one-entry shape's names first: they are fixed, so another
	// instrument of the name is the one reported.
	if len(c.Zones) == 0 && len(c.ZoneEntries()) > 0 {
		seen[FurnaceName] = "the furnace controller"
	}
	if len(c.Modules) == 0 && len(c.ModuleEntries()) > 0 {
		seen[DIOName] = "the digital I/O module"
	}
	if len(c.Zones) > 0 {
		for _, z := range c.ZoneEntries() {
			check(z.Key+".name", z.Controller, "zone "+z.Name+"'s controller")
		}
	}
	if len(c.Modules) > 0 {
		for _, m := range c.ModuleEntries() {
			check(m.Key+".name", m.Name, "module "+m.Name+" ("+m.Key+")")
		}
	}
	for i, m := range c.MFCs {
		check(fmt.Sprintf("mfcs[%d].name", i), m.Name, fmt.Sprintf("mfcs[%d] (the %s controller)", i, m.Gas))
	}
	for _, g := range c.GaugeEntries() {
		what := "the gauge"
		if len(c.Gauges) > 0 {
			what = "gauge controller " + g.Key
		}
		check(g.Key+".name", g.Name, what)
	}
	check("raman.name", c.RamanName(), "the spectrometer")
}

// addressErrors refuses two instruments at one address: two of the zones'
// controllers and the I/O modules at one unit id of one Modbus bus, two
// RS-485 buses on one serial device (one line written twice: its units
// would be checked apart and the second bus could not open it), and two
// serial instruments on one port, or one on a bus's line (the agent opens
// each port for one user alone, with exclusive access: the second would be
// unreachable at every start).
func (c Config) addressErrors(bad Bad) {
	units := map[string]string{}
	for _, d := range c.modbusDevices() {
		if d.d.Unit == 0 {
			continue // reported as no unit id
		}
		at := d.d.Bus + "\x00" + strconv.Itoa(int(d.d.Unit))
		if prev, dup := units[at]; dup {
			bad(d.key+".unit", "%d is also %s's unit id on bus %s: every instrument on a bus has its own", d.d.Unit, prev, d.d.Bus)
			continue
		}
		units[at] = d.what
	}
	ports := map[string]string{}
	check := func(key, port, what string) {
		if port == "" {
			return // reported as missing
		}
		port = filepath.Clean(port)
		if prev, dup := ports[port]; dup && strings.HasPrefix(prev, "RS-485 line") && strings.HasPrefix(what, "RS-485 line") {
			bad(key, "%s is also the port of %s: write one bus per RS-485 line, each of its units at its own unit id", port, prev)
			return
		} else if dup {
			bad(key, "%s is also the port of %s: the agent opens each instrument's port for it alone", port, prev)
			return
		}
		ports[port] = what
	}
	for _, name := range c.BusNames() {
		if b := c.ModbusBuses[name]; b.Transport == TransportRTU {
			check("modbus_buses."+name+".address", b.Address, "RS-485 line "+name+" (rig.modbus_buses)")
		}
	}
	for i, m := range c.MFCs {
		check(fmt.Sprintf("mfcs[%d].port", i), m.Port, fmt.Sprintf("mfcs[%d] (%s)", i, m.Name))
	}
	for _, g := range c.GaugeEntries() {
		what := "the gauge"
		if len(c.Gauges) > 0 {
			what = g.Key + " (" + g.Name + ")"
		}
		check(g.Key+".port", g.Serial.Port, what)
	}
	check("raman.port", c.Raman.Port, "the spectrometer")
}

// gpioErrors checks the GPIO section: the simulator's socket, or the
// host's four pins, each once.
func (c Config) gpioErrors(bad Bad) {
	switch c.GPIO.Source {
	case "sim":
		if c.GPIO.Socket == "" {
			bad("gpio.socket", "missing (source: sim)")
		}
	case "host":
		pins := map[string]string{"gpio.estop_pin": c.GPIO.EStopPin, "gpio.leak_pin": c.GPIO.LeakPin,
			"gpio.relay_pin": c.GPIO.RelayPin, "gpio.relay_feedback_pin": c.GPIO.RelayFeedbackPin}
		used := map[string]string{}
		for _, k := range []string{"gpio.estop_pin", "gpio.leak_pin", "gpio.relay_pin", "gpio.relay_feedback_pin"} {
			v := pins[k]
			if v == "" {
				bad(k, "missing (source: host)")
				continue
			}
			if o, dup := used[v]; dup {
				bad(k, "%s is already %s", v, o)
			}
			used[v] = k
		}
	default:
		bad("gpio.source", "%q is neither \"sim\" nor \"host\"", c.GPIO.Source)
	}
}

// ParseFlow reads a flow written as "<value> <unit>", e.g. "500 sccm" or "0.5 slm".
func ParseFlow(s string) (device.Flow, error) {
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return 0, fmt.Errorf("%q: want \"<value> <unit>\", e.g. \"500 sccm\"", s)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || !device.Finite(v) || v <= 0 {
		return 0, fmt.Errorf("%q: not a positive number", s)
	}
	return device.FlowIn(v, fields[1])
}
