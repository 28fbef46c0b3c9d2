package plant

import (
	"fmt"
	"maps"
	"math"
)

// Eurotherm 3200 series parameter addresses (configs/manuals/eurotherm-3200.md):
// the 16-bit region; the same analogue parameters are IEEE floats at
// EuroFloatBase + 2 × address.
const (
	EuroPV           = 1   // PV.IN, process value, °C × 10
	EuroTargetSP     = 2   // TG.SP, target setpoint (limited write endurance)
	EuroManualOP     = 3   // MAN.OP, manual output, % × 10
	EuroWorkingOP    = 4   // WRK.OP, working output, % × 10 (read only)
	EuroWorkingSP    = 5   // WKG.SP, working setpoint (read only)
	EuroRangeLo      = 11  // RNG.LO (read only here)
	EuroRangeHi      = 12  // RNG.HI (read only here)
	EuroAlarm1       = 13  // A1 threshold (full-scale high alarm)
	EuroCommsSP      = 26  // Rm.SP, remote (comms) setpoint
	EuroOPHigh       = 30  // OP.HI, output high limit
	EuroOPLow        = 31  // OP.LO, output low limit
	EuroSPRate       = 35  // SP.RAT, setpoint rate limit, (°C/min) × 10; 0 = none
	EuroStatus       = 75  // StAt, instrument status bitmap
	EuroStatusInv    = 76  // inverted instrument status
	EuroAutoManual   = 273 // A-M: 0 auto, 1 manual
	EuroRemoteSelect = 276 // 0 local (TG.SP), 1 remote (Rm.SP)
	EuroInstIdent    = 122 // instrument identity (read only)
	EuroDecimalPoint = 525 // dEC.P, display resolution: 0 nnnn, 1 nnn.n, 2 nn.nn (configuration, read only here)
	EuroRampUnits    = 531 // rmP.U, ramp units of SP.RAT: 0 per minute, 1 per hour, 2 per second (read only here)

	// EuroIdent is what the simulated 3216 answers at EuroInstIdent: a
	// constructed value (the manual text available did not give the
	// 3216's code), so a profile must not require it.
	EuroIdent = 0x3216

	// EuroFloatBase is the start of the IEEE float region.
	EuroFloatBase = 0x8000

	// EuroPVBreak is what PV reads in the 16-bit region during sensor break.
	EuroPVBreak = 0x8000
)

// Instrument status bits (address 75) the model sets.
const (
	EuroStAlarm1      = 1 << 0
	EuroStManual      = 1 << 4
	EuroStSensorBreak = 1 << 5
	EuroStRampRunning = 1 << 13
)

// Ranges of the simulated instrument, in engineering units.
const (
	euroRangeLoC   = 0.0
	euroRangeHiC   = 1200.0
	euroAlarmMaxC  = 1300.0
	euroSPRateMax  = 3000.0 // °C/min
	euroOutputMax  = 100.0  // %
	euroDefaultSPC = AmbientC
)

// EuroRampUnit is a ramp-units (rmP.U) setting of the 3200: the unit of
// SP.RAT.
type EuroRampUnit string

// Ramp units, as rig-sim's --furnace-ramp-units names them, with the raw
// value the instrument reports at EuroRampUnits.
const (
	EuroPerMinute EuroRampUnit = "min"  // 0
	EuroPerHour   EuroRampUnit = "hour" // 1
	EuroPerSecond EuroRampUnit = "sec"  // 2
)

// raw is the value address 531 reports.
func (u EuroRampUnit) raw() uint16 {
	switch u {
	case EuroPerHour:
		return 1
	case EuroPerSecond:
		return 2
	}
	return 0
}

// perMinute is how many °C/min one unit of SP.RAT is.
func (u EuroRampUnit) perMinute() float64 {
	switch u {
	case EuroPerHour:
		return 1.0 / 60
	case EuroPerSecond:
		return 60
	}
	return 1
}

