package rigbuild

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.bug.st/serial"

	"hcp-edge/device/rig"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/serialline"
)

// Check reports to bad what only the drivers and the profiles decide about
// r (its structure is rig.Config.Check's), in either shape: every bus's
// serial mode, every device a profile of its kind and family, every output
// and input a channel with that role of its I/O module's profile, every
// full scale one the flow controller's model is made in, every gauge head
// a channel its controller's profile has, and each zone's heater without a
// comms watchdog a relay watchdog. A profile whose own
// file was refused (refused, by ID: RefusedIDs) is no second problem here.
// ps nil: Check loads the profiles (LoadProfiles) and reports their error
// at profiles_dir.
func Check(r rig.Config, ps Profiles, refused map[string]bool, bad rig.Bad) {
	for _, name := range r.BusNames() {
		if b := r.ModbusBuses[name]; b.Mode != "" {
			if _, err := serialline.ParseMode(b.Mode); err != nil {
				bad("modbus_buses."+name+".mode", "%v", err)
			}
		}
	}
	if ps == nil {
		var err error
		if ps, err = LoadProfiles(r.ProfilesDir); err != nil {
			bad("profiles_dir", "%v", err)
		}
	}
	badProfile := func(key, id string, err error) {
		if !refused[id] {
			bad(key, "%v", err)
		}
	}
	for _, z := range r.ZoneEntries() {
		fp, err := ps.Lookup(z.Profile, profile.TemperatureController)
		if err != nil {
			badProfile(z.Key+".profile", z.Profile, err)
		} else if fp.Family != profile.Modbus {
			bad(z.Key+".profile", "profile %q is of the %s family; the furnace is on a Modbus bus", fp.ID, fp.Family)
		} else if fp.Lacking(profile.NoCommsWatchdog) && r.GPIO.RelayWatchdog <= 0 {
			bad(z.Key+".profile", "profile %s has no comms watchdog: a dead agent would leave the heater on; "+
				"name another dead-agent path (rig.gpio.relay_watchdog: the interlock relay held by the agent's heartbeat)", fp.ID)
		}
	}
	modules := map[string]*profile.Profile{}
	for _, m := range r.ModuleEntries() {
		if dp, err := ps.Lookup(m.Profile, profile.IOModule); err != nil {
			badProfile(m.Key+".profile", m.Profile, err)
		} else {
			modules[m.Name] = dp
		}
	}
	for _, name := range r.OutputNames() {
		o := r.Outputs[name]
		if dp := modules[r.ModuleOf(o.Module)]; dp != nil {
			if c, ok := dp.Channel(o.Channel); !ok || c.Role != profile.RoleOutput {
				bad("outputs."+name+".channel", "profile %s has no output channel %q", dp.ID, o.Channel)
			}
		}
	}
	for _, name := range r.InputNames() {
		in := r.Inputs[name]
		if dp := modules[r.ModuleOf(in.Module)]; dp != nil {
			if c, ok := dp.Channel(in.Channel); !ok || c.Role != profile.RoleInput {
				bad("inputs."+name+".channel", "profile %s has no input channel %q", dp.ID, in.Channel)
			}
		}
	}
	for i, m := range r.MFCs {
		key := fmt.Sprintf("mfcs[%d]", i)
		if mp, err := ps.Serial(m.Profile, profile.FlowController, profile.Alicat); err != nil {
			badProfile(key+".profile", m.Profile, err)
		} else if fs, err := rig.ParseFlow(m.FullScale); err == nil && (fs.SCCM() < mp.FullScale[0] || fs.SCCM() > mp.FullScale[1]) {
			bad(key+".full_scale", "%v is outside the full scales profile %s's model is made in (%g..%g sccm)", fs, mp.ID, mp.FullScale[0], mp.FullScale[1])
		}
	}
	for _, g := range r.GaugeEntries() {
		gp, err := ps.Serial(g.Profile, profile.PressureGauge, profile.TPG)
		if err != nil {
			badProfile(g.Key+".profile", g.Profile, err)
			continue
		}
		for _, h := range g.Heads {
			if _, ok := gp.Channel(h.Channel); h.Channel != "" && !ok {
				bad(h.Key+".channel", "profile %s has no gauge %q", gp.ID, h.Channel)
			}
		}
	}
}

// RefusedIDs are the IDs of the profiles whose files err (LoadProfiles's)
// refuses.
func RefusedIDs(err error) map[string]bool {
	out := map[string]bool{}
	for _, p := range ProfileProblems(err) {
		out[strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))] = true
	}
	return out
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

