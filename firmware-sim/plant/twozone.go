package plant

import (
	"fmt"
	"math"
)

// The two-zone rig (RigMoS2TwoZone): MoS2 from solid precursors, the most
// common route in the literature (Lee et al., "Synthesis of large-area MoS2
// atomic layers with chemical vapor deposition", Adv. Mater. 24, 2320
// (2012); Najmaei et al., Nat. Mater. 12, 754 (2013)): sulfur powder in an
// upstream zone at about 150–220 °C, MoO3 powder and the substrate in the
// growth zone at 650–850 °C, an Ar carrier taking the sulfur vapour
// downstream. Each zone has its own Eurotherm 3200 (the eurotherm3200
// model), both on one RS-485 line: the sulfur zone's at address 1, the
// growth zone's at 2 (Zones). The growth zone is the plant's furnace (its
// tempC, the tc-open, tc-frozen and thermal-runaway faults); the sulfur
// zone is a smaller, lower-power section of the same tube.
//
//   - Sulfur zone: element and work-zone lags like the furnace's, 575 °C
//     above its surroundings at full power (τ 240 s, element 20 s); its
//     surroundings are the room plus zoneCoupling of the growth zone's
//     excess over it (the hot growth zone warms the upstream zone through
//     the tube: about 83 °C with the growth zone at 750 °C and the sulfur
//     zone's heater off). The coupling is one way: the sulfur zone's few
//     hundred degrees are lost in the growth zone's losses.
//   - Sulfur vapour: SulfurVapourPa, ln p linear in 1/T (Clausius–
//     Clapeyron) between the points of the vapour-pressure table of the
//     CRC Handbook of Chemistry and Physics ("Vapor pressure of the
//     elements", after Alcock, Itkin and Horrigan, Can. Metall. Q. 23, 309
//     (1984)): 1 Pa at 375 K, 10 Pa at 408 K, 100 Pa at 449 K, 1 kPa at
//     508 K, 10 kPa at 591 K, 100 kPa at 717 K (the normal boiling point,
//     444.6 °C); beyond the table the end segments are extended.
//   - Sulfur supply (SulfurSupplySCCM): the Ar passing over the boat leaves
//     it saturated, as through a saturator at about one atmosphere (the
//     source tube's pressure upstream of the pumped growth region): S8 at
//     Q_Ar·p_S/(P − p_S), counted in sulfur atoms (× 8), in sccm. With
//     100 sccm of Ar: 0.95 sccm at 180 °C, 2.2 at 200 °C, 4.7 at 220 °C;
//     0.0018 with the heater off (83 °C): a trace, a few thousandths of
//     a layer in a 30 min hold. The vapour pressure is capped at
//     half an atmosphere (the boat boils dry long before: the envelope
//     keeps the zone below ~250 °C). The supply reaches the growth zone
//     only with the Ar line valve open and Ar flowing.
//   - MoO3 supply and growth: MoO3 sublimes from the growth zone's boat,
//     strongly activated above ~600 °C; the existing MoS2 kinetics
//     (growth.go) already carry it — its smooth onset (nil at and below
//     540 °C, full from 600 °C) and its Arrhenius factor are the Mo supply
//     of the boat at the growth zone's temperature. A sulfur atom counts
//     as one H2S molecule of that calibration: one layer in about 23 min at
//     725 °C with the sulfur zone at 200 °C and 100 sccm of Ar, 16 min at
//     750 °C. The same film, the same Raman.
//   - The boat's poisoning: sulfur reaching the MoO3 while the growth zone
//     is below the onset (the route's classic mistake: sulfur before
//     temperature) sulfurizes the powder in the boat, whose Mo supply then
//     falls as exp(−S_cold/600 sccm·s): ten minutes at 1 sccm leave a
//     third of it. This is the simulator's qualitative rule, not a fit;
//     it is why the recipe brings the sulfur zone up only once the growth
//     zone is at temperature.
//
// The thermal faults (thermal-runaway, tc-open, tc-frozen) act on the growth
// zone without a target (or with target "growth") and on the sulfur zone
// with target "sulfur" (normalizeFault).
//
// Not simulated: the sulfur load running out, sulfur condensing downstream,
// the substrate's position in the growth zone's gradient.
const (
	sulfurGainC    = 575.0 // °C above the surroundings at 100 % output
	sulfurTauS     = 240.0 // sulfur-zone time constant, s
	sulfurElemTauS = 20.0  // sulfur-zone element lag, s
	zoneCoupling   = 0.08  // fraction of the growth zone's excess reaching the sulfur zone
	sulfurPerS8    = 8.0   // atoms per S8 molecule
	sulfurMaxPa    = AtmospherePa / 2
	moo3PoisonS    = 600.0 // sccm·s of cold sulfur that leave 1/e of the boat's supply
)

