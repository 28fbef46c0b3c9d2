package plant

import "fmt"

// Advantech ADAM-6052 map (configs/manuals/adam-6052.md), wire addresses
// (zero-based, as in the PDU), and the rig's wiring (configs/rig-protocols.md,
// Real controller models): DO n drives the sim module's coil n (n < 7), DI n
// reads its discrete input n (n < 3).
const (
	ADAMDIBase   = 0   // 00001..00008: DI 0..7 (FC 01, 02)
	ADAMNumDI    = 8   //
	ADAMDOBase   = 16  // 00017..00024: DO 0..7 (FC 01, 05, 15)
	ADAMNumDO    = 8   //
	ADAMRegName  = 210 // 40211..40212: module name
	ADAMRegDI    = 300 // 40301: DI word, bit n = DI n
	ADAMRegDO    = 302 // 40303: DO word, bit n = DO n (R/W)
	ADAMNameWord = 0x6052
)

// ADAMChannel is the write-log channel of coil (wire) address addr of the
// ADAM-6052 map: the wired coil's name ("coil:pump" for DO 0), "coil:do7" for
// the spare output, "addr:N" for anything else.
func ADAMChannel(addr int) string {
	n := addr - ADAMDOBase
	switch {
	case n >= 0 && n < NumCoils:
		return CoilName(n)
	case n == NumCoils && n < ADAMNumDO:
		return fmt.Sprintf("coil:do%d", n)
	}
	return fmt.Sprintf("addr:%d", addr)
}

func inBlock(addr, qty, base, n int) bool {
	return qty >= 1 && addr >= base && addr+qty <= base+n
}

func (p *Plant) adamDOLocked(n int) bool {
	if n < NumCoils {
		return p.coils[n]
	}
	return p.adamDO7
}

func (p *Plant) adamDILocked(n int) bool {
	if n < NumInputs {
		return p.discreteLocked(n)
	}
	return false // not connected
}

// setCoilLocked sets coil c of the plant (the scrubber's run time starts when
// it is switched on; a tripped scrubber, FaultScrubberTrip, stays off).
func (p *Plant) setCoilLocked(c int, v bool) {
	if c == CoilScrubber && v && p.faultActiveLocked(FaultScrubberTrip, "") {
		v = false
	}
	if c == CoilScrubber && v && !p.coils[c] {
		p.scrubberFrom = p.sim
	}
	p.coils[c] = v
}

// ADAMReadBits fills dst from addr: with FC 01 (coils) the DI block or the DO
// block, with FC 02 (inputs=true) the DI block only. ErrIllegalAddress when
// the range is not inside one block.
func (p *Plant) ADAMReadBits(inputs bool, addr int, dst []bool) error {
	di := inBlock(addr, len(dst), ADAMDIBase, ADAMNumDI)
	do := !inputs && inBlock(addr, len(dst), ADAMDOBase, ADAMNumDO)
	if !di && !do {
		return ErrIllegalAddress
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range dst {
		if di {
			dst[i] = p.adamDILocked(addr - ADAMDIBase + i)
		} else {
			dst[i] = p.adamDOLocked(addr - ADAMDOBase + i)
		}
	}
	return nil
}

// ADAMWriteCoils writes digital outputs from addr (FC 05 / 15), all or
// nothing (ErrIllegalAddress outside the DO block), recording each coil
// (device dio, channel ADAMChannel).
func (p *Plant) ADAMWriteCoils(via string, addr int, vals []bool) error {
	var err error
	if !inBlock(addr, len(vals), ADAMDOBase, ADAMNumDO) {
		err = ErrIllegalAddress
	}
	p.mu.Lock()
	if err == nil {
		for i, v := range vals {
			p.adamSetDOLocked(addr-ADAMDOBase+i, v)
		}
	}
	sim := p.sim
	p.mu.Unlock()
	for i, v := range vals {
		p.recordWrite("dio", via, p.ADAMChannel(addr+i), b2f(v), err == nil, sim)
	}
	return err
}

func (p *Plant) adamSetDOLocked(n int, v bool) {
	if n < NumCoils {
		p.setCoilLocked(n, v)
		return
	}
	p.adamDO7 = v
}

func adamRegMapped(addr int) bool {
	return addr == ADAMRegName || addr == ADAMRegName+1 || addr == ADAMRegDI || addr == ADAMRegDO
}

// ADAMReadRegisters fills dst with the registers from addr (FC 03 / 04);
// ErrIllegalAddress when any is not in the map.
func (p *Plant) ADAMReadRegisters(addr int, dst []uint16) error {
	for i := range dst {
		if !adamRegMapped(addr + i) {
			return ErrIllegalAddress
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range dst {
		var w uint16
		switch addr + i {
		case ADAMRegName:
			w = ADAMNameWord
		case ADAMRegDI:
			for n := 0; n < ADAMNumDI; n++ {
				if p.adamDILocked(n) {
					w |= 1 << n
				}
			}
		case ADAMRegDO:
			for n := 0; n < ADAMNumDO; n++ {
				if p.adamDOLocked(n) {
					w |= 1 << n
				}
			}
		}
		dst[i] = w
	}
	return nil
}

// ADAMWriteRegisters writes the DO word (FC 06 / 16; the only writable
// register): ErrIllegalAddress for any other register, ErrIllegalValue when
// bits 8..15 are set. An accepted or refused DO word is recorded as one entry
// per output; a write elsewhere as one entry per register ("addr:N").
func (p *Plant) ADAMWriteRegisters(via string, addr int, vals []uint16) error {
	var err error
	switch {
	case addr != ADAMRegDO || len(vals) != 1:
		err = ErrIllegalAddress
	case vals[0]&0xFF00 != 0:
		err = ErrIllegalValue
	}
	p.mu.Lock()
	if err == nil {
		for n := 0; n < ADAMNumDO; n++ {
			p.adamSetDOLocked(n, vals[0]&(1<<n) != 0)
		}
	}
	sim := p.sim
	p.mu.Unlock()
	if addr == ADAMRegDO && len(vals) == 1 {
		for n := 0; n < ADAMNumDO; n++ {
			p.recordWrite("dio", via, p.ADAMChannel(ADAMDOBase+n), b2f(vals[0]&(1<<n) != 0), err == nil, sim)
		}
		return err
	}
	for i, v := range vals {
		p.recordWrite("dio", via, fmt.Sprintf("addr:%d", addr+i), float64(v), false, sim)
	}
	return err
}
