package rig

import "strconv"

// ZoneEntry is one heated zone as the file writes it, in either shape: the
// zone's name, its controller's instrument name and address, and the
// configuration key of the controller (rig.furnace, rig.zones[1].controller),
// below which problems are reported.
type ZoneEntry struct {
	Key        string
	Name       string
	Controller string
	ModbusDevice
}

// ModuleEntry is one I/O module as the file writes it, in either shape,
// with its configuration key (rig.dio, rig.modules[0]).
type ModuleEntry struct {
	Key  string
	Name string
	ModbusDevice
}

// GaugeEntry is one gauge controller as the file writes it, in either
// shape, with its configuration key (rig.gauge, rig.gauges[0]) and its
// heads. The one-entry shape's gauge has one process head named as the
// controller.
type GaugeEntry struct {
	Key     string
	Name    string
	Serial  Serial
	Profile string
	Heads   []HeadEntry
}

// HeadEntry is one gauge head as the file writes it, with its
// configuration key (rig.gauges[0].heads[1]; the one-entry shape's head is
// its gauge, rig.gauge, whose channel key is the head's).
type HeadEntry struct {
	Key     string
	Name    string
	Channel string
	Role    string
}

// ZoneEntries returns the heated zones in the configuration's order: the
// list shape's (rig.zones) when written, else the one-entry shape's
// furnace, when written, as the zone named furnace; none when neither is.
func (c Config) ZoneEntries() []ZoneEntry {
	if len(c.Zones) > 0 {
		out := make([]ZoneEntry, len(c.Zones))
		for i, z := range c.Zones {
			name := z.Controller.Name
			if name == "" {
				name = z.Name
			}
			out[i] = ZoneEntry{Key: "zones[" + strconv.Itoa(i) + "].controller", Name: z.Name, Controller: name, ModbusDevice: z.Controller.ModbusDevice}
		}
		return out
	}
	if c.Furnace == (ModbusDevice{}) {
		return nil
	}
	return []ZoneEntry{{Key: "furnace", Name: FurnaceName, Controller: FurnaceName, ModbusDevice: c.Furnace}}
}

// ModuleEntries returns the I/O modules in the configuration's order: the
// list shape's (rig.modules) when written, else the one-entry shape's dio,
// when written, as the module named dio; none when neither is.
func (c Config) ModuleEntries() []ModuleEntry {
	if len(c.Modules) > 0 {
		out := make([]ModuleEntry, len(c.Modules))
		for i, m := range c.Modules {
			out[i] = ModuleEntry{Key: "modules[" + strconv.Itoa(i) + "]", Name: m.Name, ModbusDevice: m.ModbusDevice}
		}
		return out
	}
	if c.DIO == (ModbusDevice{}) {
		return nil
	}
	return []ModuleEntry{{Key: "dio", Name: DIOName, ModbusDevice: c.DIO}}
}

// GaugeEntries returns the gauge controllers in the configuration's order:
// the list shape's (rig.gauges) when written, else the one-entry shape's
// gauge, when written, with one process head of the gauge's name; none
// when neither is.
func (c Config) GaugeEntries() []GaugeEntry {
	if len(c.Gauges) > 0 {
		out := make([]GaugeEntry, len(c.Gauges))
		for i, g := range c.Gauges {
			key := "gauges[" + strconv.Itoa(i) + "]"
			e := GaugeEntry{Key: key, Name: g.Name, Serial: g.Serial, Profile: g.Profile}
			for j, h := range g.Heads {
				e.Heads = append(e.Heads, HeadEntry{Key: key + ".heads[" + strconv.Itoa(j) + "]", Name: h.Name, Channel: h.Channel, Role: h.Role})
			}
			out[i] = e
		}
		return out
	}
	if c.Gauge == (Gauge{}) {
		return nil
	}
	name := c.GaugeName()
	return []GaugeEntry{{Key: "gauge", Name: name, Serial: c.Gauge.Serial, Profile: c.Gauge.Profile,
		Heads: []HeadEntry{{Key: "gauge", Name: name, Channel: c.Gauge.Channel, Role: HeadProcess}}}}
}

// ModuleOf returns the module an output or input names: its own, else the
// only module of the layout ("" when there are several and it names none).
func (c Config) ModuleOf(module string) string {
	if module != "" {
		return module
	}
	if ms := c.ModuleEntries(); len(ms) == 1 {
		return ms[0].Name
	}
	return ""
}