// EurothermConfig is how the simulated 3216 was configured on its front
// panel before it was connected (rig-sim --furnace-decimals,
// --furnace-ramp-units).
type EurothermConfig struct {
	// Decimals is dEC.P: 0, 1 or 2 decimal places of temperatures in the
	// 16-bit region (the float region does not depend on it).
	Decimals int
	// RampUnits is rmP.U, the unit of SP.RAT ("" is per minute).
	RampUnits EuroRampUnit
	// RemoteSP: the unit was left with the remote (comms) setpoint
	// selected (276 = 1) and in auto (273 = 0); false: the power-on state
	// of configs/manuals/eurotherm-3200.md, local setpoint and manual.
	RemoteSP bool
}

// DefaultEurothermConfig is the configuration rig-sim's eurotherm3200 has
// by default: one decimal place, ramp per minute.
func DefaultEurothermConfig() EurothermConfig {
	return EurothermConfig{Decimals: 1, RampUnits: EuroPerMinute}
}

// Validate refuses a configuration the instrument cannot have.
func (c EurothermConfig) Validate() error {
	if c.Decimals < 0 || c.Decimals > 2 {
		return fmt.Errorf("plant: eurotherm decimals %d (0, 1 or 2)", c.Decimals)
	}
	switch c.RampUnits {
	case "", EuroPerMinute, EuroPerHour, EuroPerSecond:
		return nil
	}
	return fmt.Errorf("plant: eurotherm ramp units %q (sec, min or hour)", c.RampUnits)
}

// euroNV are the parameters the 3200 keeps in non-volatile memory that a
// host may write over comms (the list: TG.SP, OP.HI, A-M, remote
// select): each accepted write is counted.
var euroNV = map[int]bool{EuroTargetSP: true, EuroOPHigh: true, EuroAutoManual: true, EuroRemoteSelect: true}

// eurotherm is the state of the Eurotherm 3200 model's controller (its
// working setpoint is its thermalZone's wsp, its integrator the zone's integ).
type eurotherm struct {
	cfg        EurothermConfig
	nvWrites   map[string]int // accepted writes of each euroNV parameter
	tgSP, rmSP float64        // °C
	remote     bool           // 276
	manual     bool           // 273
	manOP      float64        // %
	opHi, opLo float64        // %
	spRate     float64        // °C/min
	a1         float64        // °C
	wrkOP      float64        // % the controller asks for (not what the relay lets through)
}

// newEurotherm is the power-on state of configs/manuals/eurotherm-3200.md:
// manual with output 0.
func newEurotherm(cfg EurothermConfig) eurotherm {
	if cfg.RampUnits == "" {
		cfg.RampUnits = EuroPerMinute
	}
	return eurotherm{
		cfg: cfg, nvWrites: map[string]int{},
		tgSP: euroDefaultSPC, rmSP: euroDefaultSPC, manual: !cfg.RemoteSP, remote: cfg.RemoteSP,
		opHi: euroOutputMax, a1: 1250,
	}
}

func (e *eurotherm) selectedSP() float64 {
	if e.remote {
		return e.rmSP
	}
	return e.tgSP
}

// stepEurothermLocked runs the loop of the 3200 on zone z for h s of sim
// time and returns the output it drives (before the relay).
func (p *Plant) stepEurothermLocked(z *thermalZone, h float64) float64 {
	e := &z.euro
	z.ramp(e.selectedSP(), e.spRate*e.cfg.RampUnits.perMinute(), h)
	tcOpen := p.sensorLocked(z)
	switch {
	case e.manual:
		e.wrkOP = math.Max(e.opLo, math.Min(e.opHi, e.manOP))
	case tcOpen:
		e.wrkOP = 0 // the sensor-break output value
		z.integ = 0
	default:
		e.wrkOP = z.pi(h, e.opLo, e.opHi)
	}
	return e.wrkOP
}

// euroParam describes one parameter of the map.
type euroParam struct {
	name     string // write-log channel
	analogue bool   // scaled in the 16-bit region, a float in the float region
	writable bool
	// temp: a temperature, scaled by 10^dEC.P in the 16-bit region; the
	// other analogue parameters (outputs, SP.RAT) are always × 10.
	temp bool
}

