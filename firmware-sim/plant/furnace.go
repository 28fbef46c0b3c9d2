package plant

import (
	"fmt"
	"math"
	"time"
)

// Furnace register map sizes and addresses (configs/rig-protocols.md).
const (
	NumInputRegs   = 9
	NumHoldingRegs = 6

	HRSetpoint        = 0
	HRRampRate        = 1
	HRHeaterEnable    = 2
	HRWatchdogTimeout = 3
	HRWatchdogKick    = 4
	HRAlarmLimit      = 5

	IRPV          = 0
	IRWorkingSP   = 1
	IROutputPower = 2
	IRAlarms      = 3
	IRPVFloat     = 4
	IRUptime      = 6
	IRStatus      = 8

	// PVOpen is what IR 0 reads while the thermocouple is open.
	PVOpen = 0x7FFF

	AlarmHighTemp   = 1 << 0
	AlarmSensor     = 1 << 1
	AlarmWatchdog   = 1 << 2
	StatusHeater    = 1 << 0
	StatusRamping   = 1 << 1
	StatusInterlock = 1 << 2
)

// HoldingName is the write-log channel of holding register addr.
func HoldingName(addr int) string {
	switch addr {
	case HRSetpoint:
		return "setpoint"
	case HRRampRate:
		return "ramp_rate"
	case HRHeaterEnable:
		return "heater_enable"
	case HRWatchdogTimeout:
		return "watchdog_timeout"
	case HRWatchdogKick:
		return "watchdog_kick"
	case HRAlarmLimit:
		return "alarm_limit"
	}
	return fmt.Sprintf("hr:%d", addr)
}

// PI controller of the furnace (output in %, error in °C).
const (
	pidKp = 3.0  // %/°C
	pidTi = 60.0 // s
)

func (p *Plant) heaterPermittedLocked() bool {
	return p.heaterOn && !p.wdExpired && p.relay
}

// thermalZone is one heated zone of the tube: its two thermal lags, the
// sensor on it and the loop of the controller on it (the sim model's
// working setpoint and integrator, or the eurotherm3200 model's state).
type thermalZone struct {
	dev    string  // the controller's device name (write log, silent and corrupt)
	fault  string  // the target of its thermal faults: "" for the furnace, else the zone's name
	tempC  float64 // true work-zone temperature
	elemC  float64 // heater element (lagged power), expressed as °C equivalent
	pvC    float64 // last sensor value (frozen when tc-frozen)
	wsp    float64 // working setpoint, °C
	outPct float64 // output the element gets, %
	integ  float64 // PI integrator, %
	euro   eurotherm
}

// newThermalZone is a cold zone whose controller dev is a 3200 configured
// as cfg when the model is eurotherm3200.
func newThermalZone(dev string, cfg EurothermConfig) thermalZone {
	return thermalZone{dev: dev, tempC: AmbientC, elemC: AmbientC, pvC: AmbientC, wsp: AmbientC, euro: newEurotherm(cfg)}
}

// heat drives the zone's element at u % for h s: the element relaxes to
// ambientC + u × gainC / 100 with time constant elemTau, the work zone to
// the element with tau.
func (z *thermalZone) heat(u, gainC, ambientC, elemTau, tau, h float64) {
	z.outPct = u
	z.elemC = relaxExact(z.elemC, ambientC+u/100*gainC, elemTau, h)
	z.tempC = relaxExact(z.tempC, z.elemC, tau, h)
}

func (p *Plant) stepFurnaceLocked(h float64) {
	var u float64
	if p.opts.FurnaceModel == FurnaceEurotherm3200 {
		u = p.stepEurothermLocked(&p.thermalZone, h)
	} else {
		u = p.stepSimControllerLocked(h)
	}
	if p.relay && p.faultActiveLocked(FaultThermalRunaway, "") {
		u = 100
	}
	if !p.relay {
		u = 0
	}
	// plant: element lag, then work zone
	p.heat(u, furnaceGainC, AmbientC, elementTauS, furnaceTauS, h)
	if p.opts.Rig == RigMoS2TwoZone {
		p.stepSulfurZoneLocked(h)
	}
}

// ramp moves the working setpoint towards target (°C) at rate °C/min
// (0: a step) over h s of sim time.
func (z *thermalZone) ramp(target, ratePerMin, h float64) {
	if ratePerMin == 0 {
		z.wsp = target
		return
	}
	step := ratePerMin / 60 * h
	switch {
	case z.wsp < target:
		z.wsp = math.Min(target, z.wsp+step)
	case z.wsp > target:
		z.wsp = math.Max(target, z.wsp-step)
	}
}