// sulfurVP is the CRC table (T in K, p in Pa) SulfurVapourPa interpolates.
var sulfurVP = [...][2]float64{{375, 1}, {408, 10}, {449, 100}, {508, 1e3}, {591, 1e4}, {717, 1e5}}

// SulfurVapourPa is the vapour pressure of sulfur at tempC, Pa.
func SulfurVapourPa(tempC float64) float64 {
	tk := tempC + 273.15
	i := 1
	for i < len(sulfurVP)-1 && tk > sulfurVP[i][0] {
		i++
	}
	a, b := sulfurVP[i-1], sulfurVP[i]
	slope := math.Log(b[1]/a[1]) / (1/a[0] - 1/b[0])
	return a[1] * math.Exp(slope*(1/a[0]-1/tk))
}

// SulfurSupplySCCM is the sulfur, in sccm of atoms, an Ar carrier of arSCCM
// takes downstream from a sulfur zone at tempC.
func SulfurSupplySCCM(tempC, arSCCM float64) float64 {
	if !(arSCCM > 0) {
		return 0
	}
	ps := math.Min(SulfurVapourPa(tempC), sulfurMaxPa)
	return sulfurPerS8 * arSCCM * ps / (AtmospherePa - ps)
}

// solidSources is the state of the two-zone rig's sources.
type solidSources struct {
	supplySCCM float64 // sulfur reaching the growth zone now, sccm of atoms
	delivered  float64 // sccm·s of sulfur delivered
	poison     float64 // sccm·s of sulfur that reached the boat cold
}

// zoneNames are the two-zone rig's zones, in address order on its line.
var zoneNames = []string{"sulfur", "growth"}

// Zones names the heated zones whose controllers share the rig's RS-485
// line, in address order (the first at unit 1): "sulfur", "growth" on the
// two-zone rig; nil on a rig with one furnace.
func (p *Plant) Zones() []string {
	if p.opts.Rig == RigMoS2TwoZone {
		return zoneNames
	}
	return nil
}

// zone is the zone of index i of Zones (nil when none).
func (p *Plant) zone(i int) *thermalZone {
	if p.opts.Rig != RigMoS2TwoZone {
		return nil
	}
	switch i {
	case 0:
		return &p.sulfur
	case 1:
		return &p.thermalZone
	}
	return nil
}

// ZoneDevice is the device name of the controller of zone i of Zones
// ("furnace-sulfur", "furnace-growth"): the write log's device and the
// silent and corrupt faults' target. "" when there is no such zone.
func (p *Plant) ZoneDevice(i int) string {
	if z := p.zone(i); z != nil {
		return z.dev
	}
	return ""
}

// ZoneRead is EurothermRead on the controller of zone i of Zones;
// ErrIllegalAddress when there is no such zone.
func (p *Plant) ZoneRead(i int, addr int, dst []uint16) error {
	z := p.zone(i)
	if z == nil {
		return ErrIllegalAddress
	}
	return p.eurothermRead(z, addr, dst)
}

