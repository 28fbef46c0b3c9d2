package rigconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hcp-edge/hcp-edge/drivers/profile"
	"github.com/hcp-edge/hcp-edge/drivers/regmap"
	"github.com/hcp-edge/hcp-edge/envelope"
)

// Hazard classes of a gas line.
var hazards = map[string]bool{"inert": true, "toxic": true, "flammable": true, "oxidising": true, "corrosive": true}

// outputRoles and inputRoles are the roles a layout may give.
var (
	outputRoles = map[string]bool{RolePump: true, RoleGate: true, RoleVent: true, RoleScrubber: true}
	inputRoles  = map[string]bool{RoleDoor: true}
)

// loadProfiles reads the profiles the rig names (once; Parse calls it).
func (r *Rig) loadProfiles() error {
	if r.profiles != nil {
		return nil
	}
	ps, err := LoadProfiles(r.ProfilesDir)
	r.profiles = ps
	r.refused = refusedIDs(err)
	return err
}

// refusedIDs are the IDs of the profiles whose files err refuses.
func refusedIDs(err error) map[string]bool {
	out := map[string]bool{}
	for _, p := range ProfileProblems(err) {
		out[strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))] = true
	}
	return out
}

// ProfileRefused reports whether the profile id was refused when the rig
// loaded its profiles: its problems are reported in its own file, and a
// reference to it is no further problem of the configuration.
func (r Rig) ProfileRefused(id string) bool { return r.refused[id] }

// Profiles returns the rig's instrument profiles (the shipped ones and
// those of profiles_dir), loading them on first use.
func (r *Rig) Profiles() (Profiles, error) {
	err := r.loadProfiles()
	return r.profiles, err
}

// layoutErrors checks the layout against the profiles: every device names a
// profile of its kind, every output and input a channel of the I/O module's
// profile with that role, every gas line a hazard class and an output for
// its valve, every role at most once.
func (r Rig) layoutErrors(bad func(key, format string, a ...any)) {
	ps := r.profiles
	if ps == nil {
		var err error
		if ps, err = LoadProfiles(r.ProfilesDir); err != nil {
			bad("profiles_dir", "%v", err)
		}
	}
	fp, err := ps.lookup(r.Furnace.Profile, profile.TemperatureController)
	if err != nil {
		r.badProfile(bad, "furnace.profile", r.Furnace.Profile, err)
	} else if fp.Family != profile.Modbus {
		bad("furnace.profile", "profile %q is of the %s family; the furnace is on a Modbus bus", fp.ID, fp.Family)
	}
	dp, err := ps.lookup(r.DIO.Profile, profile.IOModule)
	if err != nil {
		r.badProfile(bad, "dio.profile", r.DIO.Profile, err)
	}
	roles := map[string]string{}
	channels := map[string]string{}
	for _, name := range sortedKeys(r.Outputs) {
		o := r.Outputs[name]
		key := "outputs." + name
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
		if dp != nil {
			if c, ok := dp.Channel(o.Channel); !ok || c.Role != profile.RoleOutput {
				bad(key+".channel", "profile %s has no output channel %q", dp.ID, o.Channel)
			}
		}
		if prev, dup := channels[o.Channel]; dup {
			bad(key+".channel", "channel %s is also %s", o.Channel, prev)
		}
		channels[o.Channel] = name
	}
	for _, name := range sortedKeys(r.Inputs) {
		in := r.Inputs[name]
		key := "inputs." + name
		if in.Role != "" {
			if !inputRoles[in.Role] {
				bad(key+".role", "unknown role %q (door)", in.Role)
			} else if prev, dup := roles[in.Role]; dup {
				bad(key+".role", "role %s is also input %s's", in.Role, prev)
			}
			roles[in.Role] = name
		}
		if _, clash := r.Outputs[name]; clash || name == InputEStop || name == InputLeak || name == InputRelayFB {
			bad(key, "%q is already the name of an output or a GPIO input", name)
		}
		if dp != nil {
			if c, ok := dp.Channel(in.Channel); !ok || c.Role != profile.RoleInput {
				bad(key+".channel", "profile %s has no input channel %q", dp.ID, in.Channel)
			}
		}
		if prev, dup := channels[in.Channel]; dup {
			bad(key+".channel", "channel %s is also %s", in.Channel, prev)
		}
		channels[in.Channel] = name
	}
	valves := map[string]string{}
	for i, m := range r.MFCs {
		key := fmt.Sprintf("mfcs[%d]", i)
		if !hazards[m.Hazard] {
			bad(key+".hazard", "%q: every gas line names its hazard class (inert, toxic, flammable, oxidising or corrosive)", m.Hazard)
		}
		if _, ok := r.Outputs[m.Valve]; !ok {
			bad(key+".valve", "%q is not an output of the layout (rig.outputs)", m.Valve)
		} else if o := r.Outputs[m.Valve]; o.Role != "" {
			bad(key+".valve", "%q is the %s output, not a line valve", m.Valve, o.Role)
		}
		if prev, dup := valves[m.Valve]; dup {
			bad(key+".valve", "%q already opens the %s line", m.Valve, prev)
		}
		valves[m.Valve] = m.Gas
		if mp, err := ps.serial(m.Profile, profile.FlowController, profile.Alicat); err != nil {
			r.badProfile(bad, key+".profile", m.Profile, err)
		} else if fs, err := ParseFlow(m.FullScale); err == nil && (fs.SCCM() < mp.FullScale[0] || fs.SCCM() > mp.FullScale[1]) {
			bad(key+".full_scale", "%v is outside the full scales profile %s's model is made in (%g..%g sccm)", fs, mp.ID, mp.FullScale[0], mp.FullScale[1])
		}
	}
	if gp, err := ps.serial(r.Gauge.Profile, profile.PressureGauge, profile.TPG); err != nil {
		r.badProfile(bad, "gauge.profile", r.Gauge.Profile, err)
	} else if _, ok := gp.Channel(r.Gauge.Channel); r.Gauge.Channel != "" && !ok {
		bad("gauge.channel", "profile %s has no gauge %q", gp.ID, r.Gauge.Channel)
	}
	if toxic := r.toxicLines(); len(toxic) > 0 && r.role(RoleScrubber) == "" {
		for _, i := range toxic {
			bad(fmt.Sprintf("mfcs[%d].hazard", i), "%s is toxic, and no output of the layout is the exhaust scrubber: "+
				"give the scrubber's output role %s (rig.outputs), and require it on in envelope.interlocks.gases.%s.require_switches_on",
				r.MFCs[i].Gas, RoleScrubber, r.MFCs[i].Gas)
		}
	}
	r.nameErrors(bad)
	r.addressErrors(bad)
	if fp != nil && fp.Lacking(profile.NoCommsWatchdog) && r.GPIO.RelayWatchdog <= 0 {
		bad("furnace.profile", "profile %s has no comms watchdog: a dead agent would leave the heater on; "+
			"name another dead-agent path (rig.gpio.relay_watchdog: the interlock relay held by the agent's heartbeat)", fp.ID)
	}
}