// tcOpenLocked: the thermocouple of z is open (tc-open with z's target:
// "" for the furnace, the zone's name for another zone).
func (p *Plant) tcOpenLocked(z *thermalZone) bool {
	return p.faultActiveLocked(FaultTCOpen, z.fault)
}

// sensorLocked updates the thermocouple reading of z and reports whether
// it is open (tc-open and tc-frozen with z's target).
func (p *Plant) sensorLocked(z *thermalZone) (tcOpen bool) {
	tcOpen = p.tcOpenLocked(z)
	if !p.faultActiveLocked(FaultTCFrozen, z.fault) {
		z.pvC = z.tempC + 0.03*p.rng.NormFloat64()
	}
	return tcOpen
}

// pi is one step of the PI loop with conditional integration
// (anti-windup) between lo and hi %; it returns the output in %.
func (z *thermalZone) pi(h, lo, hi float64) float64 {
	e := z.wsp - z.pvC
	raw := pidKp*e + z.integ
	di := pidKp / pidTi * e * h
	if (raw < hi || di < 0) && (raw > lo || di > 0) {
		z.integ += di
	}
	z.integ = math.Max(lo, math.Min(hi, z.integ))
	return math.Max(lo, math.Min(hi, pidKp*e+z.integ))
}

// stepSimControllerLocked is the sim model's controller: the output the PI
// loop asks for while heater power is permitted, else 0.
func (p *Plant) stepSimControllerLocked(h float64) float64 {
	p.ramp(float64(p.setpoint)/10, float64(p.rampRate)/10, h)
	tcOpen := p.sensorLocked(&p.thermalZone)
	if p.heaterPermittedLocked() && !tcOpen {
		return p.pi(h, 0, 100)
	}
	p.integ = 0
	return 0
}

// checkWatchdogLocked trips the comms watchdog (wall clock) when it ran out
// while heater enable is 1.
func (p *Plant) checkWatchdogLocked() {
	if p.wdTimeoutMs == 0 || !p.heaterOn {
		return
	}
	now := p.now()
	if now.Sub(p.lastKick) >= time.Duration(p.wdTimeoutMs)*time.Millisecond {
		p.heaterOn = false
		p.wdExpired = true
		p.outPct = 0
		p.integ = 0
		p.wdTrip = WatchdogTrip{LastKick: p.lastKick, CheckedBefore: p.wdChecked, ExpiredAt: now}
		return
	}
	p.wdChecked = now
}

// WatchdogTrip is when the furnace's comms watchdog last dropped the heater,
// by the plant's own clock: the last kick, the previous check (still within
// the timeout) and the check that found it expired. A firmware that drops at
// its first check past the deadline has CheckedBefore − LastKick < timeout ≤
// ExpiredAt − LastKick, however busy the machine.
type WatchdogTrip struct {
	LastKick      time.Time `json:"last_kick"`
	CheckedBefore time.Time `json:"checked_before"`
	ExpiredAt     time.Time `json:"expired_at"`
}

func clampInt16(v float64) int16 {
	v = math.Round(v)
	if v > math.MaxInt16 {
		return math.MaxInt16
	}
	if v < math.MinInt16 {
		return math.MinInt16
	}
	return int16(v)
}

func (p *Plant) inputRegLocked(addr int) uint16 {
	tcOpen := p.faultActiveLocked(FaultTCOpen, "")
	switch addr {
	case IRPV:
		if tcOpen {
			return PVOpen
		}
		return uint16(clampInt16(p.pvC * 10))
	case IRWorkingSP:
		return uint16(clampInt16(p.wsp * 10))
	case IROutputPower:
		return uint16(math.Round(p.outPct * 10))
	case IRAlarms:
		var a uint16
		if !tcOpen && p.pvC*10 > float64(p.alarmLimit) {
			a |= AlarmHighTemp
		}
		if tcOpen {
			a |= AlarmSensor
		}
		if p.wdExpired {
			a |= AlarmWatchdog
		}
		return a
	case IRPVFloat, IRPVFloat + 1:
		f := float32(p.pvC)
		if tcOpen {
			f = float32(math.NaN())
		}
		b := math.Float32bits(f)
		if addr == IRPVFloat {
			return uint16(b >> 16)
		}
		return uint16(b)
	case IRUptime, IRUptime + 1:
		up := uint32(p.sim)
		if addr == IRUptime {
			return uint16(up) // low word first
		}
		return uint16(up >> 16)
	case IRStatus:
		var s uint16
		if p.heaterPermittedLocked() {
			s |= StatusHeater
		}
		if math.Abs(p.wsp-float64(p.setpoint)/10) > 1e-9 {
			s |= StatusRamping
		}
		if p.relay {
			s |= StatusInterlock
		}
		return s
	}
	return 0
}

