package rigbuild

import (
	"fmt"
	"strings"
	"testing"

	"hcp-edge/configs"
	"hcp-edge/device/rig"
)

// simConfig is configs/sim.yaml's rig section, edited.
func simConfig(t *testing.T, edit func(*rig.Config)) rig.Config {
	t.Helper()
	t.Setenv("HCP_RIG_SIM_DIR", "/run/test-sim")
	c, err := rig.Parse(configs.SimYAML)
	if err != nil {
		t.Fatal(err)
	}
	edit(&c)
	return c
}

// problems runs Check and returns its problems, one a line.
func problems(t *testing.T, c rig.Config) string {
	t.Helper()
	ps, err := LoadProfiles(c.ProfilesDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	Check(c, ps, nil, func(key, format string, a ...any) { out = append(out, "rig."+key+": "+fmt.Sprintf(format, a...)) })
	return strings.Join(out, "\n")
}

func TestCheckSimClean(t *testing.T) {
	if p := problems(t, simConfig(t, func(*rig.Config) {})); p != "" {
		t.Fatalf("configs/sim.yaml: %s", p)
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*rig.Config)
		want string
	}{
		{"a channel the module lacks", func(c *rig.Config) {
			o := c.Outputs[c.Role(rig.RolePump)]
			o.Channel = "coil 99"
			c.Outputs[c.Role(rig.RolePump)] = o
		}, "profile hcp-sim-dio has no output channel \"coil 99\""},
		{"a profile of the wrong kind", func(c *rig.Config) { c.Furnace.Profile = c.DIO.Profile }, "rig.furnace.profile: profile \"hcp-sim-dio\" is a io_module, not a temperature_controller"},
		{"a gauge channel the controller lacks", func(c *rig.Config) { c.Gauge.Channel = "nope" }, "rig.gauge.channel: profile hcp-sim-gauge has no gauge \"nope\""},
		{"a bad serial mode", func(c *rig.Config) {
			b := c.ModbusBuses[c.Furnace.Bus]
			b.Mode = "19200 9Q1"
			c.ModbusBuses[c.Furnace.Bus] = b
		}, ".mode:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if p := problems(t, simConfig(t, tt.edit)); !strings.Contains(p, tt.want) {
				t.Fatalf("problems:\n%s\nwant one mentioning %q", p, tt.want)
			}
		})
	}
}