// ZoneWrite is EurothermWrite on the controller of zone i of Zones (the
// write log's device is ZoneDevice); ErrIllegalAddress when there is no
// such zone.
func (p *Plant) ZoneWrite(i int, via string, addr int, vals []uint16) error {
	z := p.zone(i)
	if z == nil {
		return ErrIllegalAddress
	}
	return p.eurothermWrite(z, via, addr, vals)
}

// ZoneControl is zone i's 3200 in engineering units, for an in-process
// controller that needs no register map (the preview's, in
// cmd/hcp-edge/internal/preview): Zone reads and sets it.
type ZoneControl struct {
	_                [0]func() // not comparable: no equality function in the binary
	PVC              float64   // the process value, NaN while the thermocouple is open (sensor break)
	WorkingSetpointC float64
	OutputPct        float64 // the working output the loop asks for
	SetpointC        float64 // the comms setpoint (Rm.SP)
	RateCPerMin      float64 // the setpoint rate limit (SP.RAT), 0: none
	OutputHighPct    float64 // the output high limit (OP.HI): 0 keeps the heater off
}

// Zone reads zone i's controller. With set, it first sets it as its
// driver leaves it: automatic control (bumpless, as the 3200 leaving
// manual) on the comms setpoint, at set's SetpointC, RateCPerMin and
// OutputHighPct (its other fields are not written); a value outside the
// instrument's ranges is ErrIllegalValue and changes nothing (nor is it in
// the write log). No such zone: ErrIllegalAddress.
func (p *Plant) Zone(i int, set *ZoneControl) (ZoneControl, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		p.catchUpLocked()
	}
	z := p.zone(i)
	if z == nil {
		return ZoneControl{}, ErrIllegalAddress
	}
	e := &z.euro
	per := e.cfg.RampUnits.perMinute()
	c := ZoneControl{PVC: z.pvC, WorkingSetpointC: z.wsp, OutputPct: e.wrkOP, SetpointC: e.rmSP, RateCPerMin: e.spRate * per,
		OutputHighPct: e.opHi}
	if set != nil {
		c.SetpointC, c.RateCPerMin, c.OutputHighPct = set.SetpointC, set.RateCPerMin, set.OutputHighPct
		rate := c.RateCPerMin / per
		if !(c.SetpointC >= euroRangeLoC && c.SetpointC <= euroRangeHiC && rate >= 0 && rate <= euroSPRateMax &&
			c.OutputHighPct >= e.opLo && c.OutputHighPct <= euroOutputMax) {
			return c, ErrIllegalValue
		}
		if e.manual {
			z.integ = e.wrkOP - pidKp*(z.wsp-z.pvC)
		}
		e.manual, e.remote, e.rmSP, e.spRate, e.opHi = false, true, c.SetpointC, rate, c.OutputHighPct
	}
	if p.tcOpenLocked(z) {
		c.PVC = math.NaN()
	}
	return c, nil
}

// ZoneTemperature is the true temperature of zone i of Zones, °C; false
// when there is no such zone.
func (p *Plant) ZoneTemperature(i int) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		p.catchUpLocked()
	}
	if z := p.zone(i); z != nil {
		return z.tempC, true
	}
	return 0, false
}

// SulfurSupply is the sulfur reaching the growth zone now, sccm of atoms
// (0 on a rig without a sulfur zone).
func (p *Plant) SulfurSupply() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		p.catchUpLocked()
	}
	return p.solid.supplySCCM
}

// stepSulfurZoneLocked heats the sulfur zone for h s: its own 3200's loop,
// through the same relay as the furnace's heater, in surroundings warmed
// by the growth zone.
func (p *Plant) stepSulfurZoneLocked(h float64) {
	z := &p.sulfur
	u := p.stepEurothermLocked(z, h)
	if p.relay && p.faultActiveLocked(FaultThermalRunaway, z.fault) {
		u = 100
	}
	if !p.relay {
		u = 0
	}
	z.heat(u, sulfurGainC, AmbientC+zoneCoupling*(p.tempC-AmbientC), sulfurElemTauS, sulfurTauS, h)
}

