package profile

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"hcp-edge/device"
	"hcp-edge/drivers/serialline"
)

// Meanings a status code of each serial family may have. The driver acts
// on valve_held (alicat: a halt is confirmed by it), sensor_fault (alicat:
// the frame is a fault, never a value) and on every tpg meaning but ok,
// underrange and overrange (the reading is a fault). An alicat code that is
// informational (a status the controller lists, not an error, whose
// meaning the manual does not tie to the reading) is a warning carried in
// the reading's flags.
var meanings = map[Family][]string{
	Alicat: {"valve_held", "over_range", "totalizer_overflow", "sensor_fault", "exhaust", "display_locked", "over_pressure_limit", "informational"},
	TPG:    {"ok", "underrange", "overrange", "sensor_error", "sensor_off", "no_sensor", "identification_error"},
}

// serialFamily is what a profile of a serial family must declare.
type serialFamily struct {
	kind     Kind
	roles    []Role   // the roles its channels may have
	required []Role   // of them, the ones it must have
	commands []string // its commands: keys
	needCmds int      // the first needCmds commands are required
	meaning  string   // a status meaning it must have
}

var serialFamilies = map[Family]serialFamily{
	Alicat: {FlowController, []Role{RoleFlow, RoleSetpoint, RolePressure, RoleTemperature, RoleVolumetricFlow, RoleGas},
		[]Role{RoleFlow, RoleSetpoint, RoleGas}, []string{"hold_closed", "cancel_hold", "version"}, 2, "valve_held"},
	TPG: {PressureGauge, []Role{RolePressure}, []Role{RolePressure}, []string{"unit", "ident", "error"}, 1, "ok"},
}

// PressureUnit returns a pressure unit of a profile in pascal (pa, mbar,
// hpa, torr, psia).
func PressureUnit(unit string) (device.Pressure, bool) {
	if unit == "psia" {
		return device.Pressure(6894.757293168361), true // lbf/in²
	}
	p, err := device.PressureIn(1, unit)
	return p, err == nil
}

