// Package simrig is test support: the simulated rig of configs/sim.yaml
// (the embedded default configuration) as the product reads it, for the
// tests of every layer: its rig model (device/rig), the envelope's spec
// derived from it and its profiles (envelope.SpecOf over rigbuild.FactsOf,
// the derivation the agent uses), and its drivers against a running
// rig-sim (drivers/rigbuild). Nothing here is written by hand: a change to
// sim.yaml or to a shipped profile is seen by every test.
//
// It lives in cmd/ (cmd/hiltest) because it reads both drivers/ (the
// profiles) and envelope/, which may not import each other; only tests and
// test harnesses (cmd/hiltest/hilbench) import it.
package simrig

import (
	"fmt"
	"sync"

	"hcp-edge/configs"
	"hcp-edge/device/rig"
	"hcp-edge/drivers/rigbuild"
	"hcp-edge/envelope"
)

// loaded is configs/sim.yaml's rig section and profiles, read once.
var loaded = sync.OnceValues(func() (rig.Config, rigbuild.Profiles) {
	c, err := rig.Parse(configs.SimYAML)
	if err != nil {
		panic(fmt.Sprintf("simrig: configs/sim.yaml: %v", err))
	}
	ps, err := rigbuild.LoadProfiles(c.ProfilesDir)
	if err != nil {
		panic(fmt.Sprintf("simrig: the shipped profiles: %v", err))
	}
	return c, ps
})

// Config is configs/sim.yaml's rig section, its paths expanded with the
// environment of the first call (HCP_RIG_SIM_DIR). It panics if the
// embedded file does not load (a build of a broken configuration).
func Config() rig.Config {
	c, _ := loaded()
	return c
}

// Layout is configs/sim.yaml's rig model.
func Layout() rig.Layout { return Config().Layout() }

// Spec is the envelope's spec of configs/sim.yaml's rig, as the agent
// derives it (rigconfig.Spec). It panics if it cannot be derived.
func Spec() envelope.RigSpec {
	c, ps := loaded()
	f, err := rigbuild.FactsOf(c, ps)
	if err != nil {
		panic(fmt.Sprintf("simrig: %v", err))
	}
	s, err := envelope.SpecOf(c.Layout(), f)
	if err != nil {
		panic(fmt.Sprintf("simrig: %v", err))
	}
	return s
}

// Build builds the drivers of configs/sim.yaml's rig against a rig-sim
// running in simDir (its sim_dir: the ptys, the Modbus sockets and the
// control socket), as rigbuild.Build does; it performs no write. The
// caller closes the instruments.
func Build(simDir string) (*rigbuild.Instruments, error) {
	_, ps := loaded()
	c, err := rig.Decode(configs.SimYAML)
	if err != nil {
		return nil, err
	}
	c.ExpandAt(simDir)
	return rigbuild.Build(c, ps, nil)
}
