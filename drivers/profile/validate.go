package profile

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"hcp-edge/drivers/modbus"
)

// check records every problem of p.
func (v *validator) check(p *Profile) {
	if p.Model == "" {
		v.add(v.line(), "model", "missing: the instrument model's name")
	}
	if p.Manual.Document == "" || p.Manual.Revision == "" {
		v.add(v.line("manual"), "manual", "the manual it was written from needs a document and a revision")
	}
	switch p.Family {
	case Modbus, Alicat, TPG:
	case "":
		v.add(v.line(), "family", "missing (modbus, alicat or tpg)")
	default:
		v.add(v.line("family"), "family", "unknown protocol family %q (modbus, alicat or tpg)", p.Family)
	}
	switch p.Kind {
	case TemperatureController, IOModule, FlowController, PressureGauge:
	default:
		v.add(v.line("kind"), "kind", "unknown kind %q (temperature_controller, io_module, mass_flow_controller or pressure_gauge)", p.Kind)
	}
	for i, l := range p.Lacks {
		if l != NoCommsWatchdog {
			v.add(v.line("lacks", i), fmt.Sprintf("lacks[%d]", i), "unknown %q (comms_watchdog)", l)
		}
	}
	if p.Family == Modbus {
		v.checkModbus(p)
		v.checkUnits(p)
		v.checkExpect(p)
	} else if p.Family == Alicat || p.Family == TPG {
		v.checkSerial(p)
	}
}

// checkModbus checks the channels of a register map.
func (v *validator) checkModbus(p *Profile) {
	if len(p.Channels) == 0 {
		v.add(v.line("channels"), "channels", "a Modbus profile needs at least one channel")
	}
	names := map[string]int{}
	roles := map[Role]int{}
	type span struct {
		lo, hi, i int
	}
	spans := map[string][]span{}
	for i := range p.Channels {
		c := &p.Channels[i]
		c.line = v.line("channels", i)
		key := func(k string) string {
			if c.Name != "" {
				return fmt.Sprintf("channels[%s].%s", c.Name, k)
			}
			return fmt.Sprintf("channels[%d].%s", i, k)
		}
		at := func(k string) int { return v.line("channels", i, k) }
		if c.Name == "" {
			v.add(c.line, key("name"), "missing")
		} else if j, dup := names[c.Name]; dup {
			v.add(at("name"), key("name"), "%q is also channel %d", c.Name, j)
		} else {
			names[c.Name] = i
		}
		t, ok := tables[c.Table]
		if !ok {
			v.add(at("table"), key("table"), "unknown table %q (coil, discrete_input, input_register or holding_register)", c.Table)
		}
		if c.Address == nil {
			v.add(c.line, key("address"), "missing")
		} else if *c.Address < 0 || *c.Address > 65535 {
			v.add(at("address"), key("address"), "%d outside 0..65535", *c.Address)
		}
		bit := t == modbus.Coil || t == modbus.Discrete
		switch c.Type {
		case "bool":
			if ok && !bit {
				v.add(at("type"), key("type"), "bool is the type of coils and discrete inputs, not of a register")
			}
		case "int16", "uint16", "int32", "uint32", "float32":
			if ok && bit {
				v.add(at("type"), key("type"), "a %s is one bit: its type is bool", c.Table)
			}
		default:
			v.add(at("type"), key("type"), "unknown raw type %q (bool, int16, uint16, int32, uint32 or float32)", c.Type)
		}
		words := 1
		switch c.Type {
		case "int32", "uint32", "float32":
			words = 2
		}
		if c.WordOrder != "" {
			if _, _, err := modbus.ParseOrder(c.WordOrder); err != nil {
				v.add(at("word_order"), key("word_order"), "%q (ABCD, CDAB, BADC or DCBA)", c.WordOrder)
			} else if words == 1 && c.Type != "" {
				one := "register"
				if bit {
					one = "bit"
				}
				v.add(at("word_order"), key("word_order"), "%s: a word order orders the two registers of a 32-bit value (int32, uint32, float32); type %s is one %s",
					c.WordOrder, c.Type, one)
			}
		}
		if c.Address != nil && *c.Address >= 0 && *c.Address <= 65535 && *c.Address+words-1 > 65535 {
			v.add(at("address"), key("address"), "a %s takes %d registers, %d and %d: past the last register, 65535", c.Type, words, *c.Address, *c.Address+words-1)
		}
		if c.Scale != nil && (*c.Scale == 0 || math.IsNaN(*c.Scale) || math.IsInf(*c.Scale, 0)) {
			v.add(at("scale"), key("scale"), "%v: a scale must be finite and not zero", *c.Scale)
		}
		if math.IsNaN(c.Offset) || math.IsInf(c.Offset, 0) {
			v.add(at("offset"), key("offset"), "%v: an offset must be finite", c.Offset)
		}
		v.checkRange(c.Range, at("range"), key("range"))
		switch c.Access {
		case "read":
		case "read_write":
			if ok && (t == modbus.Input || t == modbus.Discrete) {
				v.add(at("access"), key("access"), "a %s cannot be written", c.Table)
			}
		default:
			v.add(at("access"), key("access"), "%q (read or read_write)", c.Access)
		}
		if c.WriteEndurance < 0 {
			v.add(at("write_endurance"), key("write_endurance"), "%d: a count of writes", c.WriteEndurance)
		}
		v.checkRole(p, c, key, at, roles, i, bit)
		if ok && c.Address != nil {
			spans[c.Table] = append(spans[c.Table], span{*c.Address, *c.Address + words - 1, i})
		}
	}
	for table, ss := range spans {
		sort.Slice(ss, func(a, b int) bool { return ss[a].lo < ss[b].lo })
		for k := 1; k < len(ss); k++ {
			if ss[k].lo <= ss[k-1].hi {
				a, b := p.Channels[ss[k-1].i], p.Channels[ss[k].i]
				v.add(v.line("channels", ss[k].i, "address"), fmt.Sprintf("channels[%s].address", b.Name),
					"%s %d overlaps channel %s (%d..%d)", table, ss[k].lo, a.Name, ss[k-1].lo, ss[k-1].hi)
			}
		}
	}
	for _, r := range required[p.Kind] {
		if _, ok := roles[r]; !ok {
			v.add(v.line("channels"), "channels", "a %s needs a channel with role %s", p.Kind, r)
		}
	}
	if i, ok := roles[RoleSetpoint]; ok && p.Kind == TemperatureController && len(p.Channels[i].Range) == 0 {
		c := p.Channels[i]
		v.add(c.line, fmt.Sprintf("channels[%s].range", c.Name),
			"the setpoint declares the controller's setpoint range [min, max] (in its unit): the envelope's setpoint limits are checked against it")
	}
	_, kick := roles[RoleWatchdogKick]
	_, timeout := roles[RoleWatchdogTimeout]
	switch {
	case p.Kind != TemperatureController:
	case p.Lacking(NoCommsWatchdog) && (kick || timeout):
		v.add(v.line("lacks"), "lacks", "declares no comms watchdog but has watchdog channels")
	case !p.Lacking(NoCommsWatchdog) && !kick:
		v.add(v.line("channels"), "channels", "no channel with role watchdog_kick: declare `lacks: [comms_watchdog]` if the model has none")
	}
	if p.Kind == IOModule {
		n := 0
		for _, c := range p.Channels {
			if c.Role == RoleOutput || c.Role == RoleInput {
				n++
			}
		}
		if n == 0 {
			v.add(v.line("channels"), "channels", "an io_module needs at least one channel with role output or input")
		}
	}
}

