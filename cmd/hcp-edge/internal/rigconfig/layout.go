package rigconfig

import (
	"fmt"
	"slices"

	"hcp-edge/device/rig"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/rigbuild"
)

// Profiles are instrument profiles by ID (drivers/rigbuild's).
type Profiles = rigbuild.Profiles

// LoadProfiles reads the shipped profiles and the lab's own in dir
// (rigbuild.LoadProfiles).
func LoadProfiles(dir string) (Profiles, error) { return rigbuild.LoadProfiles(dir) }

// ProfileProblems returns the *profile.Problem values in err
// (rigbuild.ProfileProblems).
func ProfileProblems(err error) []*profile.Problem { return rigbuild.ProfileProblems(err) }

// loadProfiles reads the profiles the rig names (once; Parse calls it).
func (r *Rig) loadProfiles() error {
	if r.profiles != nil {
		return nil
	}
	ps, err := rigbuild.LoadProfiles(r.ProfilesDir)
	r.profiles = ps
	r.refused = rigbuild.RefusedIDs(err)
	return err
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

// InputAddresses are the layout's inputs with the address of their channel
// in the I/O module's profile.
func (r Rig) InputAddresses() (map[string]int, error) {
	ps, err := r.Profiles()
	if err != nil {
		return nil, err
	}
	return rigbuild.InputAddresses(r.Config, ps)
}