var euroParams = map[int]euroParam{
	EuroPV:           {"pv", true, false, true},
	EuroTargetSP:     {"target_setpoint", true, true, true},
	EuroManualOP:     {"manual_output", true, true, false},
	EuroWorkingOP:    {"working_output", true, false, false},
	EuroWorkingSP:    {"working_setpoint", true, false, true},
	EuroRangeLo:      {"range_low", true, false, true},
	EuroRangeHi:      {"range_high", true, false, true},
	EuroAlarm1:       {"alarm1_threshold", true, true, true},
	EuroCommsSP:      {"comms_setpoint", true, true, true},
	EuroOPHigh:       {"output_high_limit", true, true, false},
	EuroOPLow:        {"output_low_limit", true, true, false},
	EuroSPRate:       {"setpoint_rate", true, true, false},
	EuroStatus:       {"status", false, false, false},
	EuroStatusInv:    {"status_inverted", false, false, false},
	EuroAutoManual:   {"auto_manual", false, true, false},
	EuroRemoteSelect: {"remote_select", false, true, false},
	EuroInstIdent:    {"instrument_ident", false, false, false},
	EuroDecimalPoint: {"decimal_point", false, false, false},
	EuroRampUnits:    {"ramp_units", false, false, false},
}

// EuroChannel is the write-log channel of a 16-bit address of the Eurotherm
// map ("addr:N" for an address not in it).
func EuroChannel(addr int) string {
	if prm, ok := euroParams[addr]; ok {
		return prm.name
	}
	return fmt.Sprintf("addr:%d", addr)
}

// euroAnalogueLocked is an analogue parameter in engineering units (NaN for
// PV during sensor break).
func (p *Plant) euroAnalogueLocked(z *thermalZone, addr int) float64 {
	e := &z.euro
	switch addr {
	case EuroPV:
		if p.tcOpenLocked(z) {
			return math.NaN()
		}
		return z.pvC
	case EuroTargetSP:
		return e.tgSP
	case EuroManualOP:
		return e.manOP
	case EuroWorkingOP:
		return e.wrkOP
	case EuroWorkingSP:
		return z.wsp
	case EuroRangeLo:
		return euroRangeLoC
	case EuroRangeHi:
		return euroRangeHiC
	case EuroAlarm1:
		return e.a1
	case EuroCommsSP:
		return e.rmSP
	case EuroOPHigh:
		return e.opHi
	case EuroOPLow:
		return e.opLo
	case EuroSPRate:
		return e.spRate
	}
	return 0
}

func (p *Plant) euroStatusLocked(z *thermalZone) uint16 {
	e := &z.euro
	tcOpen := p.tcOpenLocked(z)
	var s uint16
	if !tcOpen && z.pvC > e.a1 {
		s |= EuroStAlarm1
	}
	if e.manual {
		s |= EuroStManual
	}
	if tcOpen {
		s |= EuroStSensorBreak
	}
	if e.spRate != 0 && math.Abs(z.wsp-e.selectedSP()) > 1e-9 {
		s |= EuroStRampRunning
	}
	return s
}

// euroReg16Locked is the 16-bit register at addr (a mapped address).
func (p *Plant) euroReg16Locked(z *thermalZone, addr int) uint16 {
	switch addr {
	case EuroStatus:
		return p.euroStatusLocked(z)
	case EuroStatusInv:
		return ^p.euroStatusLocked(z)
	case EuroAutoManual:
		return uint16(b2f(z.euro.manual))
	case EuroRemoteSelect:
		return uint16(b2f(z.euro.remote))
	case EuroInstIdent:
		return EuroIdent
	case EuroDecimalPoint:
		return uint16(z.euro.cfg.Decimals)
	case EuroRampUnits:
		return z.euro.cfg.RampUnits.raw()
	}
	v := p.euroAnalogueLocked(z, addr)
	if math.IsNaN(v) {
		return EuroPVBreak
	}
	return uint16(clampInt16(v * z.euro.scale(addr)))
}

// scale is the factor of a parameter in the 16-bit region: 10^dEC.P for a
// temperature, 10 for the others (outputs and SP.RAT keep one decimal).
func (e *eurotherm) scale(addr int) float64 {
	if euroParams[addr].temp {
		return math.Pow10(e.cfg.Decimals)
	}
	return 10
}