// checkRole checks a channel's role against its table and access.
func (v *validator) checkRole(p *Profile, c *Channel, key func(string) string, at func(string) int, roles map[Role]int, i int, bit bool) {
	if c.Role == "" {
		if c.Writable() {
			v.add(c.line, key("role"), "a writable channel needs a role: nothing in the rig's contracts would bound its writes")
		}
		return
	}
	known := single[c.Role] || c.Role == RoleOutput || c.Role == RoleInput || c.Role == RoleInit
	if !known {
		v.add(at("role"), key("role"), "unknown role %q", c.Role)
		return
	}
	if single[c.Role] {
		if j, dup := roles[c.Role]; dup {
			v.add(at("role"), key("role"), "role %s is also channel %s's", c.Role, p.Channels[j].Name)
		}
		roles[c.Role] = i
	}
	_, written := writtenRoles[c.Role]
	if written && c.Role != RoleOutput && !c.Writable() {
		v.add(at("access"), key("access"), "role %s is written by the agent (%s): access must be read_write", c.Role, writtenRoles[c.Role])
	}
	switch c.Role {
	case RoleOutput:
		if c.Table != "coil" || !c.Writable() {
			v.add(at("role"), key("role"), "an output is a read_write coil")
		}
	case RoleInput:
		if !bit {
			v.add(at("role"), key("role"), "an input is a coil or a discrete input")
		}
	default:
		if bit {
			v.add(at("role"), key("role"), "role %s is a register, not a bit", c.Role)
		}
	}
	if names, ok := roleBits[c.Role]; ok {
		if len(c.Bits) == 0 {
			v.add(at("role"), key("bits"), "role %s needs its bits (%v)", c.Role, names)
		}
		for name, b := range c.Bits {
			if !slices.Contains(names, name) {
				v.add(at("bits"), key("bits."+name), "unknown bit (%v)", names)
			}
			if b < 0 || b > 15 {
				v.add(at("bits"), key("bits."+name), "bit %d outside 0..15", b)
			}
		}
	} else if len(c.Bits) > 0 {
		v.add(at("bits"), key("bits"), "only alarm_bits and status_bits name bits")
	}
	if (c.Role == RoleInit) != (c.Value != nil) {
		v.add(at("role"), key("value"), "an init channel, and only an init channel, names the value it is set to at start")
	} else if c.Value != nil && !c.InRange(*c.Value) {
		v.add(at("value"), key("value"), "%v outside the channel's range %v", *c.Value, c.Range)
	}
	if c.Role == RoleHeaterEnable && (c.On == nil || c.Off == nil || *c.On == *c.Off) {
		v.add(at("role"), key("on"), "a heater_enable channel names its raw on and off values, and they differ")
	}
	if c.WriteEndurance > 0 && repeated[c.Role] {
		v.add(at("write_endurance"), key("write_endurance"),
			"role %s is written %s, but this memory is rated for %d writes: give the role to a register without that limit (the comms setpoint, or the controller's own ramp)",
			c.Role, writtenRoles[c.Role], c.WriteEndurance)
	}
}