func (p *Plant) holdingRegLocked(addr int) uint16 {
	switch addr {
	case HRSetpoint:
		return uint16(p.setpoint)
	case HRRampRate:
		return p.rampRate
	case HRHeaterEnable:
		if p.heaterOn {
			return 1
		}
		return 0
	case HRWatchdogTimeout:
		return p.wdTimeoutMs
	case HRWatchdogKick:
		return p.wdKick
	case HRAlarmLimit:
		return uint16(p.alarmLimit)
	}
	return 0
}

func checkRange(addr, qty, size int) error {
	if qty < 1 || addr < 0 || addr+qty > size {
		return ErrIllegalAddress
	}
	return nil
}

// FurnaceReadInputs fills dst with len(dst) input registers from addr
// (FC 04). It returns ErrIllegalAddress when the range leaves the map.
func (p *Plant) FurnaceReadInputs(addr int, dst []uint16) error {
	if err := checkRange(addr, len(dst), NumInputRegs); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checkWatchdogLocked()
	for i := range dst {
		dst[i] = p.inputRegLocked(addr + i)
	}
	return nil
}

// FurnaceReadHolding fills dst with len(dst) holding registers from addr
// (FC 03). It returns ErrIllegalAddress when the range leaves the map.
func (p *Plant) FurnaceReadHolding(addr int, dst []uint16) error {
	if err := checkRange(addr, len(dst), NumHoldingRegs); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checkWatchdogLocked()
	for i := range dst {
		dst[i] = p.holdingRegLocked(addr + i)
	}
	return nil
}

func holdingValid(addr int, v uint16) bool {
	switch addr {
	case HRSetpoint:
		return int16(v) >= 0 && int16(v) <= 12000
	case HRRampRate:
		return v <= 1000
	case HRHeaterEnable:
		return v <= 1
	case HRWatchdogTimeout:
		return v == 0 || (v >= 100 && v <= 60000)
	case HRWatchdogKick:
		return true
	case HRAlarmLimit:
		return int16(v) >= 0 && int16(v) <= 13000
	}
	return false
}

// FurnaceWriteHolding writes vals to the holding registers from addr (FC 06 /
// FC 16), all or nothing: ErrIllegalAddress when the range leaves the map,
// ErrIllegalValue when a value is outside its register's range. Every register
// written is recorded in the write log (device furnace, via as given),
// accepted or not; an accepted write restarts the comms watchdog.
func (p *Plant) FurnaceWriteHolding(via string, addr int, vals []uint16) error {
	err := checkRange(addr, len(vals), NumHoldingRegs)
	if err == nil {
		for i, v := range vals {
			if !holdingValid(addr+i, v) {
				err = ErrIllegalValue
				break
			}
		}
	}
	p.mu.Lock()
	if err == nil {
		p.checkWatchdogLocked()
		for i, v := range vals {
			p.setHoldingLocked(addr+i, v)
		}
		p.lastKick = p.now()
	}
	sim := p.sim
	p.mu.Unlock()
	for i, v := range vals {
		val := float64(v)
		if a := addr + i; a == HRSetpoint || a == HRAlarmLimit {
			val = float64(int16(v))
		}
		p.recordWrite("furnace", via, HoldingName(addr+i), val, err == nil, sim)
	}
	return err
}

func (p *Plant) setHoldingLocked(addr int, v uint16) {
	switch addr {
	case HRSetpoint:
		p.setpoint = int16(v)
	case HRRampRate:
		p.rampRate = v
	case HRHeaterEnable:
		on := v == 1
		if on {
			p.wdExpired = false
		}
		p.heaterOn = on
	case HRWatchdogTimeout:
		p.wdTimeoutMs = v
	case HRWatchdogKick:
		p.wdKick = v
	case HRAlarmLimit:
		p.alarmLimit = int16(v)
	}
}

// FurnaceTemperature is the true work-zone temperature in °C (what the
// thermocouple would read if it worked).
func (p *Plant) FurnaceTemperature() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tempC
}