// euroFloatParam maps a float-region register to its parameter and half
// (0 high word, 1 low word); ok is false outside the region's map.
func euroFloatParam(reg int) (addr, half int, ok bool) {
	if reg < EuroFloatBase {
		return 0, 0, false
	}
	off := reg - EuroFloatBase
	addr, half = off/2, off%2
	prm, ok := euroParams[addr]
	return addr, half, ok && prm.analogue
}

// EurothermRead fills dst with the registers from addr, in the 16-bit region
// or the float region (FC 03 / 04). ErrIllegalAddress when any address is not
// in the map, or a float request does not cover whole parameters.
func (p *Plant) EurothermRead(addr int, dst []uint16) error {
	return p.eurothermRead(&p.thermalZone, addr, dst)
}

func (p *Plant) eurothermRead(z *thermalZone, addr int, dst []uint16) error {
	float := addr >= EuroFloatBase
	if float && ((addr-EuroFloatBase)%2 != 0 || len(dst)%2 != 0) {
		return ErrIllegalAddress
	}
	for i := range dst {
		if float {
			if _, _, ok := euroFloatParam(addr + i); !ok {
				return ErrIllegalAddress
			}
		} else if _, ok := euroParams[addr+i]; !ok {
			return ErrIllegalAddress
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range dst {
		if !float {
			dst[i] = p.euroReg16Locked(z, addr+i)
			continue
		}
		a, half, _ := euroFloatParam(addr + i)
		b := math.Float32bits(float32(p.euroAnalogueLocked(z, a)))
		if half == 0 {
			dst[i] = uint16(b >> 16)
		} else {
			dst[i] = uint16(b)
		}
	}
	return nil
}

// euroWrite is one parameter of a write request.
type euroWrite struct {
	addr  int     // 16-bit address of the parameter (or the raw register when unmapped)
	value float64 // engineering units (raw for enumerations)
}

// EurothermWrite writes vals from addr (FC 06 / 16), in the 16-bit or the
// float region, all or nothing: ErrIllegalAddress for an address not in the
// map or read-only, or a float write not covering whole parameters;
// ErrIllegalValue for a value outside its range. Every parameter written is
// recorded in the write log (device furnace, via as given, channel
// EuroChannel, value in engineering units), accepted or not.
func (p *Plant) EurothermWrite(via string, addr int, vals []uint16) error {
	return p.eurothermWrite(&p.thermalZone, via, addr, vals)
}

func (p *Plant) eurothermWrite(z *thermalZone, via string, addr int, vals []uint16) error {
	p.mu.Lock()
	ws, err := euroDecode(addr, vals, z.euro.cfg.Decimals)
	if err == nil {
		err = euroApply(z, ws)
	}
	if err == nil {
		for _, w := range ws {
			if euroNV[w.addr] {
				z.euro.nvWrites[EuroChannel(w.addr)]++
			}
		}
	}
	sim := p.sim
	p.mu.Unlock()
	for _, w := range ws {
		p.recordWrite(z.dev, via, EuroChannel(w.addr), w.value, err == nil, sim)
	}
	return err
}

// euroDecode turns a write request into parameter writes; it returns them
// (for the write log) with ErrIllegalAddress when any is not a writable
// parameter of the map.
func euroDecode(addr int, vals []uint16, decimals int) ([]euroWrite, error) {
	var ws []euroWrite
	var err error
	if addr < EuroFloatBase {
		for i, v := range vals {
			a := addr + i
			prm, ok := euroParams[a]
			w := euroWrite{addr: a, value: float64(v)}
			if ok && prm.analogue {
				w.value = float64(int16(v)) / 10
				if prm.temp {
					w.value = float64(int16(v)) / math.Pow10(decimals)
				}
			}
			if !ok || !prm.writable {
				err = ErrIllegalAddress
			}
			ws = append(ws, w)
		}
		return ws, err
	}
	if (addr-EuroFloatBase)%2 != 0 || len(vals)%2 != 0 {
		for i, v := range vals {
			ws = append(ws, euroWrite{addr: addr + i, value: float64(v)})
		}
		return ws, ErrIllegalAddress
	}
	for i := 0; i < len(vals); i += 2 {
		a, _, ok := euroFloatParam(addr + i)
		f := math.Float32frombits(uint32(vals[i])<<16 | uint32(vals[i+1]))
		w := euroWrite{addr: a, value: float64(f)}
		if !ok {
			w.addr = addr + i // logged as addr:N
		}
		if !ok || !euroParams[a].writable {
			err = ErrIllegalAddress
		}
		ws = append(ws, w)
	}
	return ws, err
}

// euroApply applies the writes to a copy of z's controller, checks every
// range, then commits (with the bumpless transfers of a mode change).
func euroApply(z *thermalZone, ws []euroWrite) error {
	old := z.euro
	c := old
	for _, w := range ws {
		v := w.value
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ErrIllegalValue
		}
		switch w.addr {
		case EuroTargetSP:
			c.tgSP = v
		case EuroCommsSP:
			c.rmSP = v
		case EuroManualOP:
			c.manOP = v
		case EuroAlarm1:
			c.a1 = v
		case EuroOPHigh:
			c.opHi = v
		case EuroOPLow:
			c.opLo = v
		case EuroSPRate:
			c.spRate = v
		case EuroAutoManual, EuroRemoteSelect:
			if v != 0 && v != 1 {
				return ErrIllegalValue
			}
			if w.addr == EuroAutoManual {
				c.manual = v == 1
			} else {
				c.remote = v == 1
			}
		}
	}
	in := func(v, lo, hi float64) bool { return v >= lo && v <= hi }
	if !in(c.tgSP, euroRangeLoC, euroRangeHiC) || !in(c.rmSP, euroRangeLoC, euroRangeHiC) ||
		!in(c.manOP, 0, euroOutputMax) || !in(c.a1, euroRangeLoC, euroAlarmMaxC) ||
		!in(c.opLo, 0, euroOutputMax) || !in(c.opHi, 0, euroOutputMax) || c.opLo > c.opHi ||
		!in(c.spRate, 0, euroSPRateMax) {
		return ErrIllegalValue
	}
	switch {
	case c.manual && !old.manual:
		// bumpless: the manual output starts where the loop was
		c.manOP = math.Max(0, math.Min(euroOutputMax, old.wrkOP))
	case !c.manual && old.manual:
		// bumpless: the loop starts from the present output
		z.integ = old.wrkOP - pidKp*(z.wsp-z.pvC)
	}
	z.euro = c
	return nil
}

// EurothermSnapshot is the Eurotherm model's parameters in engineering units.
type EurothermSnapshot struct {
	TargetSetpointC  float64 `json:"target_setpoint_c"`
	CommsSetpointC   float64 `json:"comms_setpoint_c"`
	RemoteSelected   bool    `json:"remote_selected"`
	Manual           bool    `json:"manual"`
	ManualOutputPct  float64 `json:"manual_output_pct"`
	WorkingOutputPct float64 `json:"working_output_pct"`
	OutputHighPct    float64 `json:"output_high_pct"`
	OutputLowPct     float64 `json:"output_low_pct"`
	SetpointRate     float64 `json:"setpoint_rate"` // in RampUnits
	RampUnits        string  `json:"ramp_units"`
	Decimals         int     `json:"decimals"`
	// NVWrites counts the accepted writes of each parameter kept in
	// non-volatile memory (target_setpoint, output_high_limit,
	// auto_manual, remote_select).
	NVWrites map[string]int `json:"nv_writes,omitempty"`
	Alarm1C  float64        `json:"alarm1_c"`
	Status   uint16         `json:"status"`
}

func (p *Plant) eurothermSnapshotLocked(z *thermalZone) *EurothermSnapshot {
	e := &z.euro
	return &EurothermSnapshot{
		TargetSetpointC: e.tgSP, CommsSetpointC: e.rmSP, RemoteSelected: e.remote,
		Manual: e.manual, ManualOutputPct: e.manOP, WorkingOutputPct: e.wrkOP,
		OutputHighPct: e.opHi, OutputLowPct: e.opLo, SetpointRate: e.spRate,
		Alarm1C: e.a1, Status: p.euroStatusLocked(z),
		RampUnits: string(e.cfg.RampUnits), Decimals: e.cfg.Decimals,
		NVWrites: maps.Clone(e.nvWrites),
	}
}