// checkSerial checks a profile of the alicat or tpg family: for alicat the
// data frame's columns in order (after the unit id), the setpoint command,
// hold and cancel commands, status codes and the full scales it is made in;
// for tpg the gauges' mnemonics and measuring ranges, the unit codes and
// command, and the status codes.
func (v *validator) checkSerial(p *Profile) {
	fam := serialFamilies[p.Family]
	if p.Kind != fam.kind {
		v.add(v.line("kind"), "kind", "a profile of the %s family is a %s", p.Family, fam.kind)
	}
	if p.Mode != "" {
		if _, err := serialline.ParseMode(p.Mode); err != nil {
			v.add(v.line("mode"), "mode", "%v", err)
		}
	}
	if len(p.Channels) == 0 {
		v.add(v.line("channels"), "channels", "a %s profile needs at least one channel", p.Family)
	}
	names := map[string]bool{}
	roles := map[Role]bool{}
	for i := range p.Channels {
		c := &p.Channels[i]
		c.line = v.line("channels", i)
		key := func(k string) string { return fmt.Sprintf("channels[%s].%s", c.Name, k) }
		at := func(k string) int { return v.line("channels", i, k) }
		if c.Name == "" || names[c.Name] {
			v.add(c.line, key("name"), "missing or repeated")
		}
		names[c.Name] = true
		if c.Table != "" || c.Address != nil || c.Scale != nil || c.WordOrder != "" {
			v.add(c.line, key("table"), "a %s channel has no register: table, address, scale and word_order are Modbus keys", p.Family)
		}
		if !slices.Contains(fam.roles, c.Role) {
			v.add(at("role"), key("role"), "%q: a %s channel's role is one of %v", c.Role, p.Family, fam.roles)
		} else if roles[c.Role] && p.Family == Alicat {
			v.add(at("role"), key("role"), "role %s is also another column's", c.Role)
		}
		roles[c.Role] = true
		if c.Type != "" && (c.Type != "text" || p.Family != Alicat) || (c.Type == "text") != (c.Role == RoleGas) {
			v.add(c.line, key("type"), "%q: the gas column, and only it, is text; other channels are numbers (no type)", c.Type)
		}
		v.checkRange(c.Range, at("range"), key("range"))
		v.checkRange(c.FSRange, at("fs_range"), key("fs_range"))
		if c.FSRange != nil && (c.Range != nil || (c.Role != RoleFlow && c.Role != RoleSetpoint && c.Role != RoleVolumetricFlow)) {
			v.add(at("fs_range"), key("fs_range"), "only a flow column's range is a fraction of full scale, and then it has no range")
		}
		unitOK := true
		switch c.Role {
		case RolePressure:
			_, unitOK = PressureUnit(c.Unit)
		case RoleTemperature:
			unitOK = c.Unit == "celsius"
		case RoleFlow, RoleSetpoint:
			unitOK = c.Unit == "sccm" || c.Unit == "slpm"
		}
		if !unitOK {
			v.add(c.line, key("unit"), "%q is not a unit of role %s (pressure: pa, mbar, hpa, torr, psia; temperature: celsius; flow: sccm, slpm)", c.Unit, c.Role)
		}
		// The setpoint is the only written channel; its command and a
		// tpg gauge's mnemonic are the channels' commands.
		write := c.Role == RoleSetpoint
		if c.Writable() != write || (c.Access != "read" && !c.Writable()) {
			v.add(c.line, key("access"), "%q: the setpoint is read_write, every other channel read", c.Access)
		}
		if (c.Command != "") != (write || p.Family == TPG) {
			v.add(c.line, key("command"), "the setpoint's command (alicat) and each gauge's mnemonic (tpg), and only those, are named")
		}
		if p.Family == TPG && len(c.Range) != 2 {
			v.add(c.line, key("range"), "a gauge declares its measuring range (in its unit)")
		}
	}
	for _, r := range fam.required {
		if !roles[r] {
			v.add(v.line("channels"), "channels", "a %s profile needs a channel with role %s", p.Family, r)
		}
	}
	for i, c := range fam.commands {
		if _, ok := p.Commands[c]; !ok && i < fam.needCmds {
			v.add(v.line("commands"), "commands."+c, "missing: the %s family's driver needs it", p.Family)
		}
	}
	for _, k := range sortedKeys(p.Commands) {
		if !slices.Contains(fam.commands, k) || p.Commands[k] == "" {
			v.add(v.line("commands", k), "commands."+k, "unknown or empty (%v)", fam.commands)
		}
	}
	found := false
	for _, code := range sortedKeys(p.StatusCodes) {
		m := p.StatusCodes[code]
		found = found || m == fam.meaning
		if !slices.Contains(meanings[p.Family], m) || code == "" || (p.Family == TPG && len(code) != 1) {
			v.add(v.line("status_codes", code), "status_codes."+code, "%q: a meaning of the %s family (%v)", m, p.Family, meanings[p.Family])
		}
	}
	if !found {
		v.add(v.line("status_codes"), "status_codes", "needs a code meaning %s", fam.meaning)
	}
	for _, code := range sortedKeys(p.Units) {
		if _, ok := PressureUnit(p.Units[code]); !ok || len(code) != 1 {
			v.add(v.line("units", code), "units."+code, "%q: a one-character code of a pressure unit (pa, mbar, hpa, torr, psia)", p.Units[code])
		}
	}
	for i, id := range p.GaugeIDs {
		if len(id) > 8 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
			v.add(v.line("gauge_ids"), fmt.Sprintf("gauge_ids[%d]", i), "%q: a gauge type as TID reports it (letters and digits, e.g. PKR)", id)
		}
	}
	if p.Family != TPG && len(p.GaugeIDs) > 0 {
		v.add(v.line("gauge_ids"), "gauge_ids", "only a tpg profile names gauge types")
	}
	if (p.Family == TPG) != (len(p.Units) > 0) {
		v.add(v.line("units"), "units", "a tpg profile, and only a tpg profile, names its unit codes")
	}
	if fs := p.FullScale; (p.Family == Alicat) != (len(fs) == 2 && fs[0] > 0 && fs[0] <= fs[1]) {
		v.add(v.line("full_scale"), "full_scale", "%v: an alicat profile names the full scales it is made in, sccm [min, max] with 0 < min ≤ max", fs)
	}
	if p.NumberWidth < 0 || p.NumberWidth > 16 {
		v.add(v.line("number_width"), "number_width", "%d outside 0..16", p.NumberWidth)
	}
}

// checkRange checks a [min, max] pair, when present.
func (v *validator) checkRange(r []float64, line int, key string) {
	if len(r) != 0 && (len(r) != 2 || !(r[0] <= r[1])) {
		v.add(line, key, "%v: want [min, max] with min ≤ max", r)
	} else if len(r) == 2 && (math.IsInf(r[0], 0) || math.IsInf(r[1], 0)) {
		v.add(line, key, "%v: a range is finite: an infinite bound would let every limit checked against it pass", r)
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Reading is one channel of a serial instrument as read through its
// profile (hcp-edge probe): the field as the instrument sent it, the
// engineering value in the channel's unit, and whether it lies inside the
// channel's declared range.
type Reading struct {
	Channel string    `json:"channel"`
	Command string    `json:"command"` // what was sent for it
	Raw     string    `json:"raw"`
	Value   float64   `json:"value"`
	Unit    string    `json:"unit,omitempty"`
	Range   []float64 `json:"range,omitempty"`
	InRange bool      `json:"in_range"`
	Error   string    `json:"error,omitempty"`
}