// badProfile reports a device's profile that cannot be used, unless the
// profile's own file was refused: its problems are then reported there, at
// their lines, and the reference is no second problem.
func (r Rig) badProfile(bad func(key, format string, a ...any), key, id string, err error) {
	if !r.refused[id] {
		bad(key, "%v", err)
	}
}

// toxicLines are the indexes of the toxic gas lines.
func (r Rig) toxicLines() []int {
	var out []int
	for i, m := range r.MFCs {
		if m.Hazard == envelope.HazardToxic {
			out = append(out, i)
		}
	}
	return out
}

// nameErrors refuses two instruments of one name (compared without case):
// the furnace controller and the I/O module (named furnace and dio), the
// mass-flow controllers, the gauge and the spectrometer. Their readings,
// faults, audit entries and probe rows are keyed by it.
func (r Rig) nameErrors(bad func(key, format string, a ...any)) {
	seen := map[string]string{"furnace": "the furnace controller", "dio": "the digital I/O module"}
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
	for i, m := range r.MFCs {
		check(fmt.Sprintf("mfcs[%d].name", i), m.Name, fmt.Sprintf("mfcs[%d] (the %s controller)", i, m.Gas))
	}
	check("gauge.name", gaugeName(r.Gauge), "the gauge")
	check("raman.name", ramanName(r.Raman), "the spectrometer")
}

// addressErrors refuses two instruments at one address: the furnace
// controller and the I/O module at one unit id of one Modbus bus, and two
// serial instruments on one port (the agent opens each instrument's port
// for it alone, with exclusive access: the second would be unreachable at
// every start).
func (r Rig) addressErrors(bad func(key, format string, a ...any)) {
	if r.Furnace.Bus == r.DIO.Bus && r.Furnace.Unit == r.DIO.Unit && r.Furnace.Unit != 0 {
		bad("dio.unit", "%d is also the furnace controller's unit id on bus %s: every instrument on a bus has its own", r.DIO.Unit, r.DIO.Bus)
	}
	ports := map[string]string{}
	check := func(key, port, what string) {
		if port == "" {
			return // reported as missing
		}
		port = filepath.Clean(port)
		if prev, dup := ports[port]; dup {
			bad(key, "%s is also the port of %s: the agent opens each instrument's port for it alone", port, prev)
			return
		}
		ports[port] = what
	}
	for i, m := range r.MFCs {
		check(fmt.Sprintf("mfcs[%d].port", i), m.Port, fmt.Sprintf("mfcs[%d] (%s)", i, m.Name))
	}
	check("gauge.port", r.Gauge.Port, "the gauge")
	check("raman.port", r.Raman.Port, "the spectrometer")
}