// stepSolidLocked grows the boat's material for h s from the sulfur the Ar
// carries from the sulfur zone.
func (p *Plant) stepSolidLocked(h float64) {
	s := &p.solid
	s.supplySCCM = SulfurSupplySCCM(p.sulfur.tempC, p.chamberInflowSCCMLocked(gasAr))
	if s.supplySCCM <= 0 {
		return
	}
	s.delivered += s.supplySCCM * h
	m, _ := p.precursor.Material() // validated by New and SetPrecursor
	r := MaterialGrowthRate(m, p.tempC, s.supplySCCM)
	if r <= 0 {
		s.poison += s.supplySCCM * h
		return
	}
	p.film.add(m, r*math.Exp(-s.poison/moo3PoisonS)*h)
}

// ZoneSnapshot is one heated zone of a rig with several.
type ZoneSnapshot struct {
	Device           string             `json:"device"`
	Unit             int                `json:"unit"` // its address on the line
	TemperatureC     float64            `json:"temperature_c"`
	PVC              *float64           `json:"pv_c"` // null while the thermocouple is open
	WorkingSetpointC float64            `json:"working_setpoint_c"`
	OutputPct        float64            `json:"output_pct"`
	Eurotherm        *EurothermSnapshot `json:"eurotherm"`
}

// SolidSnapshot is the two-zone rig's sources.
type SolidSnapshot struct {
	// SulfurVapourPa is the sulfur's vapour pressure at the sulfur zone's
	// temperature, SupplySCCM the sulfur (atoms) reaching the growth zone
	// now, DeliveredSCCMs the sccm·s delivered so far.
	SulfurVapourPa float64 `json:"sulfur_vapour_pa"`
	SupplySCCM     float64 `json:"sulfur_supply_sccm"`
	DeliveredSCCMs float64 `json:"sulfur_delivered_sccm_s"`
	// MoO3Supply is the fraction of the boat's Mo supply left by the
	// sulfur that reached it cold (1: none did).
	MoO3Supply float64 `json:"moo3_supply"`
}

// zonesSnapshotLocked fills s's Zones and Solid on the two-zone rig.
func (p *Plant) zonesSnapshotLocked(s *Snapshot) {
	if p.opts.Rig != RigMoS2TwoZone {
		return
	}
	s.Zones = map[string]ZoneSnapshot{}
	for i, n := range zoneNames {
		z := p.zone(i)
		zs := ZoneSnapshot{Device: z.dev, Unit: i + 1, TemperatureC: z.tempC, WorkingSetpointC: z.wsp,
			OutputPct: z.outPct, Eurotherm: p.eurothermSnapshotLocked(z)}
		if !p.tcOpenLocked(z) {
			pv := z.pvC
			zs.PVC = &pv
		}
		s.Zones[n] = zs
	}
	s.Solid = &SolidSnapshot{SulfurVapourPa: SulfurVapourPa(p.sulfur.tempC), SupplySCCM: p.solid.supplySCCM,
		DeliveredSCCMs: p.solid.delivered, MoO3Supply: math.Exp(-p.solid.poison / moo3PoisonS)}
}

// zonesSummary is the zones' part of rig-sim status's growth line.
func (s Snapshot) zonesSummary() string {
	if s.Solid == nil {
		return ""
	}
	return fmt.Sprintf(", sulfur zone %.1f °C (vapour %.3g Pa, supply %.3g sccm, delivered %.0f sccm·s), growth zone %.1f °C, MoO3 supply %.3f",
		s.Zones["sulfur"].TemperatureC, s.Solid.SulfurVapourPa, s.Solid.SupplySCCM, s.Solid.DeliveredSCCMs,
		s.Zones["growth"].TemperatureC, s.Solid.MoO3Supply)
}
