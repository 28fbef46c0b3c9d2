package rigconfig

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hcp-edge/hcp-edge/device/rig"
	"github.com/hcp-edge/hcp-edge/drivers/profile"
	"github.com/hcp-edge/hcp-edge/drivers/regmap"
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
// profile of its kind and family, every output and input a channel of the
// I/O module's profile with that role, every full scale one the flow
// controller's model is made in, and a heater without a comms watchdog a
// relay watchdog. (The structure is device/rig's Config.Check.)
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
	for _, name := range sortedKeys(r.Outputs) {
		if o := r.Outputs[name]; dp != nil {
			if c, ok := dp.Channel(o.Channel); !ok || c.Role != profile.RoleOutput {
				bad("outputs."+name+".channel", "profile %s has no output channel %q", dp.ID, o.Channel)
			}
		}
	}
	for _, name := range sortedKeys(r.Inputs) {
		if in := r.Inputs[name]; dp != nil {
			if c, ok := dp.Channel(in.Channel); !ok || c.Role != profile.RoleInput {
				bad("inputs."+name+".channel", "profile %s has no input channel %q", dp.ID, in.Channel)
			}
		}
	}
	for i, m := range r.MFCs {
		key := fmt.Sprintf("mfcs[%d]", i)
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

// toxicInterlockErrors refuses a toxic gas line whose envelope interlock
// does not require the exhaust scrubber on: with it, the interlock holds
// the line closed while the scrubber is off and refuses to switch the
// scrubber off while the gas is in use (envelope.GasInterlock).
func (f File) toxicInterlockErrors() []error {
	scrubber := f.Rig.Role(RoleScrubber)
	if scrubber == "" {
		return nil // reported by the layout, at the toxic line
	}
	var errs []error
	for _, i := range f.Rig.ToxicLines() {
		gas := f.Rig.MFCs[i].Gas
		if g, ok := f.Envelope.Interlocks.Gases[gas]; !ok || !slices.Contains(g.RequireSwitchesOn, scrubber) {
			errs = append(errs, fmt.Errorf("envelope.interlocks.gases.%s.require_switches_on: %s is toxic (rig.mfcs[%d]): its interlock requires the exhaust scrubber, output %s, on, "+
				"so that the line stays closed while the scrubber is off and the scrubber stays on while %s is in use", gas, gas, i, scrubber, gas))
		}
	}
	return errs
}

// HazardOf returns the hazard class of each gas.
func (r Rig) HazardOf() map[string]rig.Hazard { return r.Layout().HazardOf() }

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