// ModuleOpts is an I/O module's layout for the generic driver: the
// outputs and inputs on the module named module (rig.Config.ModuleOf).
func ModuleOpts(r rig.Config, module string) regmap.ModuleOpts {
	o := regmap.ModuleOpts{Name: module}
	for _, m := range r.ModuleEntries() {
		if m.Name == module {
			o.Unit = m.Unit
		}
	}
	for _, name := range r.OutputNames() {
		if out := r.Outputs[name]; r.ModuleOf(out.Module) == module {
			o.Outputs = append(o.Outputs, regmap.OutputSpec{Name: name, Channel: out.Channel, Safe: out.Safe == "on"})
		}
	}
	for _, name := range r.InputNames() {
		if in := r.Inputs[name]; r.ModuleOf(in.Module) == module {
			o.Inputs = append(o.Inputs, regmap.InputSpec{Name: name, Channel: in.Channel, Invert: in.Invert})
		}
	}
	return o
}

// InputAddresses are the layout's inputs with the address of their channel
// in their I/O module's profile.
func InputAddresses(r rig.Config, ps Profiles) (map[string]int, error) {
	modules := map[string]rig.ModuleEntry{}
	for _, m := range r.ModuleEntries() {
		modules[m.Name] = m
	}
	out := map[string]int{}
	for name, in := range r.Inputs {
		m := modules[r.ModuleOf(in.Module)]
		dp, err := ps.Lookup(m.Profile, profile.IOModule)
		if err != nil {
			return nil, fmt.Errorf("rigconfig: %s: %w", unreachableName(m.Key, m.Name), err)
		}
		ch, ok := dp.Channel(in.Channel)
		if !ok || ch.Address == nil {
			return nil, fmt.Errorf("rigconfig: input %s: profile %s has no channel %q", name, dp.ID, in.Channel)
		}
		out[name] = *ch.Address
	}
	return out, nil
}

// rtuReadChars is what one Modbus RTU read of n registers puts on the wire,
// in characters: the request (unit, function, address, quantity, CRC: 8),
// the reply (unit, function, byte count, 2n, CRC: 5 + 2n) and the silence
// of 3.5 characters the protocol requires before each of the two frames.
func rtuReadChars(n int) float64 { return 8 + 5 + 2*float64(n) + 2*3.5 }

// charBits is one character on the wire: start bit, data bits, parity bit,
// stop bits.
func charBits(m serial.Mode) int {
	bits := 1 + m.DataBits + 1
	if m.Parity != serial.NoParity {
		bits++
	}
	if m.StopBits == serial.TwoStopBits {
		bits++
	}
	return bits
}

// FurnacePollWire is the least time one monitor poll of the heated zones
// takes on the first zone's bus when that bus is a serial (RTU) line: the
// first zone's controller and every other zone's on the same line (the
// monitor polls each zone every furnace_every, one after the other on a
// shared line), the reads each profile's
// map makes of device.FurnaceStatus, character by character at the line's
// speed, without the controller's own response time. ok is false on TCP
// (whose wire time is negligible) and when the layout is invalid (Check
// reports that).
func FurnacePollWire(r rig.Config, ps Profiles) (d time.Duration, reads int, baud int, ok bool) {
	zones := r.ZoneEntries()
	if len(zones) == 0 {
		return 0, 0, 0, false
	}
	z := zones[0] // the zone the envelope drives
	b, found := r.ModbusBuses[z.Bus]
	if !found || b.Transport != rig.TransportRTU {
		return 0, 0, 0, false
	}
	mode, err := serialline.ParseMode(b.Mode)
	if b.Mode == "" || err != nil || mode.BaudRate <= 0 {
		return 0, 0, 0, false
	}
	var chars float64
	for _, zz := range zones { // every zone's controller polled on the first's line shares it
		if zz.Bus != z.Bus {
			continue
		}
		p, found := ps[zz.Profile]
		if !found || p.Family != profile.Modbus || p.Kind != profile.TemperatureController {
			return 0, 0, 0, false
		}
		sizes, err := regmap.StatusReads(p)
		if err != nil {
			return 0, 0, 0, false
		}
		for _, n := range sizes {
			chars += rtuReadChars(n)
		}
		reads += len(sizes)
	}
	secs := chars * float64(charBits(mode)) / float64(mode.BaudRate)
	return time.Duration(secs * float64(time.Second)), reads, mode.BaudRate, true
}
