package rig

import (
	"fmt"
	"strings"

	"hcp-edge/device"
)

// headRoles are the roles a gauge head may have.
var headRoles = map[string]bool{HeadProcess: true, HeadRoughing: true}

// modbusDevice is one unit on a Modbus bus, with its key and what messages
// call it.
type modbusDevice struct {
	key, what string
	d         ModbusDevice
}

// modbusDevices are the zones' controllers and the I/O modules, in the
// layout's order.
func (c Config) modbusDevices() []modbusDevice {
	var out []modbusDevice
	for _, z := range c.ZoneEntries() {
		what := "the furnace controller"
		if len(c.Zones) > 0 {
			what = fmt.Sprintf("zone %s's controller (rig.%s)", z.Name, z.Key)
		}
		out = append(out, modbusDevice{z.Key, what, z.ModbusDevice})
	}
	for _, m := range c.ModuleEntries() {
		what := "the digital I/O module"
		if len(c.Modules) > 0 {
			what = fmt.Sprintf("module %s (rig.%s)", m.Name, m.Key)
		}
		out = append(out, modbusDevice{m.Key, what, m.ModbusDevice})
	}
	return out
}

// shapeErrors refuses a kind written in both shapes (furnace: and zones:,
// dio: and modules:, gauge: and gauges:), a layout without a heated zone,
// and a zone or a module without a name or of another's name (compared
// without case).
func (c Config) shapeErrors(bad Bad) {
	for _, k := range []struct {
		one, list string
		both      bool
	}{
		{"furnace", "zones", c.Furnace != (ModbusDevice{}) && len(c.Zones) > 0},
		{"dio", "modules", c.DIO != (ModbusDevice{}) && len(c.Modules) > 0},
		{"gauge", "gauges", c.Gauge != (Gauge{}) && len(c.Gauges) > 0},
	} {
		if k.both {
			bad(k.list, "rig.%s is written too: write this kind in one shape, rig.%s (a list) or rig.%s (one entry)", k.one, k.list, k.one)
		}
	}
	// A missing kind is reported at the key of the shape the file writes.
	list := len(c.Zones)+len(c.Modules)+len(c.Gauges) > 0
	for _, k := range []struct {
		one, list, what string
		none            bool
	}{
		{"furnace", "zones", "heated zone", len(c.ZoneEntries()) == 0},
		{"dio", "modules", "I/O module", len(c.ModuleEntries()) == 0},
		{"gauge", "gauges", "gauge controller", len(c.GaugeEntries()) == 0},
	} {
		if !k.none {
			continue
		}
		if list {
			bad(k.list, "missing: a layout has at least one %s (rig.%s, or rig.%s for one)", k.what, k.list, k.one)
		} else {
			bad(k.one, "missing: a layout has at least one %s (rig.%s, or rig.%s for several)", k.what, k.one, k.list)
		}
	}
	zones := map[string]string{}
	for i, z := range c.Zones {
		key := fmt.Sprintf("zones[%d].name", i)
		if z.Name == "" {
			bad(key, "missing")
			continue
		}
		if !device.Word(z.Name) {
			bad(key, "%q: a zone's name is a lower-case word (letters, digits, _; at most 64): it names the zone's channels (<zone>.setpoint) and tools", z.Name)
		}
		if prev, dup := zones[strings.ToLower(z.Name)]; dup {
			bad(key, "%q is also the name of %s: every zone has its own", z.Name, prev)
			continue
		}
		zones[strings.ToLower(z.Name)] = fmt.Sprintf("zones[%d]", i)
	}
	for i, m := range c.Modules {
		if m.Name == "" {
			bad(fmt.Sprintf("modules[%d].name", i), "missing")
		}
	}
}

// gaugeErrors checks the gauge controllers and their heads: a port each, a
// name each in the list shape, at least one head each, heads of known
// roles and their own names and channels, and exactly one head reading the
// process pressure (the interlocks' pressure).
func (c Config) gaugeErrors(bad Bad) {
	heads := map[string]string{}
	process := ""
	for _, g := range c.GaugeEntries() {
		if g.Serial.Port == "" {
			bad(g.Key+".port", "missing")
		}
		if len(c.Gauges) == 0 {
			process = g.Name // the one-entry shape's one process head
			continue
		}
		if g.Name == "" {
			bad(g.Key+".name", "missing")
		}
		if len(g.Heads) == 0 {
			bad(g.Key+".heads", "missing: name the heads the controller reads, each with its channel and role")
		}
		channels := map[string]string{}
		for _, h := range g.Heads {
			if h.Name == "" {
				bad(h.Key+".name", "missing")
			} else if prev, dup := heads[strings.ToLower(h.Name)]; dup {
				bad(h.Key+".name", "%q is also the name of %s: every head has its own", h.Name, prev)
			} else {
				heads[strings.ToLower(h.Name)] = "rig." + h.Key
			}
			if h.Channel == "" {
				bad(h.Key+".channel", "missing: the gauge of the controller's profile it is on")
			} else if prev, dup := channels[h.Channel]; dup {
				bad(h.Key+".channel", "channel %s is also head %s's", h.Channel, prev)
			} else {
				channels[h.Channel] = h.Name
			}
			switch {
			case !headRoles[h.Role]:
				bad(h.Key+".role", "unknown role %q (%s or %s)", h.Role, HeadProcess, HeadRoughing)
			case h.Role == HeadProcess && process != "":
				bad(h.Key+".role", "head %s also reads the process pressure: one head is the interlocks' process pressure", process)
			case h.Role == HeadProcess:
				process = h.Name
			}
		}
	}
	if len(c.Gauges) > 0 && process == "" {
		bad("gauges", "no head reads the process pressure: give one head role %s", HeadProcess)
	}
}
