package plant

// This file is the API the serial instrument emulators (firmware-sim/serialsim)
// use. Its exported names and signatures are a contract between two people
// working in parallel: keep them.

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// MFCState is one mass-flow controller's state as its firmware sees it.
type MFCState struct {
	Gas           string  // display name, e.g. "Ar", "H2", "H2S"
	UnitID        byte    // Alicat unit id, e.g. 'A'
	FullScaleSCCM float64 // range
	SetpointSCCM  float64 // setpoint as last accepted
	FlowSCCM      float64 // measured mass flow (with sensor noise; above full scale when stuck open)
	PressurePSIA  float64 // line pressure
	TempC         float64 // gas temperature
	Hold          bool    // valve held closed (AHC)
	StuckOpen     bool    // fault mfc-stuck-open active
}

func (p *Plant) gasIndex(gas string) (int, bool) {
	g := strings.ToLower(gas)
	for i, k := range p.gasKeys {
		if k != "" && k == g {
			return i, true
		}
	}
	return 0, false
}

// MFC returns the state of the controller for gas ("ar", "h2", "h2s" or on
// the graphene rig "ch4"; case-insensitive).
func (p *Plant) MFC(gas string) (MFCState, bool) {
	i, ok := p.gasIndex(gas)
	if !ok {
		return MFCState{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mfcReadLocked(i), true
}

func (p *Plant) mfcReadLocked(i int) MFCState {
	m := p.mfcs[i]
	s := m.MFCState
	s.StuckOpen = p.faultActiveLocked(FaultMFCStuckOpen, p.gasKeys[i])
	s.FlowSCCM = m.flowTrue + 0.05*p.rng.NormFloat64()
	s.PressurePSIA = 14.70 + 0.01*p.rng.NormFloat64()
	return s
}

// SetMFCSetpoint sets a controller's setpoint in sccm; it fails when the value is
// negative, not finite or above full scale, and changes nothing then. (A stuck-open
// controller accepts the setpoint and ignores it.) It does not record the write:
// the emulator calls RecordWrite, accepted or not.
func (p *Plant) SetMFCSetpoint(gas string, sccm float64) error {
	i, ok := p.gasIndex(gas)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownGas, gas)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := &p.mfcs[i]
	if math.IsNaN(sccm) || math.IsInf(sccm, 0) || sccm < 0 || sccm > m.FullScaleSCCM {
		return fmt.Errorf("%w: %s setpoint %g outside 0..%g sccm", ErrIllegalValue, m.Gas, sccm, m.FullScaleSCCM)
	}
	m.SetpointSCCM = sccm
	return nil
}

// SetMFCHold holds the controller's valve closed (true) or resumes control (false).
func (p *Plant) SetMFCHold(gas string, hold bool) error {
	i, ok := p.gasIndex(gas)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownGas, gas)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mfcs[i].Hold = hold
	return nil
}

// ChamberPressure is the true chamber pressure in pascal.
func (p *Plant) ChamberPressure() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		p.catchUpLocked()
	}
	return p.pressurePa
}

// Layers is the film grown on the sample so far, in layers of whatever
// material (0 = bare substrate; fractional values mean partial coverage of
// the next layer). With the default precursor (MoO3) it is MoS2; Film says
// which material grew.
func (p *Plant) Layers() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.film.Layers()
}

// SimElapsed is the simulated time since the plant started.
func (p *Plant) SimElapsed() time.Duration { return time.Duration(p.simNanos.Load()) }

// TimeScale is sim seconds per wall-clock second.
func (p *Plant) TimeScale() float64 { return p.opts.TimeScale }

// FaultActive reports whether fault name is active for target (target "" for
// faults without one), e.g. FaultActive("silent", "mfc-ar").
func (p *Plant) FaultActive(name, target string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faultActiveLocked(name, target)
}

// RecordWrite appends a write the firmware received to the write log.
// device: furnace, dio, mfc-ar, mfc-h2, mfc-h2s, gauge, raman, gpio; via: tcp,
// rtu, serial, gpio; channel e.g. "setpoint", "hold", "unit".
func (p *Plant) RecordWrite(device, via, channel string, value float64, accepted bool) {
	p.recordWrite(device, via, channel, value, accepted, float64(p.simNanos.Load())/1e9)
}
