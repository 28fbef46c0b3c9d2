package plant

import "fmt"

// Digital I/O map (configs/rig-protocols.md, unit 2).
const (
	CoilPump      = 0
	CoilGateValve = 1
	CoilArValve   = 2
	CoilH2Valve   = 3
	CoilH2SValve  = 4
	CoilVent      = 5
	CoilScrubber  = 6
	NumCoils      = 7

	DIDoorClosed  = 0
	DIExhaustOK   = 1
	DIPumpRunning = 2
	NumInputs     = 3
)

var coilNames = [NumCoils]string{"pump", "gate_valve", "ar_valve", "h2_valve", "h2s_valve", "vent_valve", "scrubber"}

// CoilName is the write-log channel of coil addr, e.g. "coil:h2s_valve".
func CoilName(addr int) string {
	if addr >= 0 && addr < NumCoils {
		return "coil:" + coilNames[addr]
	}
	return fmt.Sprintf("coil:%d", addr)
}

// DIOReadCoils fills dst with len(dst) coils from addr (FC 01).
func (p *Plant) DIOReadCoils(addr int, dst []bool) error {
	if err := checkRange(addr, len(dst), NumCoils); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	copy(dst, p.coils[addr:])
	return nil
}

func (p *Plant) discreteLocked(addr int) bool {
	switch addr {
	case DIDoorClosed:
		return !p.faultActiveLocked(FaultDoorOpen, "")
	case DIExhaustOK:
		return p.coils[CoilScrubber] && p.sim-p.scrubberFrom >= scrubberDelayS && !p.faultActiveLocked(FaultExhaustLost, "")
	case DIPumpRunning:
		return p.coils[CoilPump]
	}
	return false
}

// DIOReadInputs fills dst with len(dst) discrete inputs from addr (FC 02).
func (p *Plant) DIOReadInputs(addr int, dst []bool) error {
	if err := checkRange(addr, len(dst), NumInputs); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range dst {
		dst[i] = p.discreteLocked(addr + i)
	}
	return nil
}

// DIOWriteCoils writes coils from addr (FC 05 / FC 15), all or nothing
// (ErrIllegalAddress when the range leaves the map), and records every coil
// written (device dio, via as given).
func (p *Plant) DIOWriteCoils(via string, addr int, vals []bool) error {
	err := checkRange(addr, len(vals), NumCoils)
	p.mu.Lock()
	if err == nil {
		for i, v := range vals {
			p.setCoilLocked(addr+i, v)
		}
	}
	sim := p.sim
	p.mu.Unlock()
	for i, v := range vals {
		val := 0.0
		if v {
			val = 1
		}
		p.recordWrite("dio", via, p.CoilName(addr+i), val, err == nil, sim)
	}
	return err
}

// Coil returns the state of coil addr (false outside the map).
func (p *Plant) Coil(addr int) bool {
	if addr < 0 || addr >= NumCoils {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.coils[addr]
}
