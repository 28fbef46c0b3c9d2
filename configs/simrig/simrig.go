// Package simrig reads the simulated rig's layout from configs/sim.yaml, the
// embedded default configuration, for the test-support packages of the
// layers below cmd (envelope/envelopetest, drivers/regmap/regmaptest) that
// cannot import the agent's configuration package: the outputs and inputs
// with their channels, safe levels and roles, and the gas lines. The names
// stay in the configuration; this package only decodes them.
package simrig

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/hcp-edge/hcp-edge/configs"
)

// Output is one on/off output of the layout.
type Output struct {
	Name, Channel, Role string
	Safe                bool
}

// Input is one binary input of the layout.
type Input struct {
	Name, Channel, Role string
}

// Line is one gas line: its mass-flow controller and valve.
type Line struct {
	Gas, MFC, UnitID, Valve, Hazard string
	FullScaleSCCM                   float64
}

// Layout is the simulated rig's layout, each list in channel (or
// configuration) order.
type Layout struct {
	Outputs []Output
	Inputs  []Input
	Lines   []Line
}

// Role returns the output or input of a role ("" if none).
func (l Layout) Role(role string) string {
	for _, o := range l.Outputs {
		if o.Role == role {
			return o.Name
		}
	}
	for _, in := range l.Inputs {
		if in.Role == role {
			return in.Name
		}
	}
	return ""
}

// Sim is configs/sim.yaml's layout. It panics if the embedded file does not
// decode (a build of a broken configuration).
var Sim = sync.OnceValue(func() Layout {
	var doc struct {
		Rig struct {
			Outputs map[string]struct {
				Channel, Safe, Role string
			} `yaml:"outputs"`
			Inputs map[string]struct {
				Channel, Role string
			} `yaml:"inputs"`
			MFCs []struct {
				Name, Gas, Hazard, Valve string
				UnitID                   string `yaml:"unit_id"`
				FullScale                string `yaml:"full_scale"`
			} `yaml:"mfcs"`
		} `yaml:"rig"`
	}
	if err := yaml.Unmarshal(configs.SimYAML, &doc); err != nil {
		panic(fmt.Sprintf("simrig: configs/sim.yaml: %v", err))
	}
	var l Layout
	for name, o := range doc.Rig.Outputs {
		l.Outputs = append(l.Outputs, Output{Name: name, Channel: o.Channel, Role: o.Role, Safe: o.Safe == "on"})
	}
	for name, in := range doc.Rig.Inputs {
		l.Inputs = append(l.Inputs, Input{Name: name, Channel: in.Channel, Role: in.Role})
	}
	sort.Slice(l.Outputs, func(i, j int) bool { return l.Outputs[i].Channel < l.Outputs[j].Channel })
	sort.Slice(l.Inputs, func(i, j int) bool { return l.Inputs[i].Channel < l.Inputs[j].Channel })
	for _, m := range doc.Rig.MFCs {
		v, unit, _ := strings.Cut(m.FullScale, " ")
		fs, err := strconv.ParseFloat(v, 64)
		if err != nil || unit != "sccm" {
			panic(fmt.Sprintf("simrig: configs/sim.yaml: %s full scale %q: want <number> sccm", m.Name, m.FullScale))
		}
		l.Lines = append(l.Lines, Line{Gas: m.Gas, MFC: m.Name, UnitID: m.UnitID, Valve: m.Valve, Hazard: m.Hazard, FullScaleSCCM: fs})
	}
	return l
})
