package envelope

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"hcp-edge/device"
)

// Compile validates cfg against the rig and returns the envelope. It refuses
// (with errors joining one *ConfigError per problem, each naming the channel
// or field) a limit outside a device's range, a writable channel left without
// a bounding rule, an unknown channel, unit, gas, switch, input, rule, trip or
// procedure, a trip without a procedure (gas_interlock_lost may go without:
// DefaultGasInterlockLostProcedure), a soft limit, and missing timings.
func Compile(cfg Config, spec RigSpec) (*Envelope, error) {
	c := &compiler{cfg: cfg, spec: spec}
	e := c.compile()
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	e.version = version(cfg, spec) // auditreadings.go
	return e, nil
}

type compiler struct {
	cfg  Config
	spec RigSpec
	errs []error
}

// fail is not inlined, nor are violation and stale (check.go): a copy at
// each of their hundred call sites, none on the monitor's path, cost the
// armv7 binary 28 kB (docs/FOOTPRINT.md); so are the zone helpers
// (zoneIndex, zoneReading, Action.Zone, ...).
//
//go:noinline
func (c *compiler) fail(path, format string, args ...any) {
	c.errs = append(c.errs, &ConfigError{Path: path, Reason: fmt.Sprintf(format, args...)})
}

// quantity converts q to device units, recording an error at path.
func (c *compiler) quantity(path string, q Quantity, k kind, required bool) (float64, bool) {
	if q.IsZero() {
		if required {
			c.fail(path, "missing (want a %s such as %q)", k, example(k))
		}
		return 0, false
	}
	v, err := q.to(k)
	if err != nil {
		c.fail(path, "%v", err)
		return 0, false
	}
	return v, true
}

func example(k kind) string {
	switch k {
	case kindPressure:
		return "10 mbar"
	case kindFlow:
		return "50 sccm"
	case kindTemperature:
		return "80 celsius"
	}
	return "1 s"
}

func (c *compiler) compile() *Envelope {
	cfg, spec := c.cfg, c.spec
	e := &Envelope{
		cfg: cfg, spec: spec, limits: map[string]*limit{}, gasRules: map[string]*gasRule{},
		requiredBy: map[string][]string{}, prohibited: map[Rule]bool{}, procedures: map[Trip]Procedure{},
		unrestricted: map[string]string{}, gases: map[string]GasSpec{}, gasOfValve: map[string]string{},
		switches: map[string]SwitchSpec{}, inputSet: map[string]bool{}, inputs: cfg.Inputs,
	}
	c.checkSpec(e)

	// Timing.
	e.maxAge = time.Duration(cfg.MaxReadingAge)
	if e.maxAge <= 0 {
		c.fail("max_reading_age", "must be positive (e.g. \"2s\")")
	}
	e.commsTimeout = time.Duration(cfg.CommsTimeout)
	if e.commsTimeout <= 0 {
		c.fail("comms_timeout", "must be positive (e.g. \"3s\")")
	}
	if v, ok := c.quantity("flow_on_threshold", cfg.FlowOnThreshold, kindFlow, true); ok {
		if v <= 0 {
			c.fail("flow_on_threshold", "must be positive")
		}
		e.flowOn = device.Flow(v)
	}

	c.parameters(e)
	c.interlocks(e)
	c.prohibitedActions(e)
	c.procedures(e)
	c.inputsAndUnrestricted(e)
	c.heldLines(e)
	c.coverage(e)
	return e
}

// maxLines bounds the rig's gas lines: EvaluateTrips, which runs at every
// poll, keeps one bit per line in a word.
const maxLines = 64