// toxicInterlockErrors refuses a toxic gas line whose envelope interlock
// does not require the exhaust scrubber on: with it, the interlock holds
// the line closed while the scrubber is off and refuses to switch the
// scrubber off while the gas is in use (envelope.GasInterlock).
func (f File) toxicInterlockErrors() []error {
	scrubber := f.Rig.role(RoleScrubber)
	if scrubber == "" {
		return nil // reported by the layout, at the toxic line
	}
	var errs []error
	for _, i := range f.Rig.toxicLines() {
		gas := f.Rig.MFCs[i].Gas
		if g, ok := f.Envelope.Interlocks.Gases[gas]; !ok || !slices.Contains(g.RequireSwitchesOn, scrubber) {
			errs = append(errs, fmt.Errorf("envelope.interlocks.gases.%s.require_switches_on: %s is toxic (rig.mfcs[%d]): its interlock requires the exhaust scrubber, output %s, on, "+
				"so that the line stays closed while the scrubber is off and the scrubber stays on while %s is in use", gas, gas, i, scrubber, gas))
		}
	}
	return errs
}

// role returns the output or input of a role, or "".
func (r Rig) role(role string) string {
	for _, name := range sortedKeys(r.Outputs) {
		if r.Outputs[name].Role == role {
			return name
		}
	}
	for _, name := range sortedKeys(r.Inputs) {
		if r.Inputs[name].Role == role {
			return name
		}
	}
	return ""
}

// HazardOf returns the hazard class of each gas.
func (r Rig) HazardOf() map[string]string {
	out := map[string]string{}
	for _, m := range r.MFCs {
		out[m.Gas] = m.Hazard
	}
	return out
}

// moduleOpts is the I/O module's layout for the generic driver.
func (r Rig) moduleOpts() regmap.ModuleOpts {
	o := regmap.ModuleOpts{Name: "dio", Unit: r.DIO.Unit}
	for _, name := range sortedKeys(r.Outputs) {
		out := r.Outputs[name]
		o.Outputs = append(o.Outputs, regmap.OutputSpec{Name: name, Channel: out.Channel, Safe: out.Safe == "on"})
	}
	for _, name := range sortedKeys(r.Inputs) {
		in := r.Inputs[name]
		o.Inputs = append(o.Inputs, regmap.InputSpec{Name: name, Channel: in.Channel, Invert: in.Invert})
	}
	return o
}

// expandProfilesDir expands the environment and ${sim_dir} in profiles_dir.
func (r *Rig) expandProfilesDir() {
	r.ProfilesDir = os.ExpandEnv(strings.ReplaceAll(r.ProfilesDir, "${sim_dir}", r.SimDir))
}

// ProfileProblems returns the *profile.Problem values in err (each at its
// own FILE:LINE), for reports that place them in the profile's file.
func ProfileProblems(err error) []*profile.Problem {
	var out []*profile.Problem
	var walk func(error)
	walk = func(e error) {
		var p *profile.Problem
		if errors.As(e, &p) && p == e {
			out = append(out, p)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		} else if u := errors.Unwrap(e); u != nil {
			walk(u)
		}
	}
	if err != nil {
		walk(err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// InputAddresses are the layout's inputs with the address of their channel
// in the I/O module's profile.
func (r Rig) InputAddresses() (map[string]int, error) {
	ps, err := r.Profiles()
	if err != nil {
		return nil, err
	}
	dp, err := ps.lookup(r.DIO.Profile, profile.IOModule)
	if err != nil {
		return nil, fmt.Errorf("rigconfig: dio: %w", err)
	}
	out := map[string]int{}
	for name, in := range r.Inputs {
		ch, ok := dp.Channel(in.Channel)
		if !ok || ch.Address == nil {
			return nil, fmt.Errorf("rigconfig: input %s: profile %s has no channel %q", name, dp.ID, in.Channel)
		}
		out[name] = *ch.Address
	}
	return out, nil
}
