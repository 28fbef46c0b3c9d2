package modbussim

import "hcp-edge/firmware-sim/plant"

// target names the plant table a request reads or writes. The handlers call
// the plant's methods directly through it (not through func values), so the
// request buffers stay on the stack: Handle allocates nothing.
type target int

const (
	simHolding   target = iota // sim furnace holding registers
	simInputRegs               // sim furnace input registers
	simCoils                   // sim DIO coils
	simInputs                  // sim DIO discrete inputs
	euroRegs                   // Eurotherm 3200 parameters (both regions)
	adamRegs                   // ADAM-6052 registers
	adamCoils                  // ADAM-6052 bits, FC 01 / 05 / 15
	adamInputs                 // ADAM-6052 bits, FC 02
	// zoneRegs + i: the Eurotherm 3200 of zone i of plant.Zones, on
	// the zones' RTU line.
	zoneRegs
)

func (h *Handler) readRegsFrom(t target, addr int, dst []uint16) error {
	switch t {
	case simHolding:
		return h.p.FurnaceReadHolding(addr, dst)
	case simInputRegs:
		return h.p.FurnaceReadInputs(addr, dst)
	case euroRegs:
		return h.p.EurothermRead(addr, dst)
	case adamRegs:
		return h.p.ADAMReadRegisters(addr, dst)
	}
	if t >= zoneRegs {
		return h.p.ZoneRead(int(t-zoneRegs), addr, dst)
	}
	return plant.ErrIllegalAddress
}

func (h *Handler) writeRegsTo(t target, via string, addr int, vals []uint16) error {
	switch t {
	case simHolding:
		return h.p.FurnaceWriteHolding(via, addr, vals)
	case euroRegs:
		return h.p.EurothermWrite(via, addr, vals)
	case adamRegs:
		return h.p.ADAMWriteRegisters(via, addr, vals)
	}
	if t >= zoneRegs {
		return h.p.ZoneWrite(int(t-zoneRegs), via, addr, vals)
	}
	return plant.ErrIllegalAddress
}

func (h *Handler) readBitsFrom(t target, addr int, dst []bool) error {
	switch t {
	case simCoils:
		return h.p.DIOReadCoils(addr, dst)
	case simInputs:
		return h.p.DIOReadInputs(addr, dst)
	case adamCoils:
		return h.p.ADAMReadBits(false, addr, dst)
	case adamInputs:
		return h.p.ADAMReadBits(true, addr, dst)
	}
	return plant.ErrIllegalAddress
}

func (h *Handler) writeBitsTo(t target, via string, addr int, vals []bool) error {
	switch t {
	case simCoils:
		return h.p.DIOWriteCoils(via, addr, vals)
	case adamCoils:
		return h.p.ADAMWriteCoils(via, addr, vals)
	}
	return plant.ErrIllegalAddress
}

// eurotherm serves unit 1 as the Eurotherm 3200 series of
// configs/manuals/eurotherm-3200.md: 03 and 04 read the same parameter table
// (16-bit region and float region alike), 06 and 16 write it; any other
// function code → exception 01.
func (h *Handler) eurotherm(via string, fc byte, data, resp []byte) []byte {
	return h.euroOn(euroRegs, via, fc, data, resp)
}

// euroOn serves the Eurotherm 3200 parameters of t (euroRegs, or zoneRegs
// + i).
func (h *Handler) euroOn(t target, via string, fc byte, data, resp []byte) []byte {
	switch fc {
	case FCReadHolding, FCReadInput:
		return h.readRegs(fc, data, resp, t)
	case FCWriteSingleReg:
		return h.writeReg(via, data, resp, t)
	case FCWriteMultipleRegs:
		return h.writeRegs(via, data, resp, t)
	}
	return exception(resp, fc, ExIllegalFunction)
}

// HandleZone executes request PDU req for the Eurotherm 3200 of zone i of
// the plant's Zones (unit i + 1 on the zones' RTU line), recording writes
// with via, and appends the response PDU to resp, as Handle does.
func (h *Handler) HandleZone(via string, i int, req, resp []byte) []byte {
	if len(req) == 0 {
		return exception(resp, 0, ExIllegalValue)
	}
	return h.euroOn(zoneRegs+target(i), via, req[0], req[1:], resp)
}

// adam serves unit 2 as the Advantech ADAM-6052 of
// configs/manuals/adam-6052.md: 01 reads DI (0..7) or DO (16..23), 02 DI
// only, 05 and 15 write DO, 03 and 04 read the name and the DI/DO words, 06
// and 16 write the DO word.
func (h *Handler) adam(via string, fc byte, data, resp []byte) []byte {
	switch fc {
	case FCReadCoils:
		return h.readBits(fc, data, resp, adamCoils)
	case FCReadDiscreteInputs:
		return h.readBits(fc, data, resp, adamInputs)
	case FCWriteSingleCoil:
		return h.writeCoil(via, data, resp, adamCoils, h.p.ADAMChannel)
	case FCWriteMultipleCoils:
		return h.writeCoils(via, data, resp, adamCoils)
	case FCReadHolding, FCReadInput:
		return h.readRegs(fc, data, resp, adamRegs)
	case FCWriteSingleReg:
		return h.writeReg(via, data, resp, adamRegs)
	case FCWriteMultipleRegs:
		return h.writeRegs(via, data, resp, adamRegs)
	}
	return exception(resp, fc, ExIllegalFunction)
}