func (c *compiler) checkSpec(e *Envelope) {
	if len(c.spec.Gases) > maxLines {
		c.fail("rig.gases", "%d gas lines: at most %d", len(c.spec.Gases), maxLines)
	}
	for _, g := range c.spec.Gases {
		if _, dup := e.gases[g.Gas]; dup || g.Gas == "" {
			c.fail("rig.gases", "gas %q empty or declared twice", g.Gas)
		}
		e.gases[g.Gas] = g
		if g.FullScale <= 0 {
			c.fail("rig.gases."+g.Gas, "full scale must be positive")
		}
		e.gasOfValve[g.Valve] = g.Gas
	}
	for _, s := range c.spec.Switches {
		if _, dup := e.switches[s.Name]; dup || s.Name == "" {
			c.fail("rig.switches", "switch %q empty or declared twice", s.Name)
		}
		e.switches[s.Name] = s
	}
	for _, g := range c.spec.Gases {
		if sw, ok := e.switches[g.Valve]; !ok || sw.InterlockOwned {
			c.fail("rig.gases."+g.Gas, "line valve %q is not a declared switch", g.Valve)
		}
	}
	for _, in := range c.spec.Inputs {
		e.inputSet[in] = true
	}
	if c.spec.Furnace.SetpointMax <= c.spec.Furnace.SetpointMin || c.spec.Gauge.Max <= c.spec.Gauge.Min {
		c.fail("rig", "furnace setpoint range and gauge range must be non-empty")
	}
	c.checkZones(e)
}

// zoneNameReserved are the first parts of the channels that are not a
// heated zone's: a zone of one of these names would share their channels.
var zoneNameReserved = []string{"flow", "switch", "input", "chamber", "spectrometer", "channel", "rig"}

// checkZones compiles the rig's heated zones: each named, once, with a
// name that is not another channel's first part (nor holds a dot), its
// setpoint range non-empty; the first zone's range is RigSpec.Furnace.
func (c *compiler) checkZones(e *Envelope) {
	zs := c.spec.ZoneList()
	if len(c.spec.Zones) > 0 && c.spec.Zones[0].FurnaceSpec != c.spec.Furnace {
		c.fail("rig.zones", "the first zone's range (%s) is not RigSpec.Furnace", c.spec.Zones[0].Name)
	}
	for _, z := range zs {
		if z.Name == "" || strings.Contains(z.Name, ".") || slices.Contains(zoneNameReserved, z.Name) || e.zoneIndex(z.Name) >= 0 {
			c.fail("rig.zones", "zone %q: empty, declared twice, holding a dot or named %v", z.Name, zoneNameReserved)
		}
		if z.SetpointMax <= z.SetpointMin {
			c.fail("rig.zones."+z.Name, "the setpoint range must be non-empty")
		}
		e.zones = append(e.zones, zone{name: z.Name, temperature: ZoneChannel(z.Name, ZoneTemperature), spec: z.FurnaceSpec})
	}
}

// zoneIndex is the index in e.zones of the zone named name, or -1.
//
//go:noinline
func (e *Envelope) zoneIndex(name string) int {
	for i := range e.zones {
		if e.zones[i].name == name {
			return i
		}
	}
	return -1
}

// ZoneReading returns the reading of zone's controller in r: Furnace for
// the rig's first zone, Zones[zone] for another; ok is false for a zone
// the rig does not have.
func (e *Envelope) ZoneReading(r Readings, zone string) (st device.FurnaceStatus, ok bool) {
	i := e.zoneIndex(zone)
	if i < 0 {
		return st, false
	}
	return e.zoneReading(r, i), true
}

// zoneReading is the reading of the i-th zone's controller in r.
//
//go:noinline
func (e *Envelope) zoneReading(r Readings, i int) device.FurnaceStatus {
	if i == 0 {
		return r.Furnace
	}
	return r.Zones[e.zones[i].name]
}

// unknownZone reports a channel under path whose first part names no
// heated zone of the rig while its second is a zone's quantity
// (sulfur.setpoint on a rig without a zone sulfur): a *ConfigError that
// wraps ErrUnknownZone.
func (c *compiler) unknownZone(path, channel string) bool {
	zn, what, found := strings.Cut(channel, ".")
	switch what {
	case ZoneSetpoint, ZoneRampRate, ZoneHeater, ZoneTemperature:
	default:
		return false
	}
	if !found || slices.Contains(c.spec.ZoneNames(), zn) || slices.Contains(zoneNameReserved, zn) {
		return false // a zone's channel, or another's (flow.setpoint: a gas named setpoint)
	}
	c.noZone(path, zn)
	return true
}

// noZone records that path names zn, a heated zone the rig does not have.
//
//go:noinline
func (c *compiler) noZone(path, zn string) {
	c.errs = append(c.errs, &ConfigError{Path: path, Err: ErrUnknownZone,
		Reason: fmt.Sprintf("the rig has no heated zone %q (zones: %s)", zn, strings.Join(c.spec.ZoneNames(), ", "))})
}
