package modbussim

import (
	"encoding/binary"
	"errors"

	"hcp-edge/firmware-sim/plant"
)

// Unit ids and function codes.
const (
	UnitFurnace = 1
	UnitDIO     = 2

	FCReadCoils          = 0x01
	FCReadDiscreteInputs = 0x02
	FCReadHolding        = 0x03
	FCReadInput          = 0x04
	FCWriteSingleCoil    = 0x05
	FCWriteSingleReg     = 0x06
	FCWriteMultipleCoils = 0x0F
	FCWriteMultipleRegs  = 0x10
)

// Exception codes.
const (
	ExIllegalFunction     = 0x01
	ExIllegalAddress      = 0x02
	ExIllegalValue        = 0x03
	ExGatewayTargetFailed = 0x0B
)

// MaxPDU is the largest Modbus PDU.
const MaxPDU = 253

// DeviceForUnit names the device behind a unit id ("" when none).
func DeviceForUnit(unit byte) string {
	switch unit {
	case UnitFurnace:
		return "furnace"
	case UnitDIO:
		return "dio"
	}
	return ""
}

// Handler executes request PDUs against a plant.
type Handler struct {
	p *plant.Plant
}

// NewHandler returns a handler over p.
func NewHandler(p *plant.Plant) *Handler { return &Handler{p: p} }

func exception(resp []byte, fc, code byte) []byte {
	return append(resp, fc|0x80, code)
}

func exceptionFor(err error) byte {
	switch {
	case errors.Is(err, plant.ErrIllegalAddress):
		return ExIllegalAddress
	case errors.Is(err, plant.ErrIllegalValue):
		return ExIllegalValue
	}
	return 0x04 // server device failure
}

// Handle executes request PDU req (function code and data) for unit (1 or 2),
// recording writes with via ("tcp" or "rtu"), and appends the response PDU
// (normal or exception) to resp. A unit without a device answers exception
// 0x0B; so does unit 1 on a rig whose heated zones are on their RTU line
// (plant.Zones: RTUSlave serves them, through HandleZone). req is not
// retained.
func (h *Handler) Handle(via string, unit byte, req, resp []byte) []byte {
	if len(req) == 0 {
		return exception(resp, 0, ExIllegalValue)
	}
	fc := req[0]
	data := req[1:]
	switch unit {
	case UnitFurnace:
		if len(h.p.Zones()) > 0 {
			return exception(resp, fc, ExGatewayTargetFailed)
		}
		if h.p.FurnaceModel() == plant.FurnaceEurotherm3200 {
			return h.eurotherm(via, fc, data, resp)
		}
		switch fc {
		case FCReadHolding:
			return h.readRegs(fc, data, resp, simHolding)
		case FCReadInput:
			return h.readRegs(fc, data, resp, simInputRegs)
		case FCWriteSingleReg:
			return h.writeReg(via, data, resp, simHolding)
		case FCWriteMultipleRegs:
			return h.writeRegs(via, data, resp, simHolding)
		}
		return exception(resp, fc, ExIllegalFunction)
	case UnitDIO:
		if h.p.DIOModel() == plant.DIOADAM6052 {
			return h.adam(via, fc, data, resp)
		}
		switch fc {
		case FCReadCoils:
			return h.readBits(fc, data, resp, simCoils)
		case FCReadDiscreteInputs:
			return h.readBits(fc, data, resp, simInputs)
		case FCWriteSingleCoil:
			return h.writeCoil(via, data, resp, simCoils, h.p.CoilName)
		case FCWriteMultipleCoils:
			return h.writeCoils(via, data, resp, simCoils)
		}
		return exception(resp, fc, ExIllegalFunction)
	}
	return exception(resp, fc, ExGatewayTargetFailed)
}

func (h *Handler) readRegs(fc byte, data, resp []byte, t target) []byte {
	if len(data) != 4 {
		return exception(resp, fc, ExIllegalValue)
	}
	addr := int(binary.BigEndian.Uint16(data))
	qty := int(binary.BigEndian.Uint16(data[2:]))
	if qty < 1 || qty > 125 {
		return exception(resp, fc, ExIllegalValue)
	}
	var regs [125]uint16
	if err := h.readRegsFrom(t, addr, regs[:qty]); err != nil {
		return exception(resp, fc, exceptionFor(err))
	}
	resp = append(resp, fc, byte(2*qty))
	for _, r := range regs[:qty] {
		resp = binary.BigEndian.AppendUint16(resp, r)
	}
	return resp
}

func (h *Handler) writeReg(via string, data, resp []byte, t target) []byte {
	if len(data) != 4 {
		return exception(resp, FCWriteSingleReg, ExIllegalValue)
	}
	addr := int(binary.BigEndian.Uint16(data))
	v := [1]uint16{binary.BigEndian.Uint16(data[2:])}
	if err := h.writeRegsTo(t, via, addr, v[:]); err != nil {
		return exception(resp, FCWriteSingleReg, exceptionFor(err))
	}
	resp = append(resp, FCWriteSingleReg)
	return append(resp, data...)
}

func (h *Handler) writeRegs(via string, data, resp []byte, t target) []byte {
	const fc = FCWriteMultipleRegs
	if len(data) < 5 {
		return exception(resp, fc, ExIllegalValue)
	}
	addr := int(binary.BigEndian.Uint16(data))
	qty := int(binary.BigEndian.Uint16(data[2:]))
	bc := int(data[4])
	if qty < 1 || qty > 123 || bc != 2*qty || len(data) != 5+bc {
		return exception(resp, fc, ExIllegalValue)
	}
	var regs [123]uint16
	for i := 0; i < qty; i++ {
		regs[i] = binary.BigEndian.Uint16(data[5+2*i:])
	}
	if err := h.writeRegsTo(t, via, addr, regs[:qty]); err != nil {
		return exception(resp, fc, exceptionFor(err))
	}
	resp = append(resp, fc)
	return append(resp, data[:4]...)
}

func (h *Handler) readBits(fc byte, data, resp []byte, t target) []byte {
	if len(data) != 4 {
		return exception(resp, fc, ExIllegalValue)
	}
	addr := int(binary.BigEndian.Uint16(data))
	qty := int(binary.BigEndian.Uint16(data[2:]))
	if qty < 1 || qty > 2000 {
		return exception(resp, fc, ExIllegalValue)
	}
	var bits [2000]bool
	if err := h.readBitsFrom(t, addr, bits[:qty]); err != nil {
		return exception(resp, fc, exceptionFor(err))
	}
	n := (qty + 7) / 8
	resp = append(resp, fc, byte(n))
	start := len(resp)
	for i := 0; i < n; i++ {
		resp = append(resp, 0)
	}
	for i, b := range bits[:qty] {
		if b {
			resp[start+i/8] |= 1 << (i % 8)
		}
	}
	return resp
}

// writeCoil records a value other than 0xFF00/0x0000 itself (device dio,
// channel name(addr)) and answers exception 03.
func (h *Handler) writeCoil(via string, data, resp []byte, t target, name func(int) string) []byte {
	const fc = FCWriteSingleCoil
	if len(data) != 4 {
		return exception(resp, fc, ExIllegalValue)
	}
	addr := int(binary.BigEndian.Uint16(data))
	raw := binary.BigEndian.Uint16(data[2:])
	var v [1]bool
	switch raw {
	case 0xFF00:
		v[0] = true
	case 0x0000:
	default:
		h.p.RecordWrite("dio", via, name(addr), float64(raw), false)
		return exception(resp, fc, ExIllegalValue)
	}
	if err := h.writeBitsTo(t, via, addr, v[:]); err != nil {
		return exception(resp, fc, exceptionFor(err))
	}
	resp = append(resp, fc)
	return append(resp, data...)
}

func (h *Handler) writeCoils(via string, data, resp []byte, t target) []byte {
	const fc = FCWriteMultipleCoils
	if len(data) < 5 {
		return exception(resp, fc, ExIllegalValue)
	}
	addr := int(binary.BigEndian.Uint16(data))
	qty := int(binary.BigEndian.Uint16(data[2:]))
	bc := int(data[4])
	if qty < 1 || qty > 1968 || bc != (qty+7)/8 || len(data) != 5+bc {
		return exception(resp, fc, ExIllegalValue)
	}
	var bits [1968]bool
	for i := 0; i < qty; i++ {
		bits[i] = data[5+i/8]&(1<<(i%8)) != 0
	}
	if err := h.writeBitsTo(t, via, addr, bits[:qty]); err != nil {
		return exception(resp, fc, exceptionFor(err))
	}
	resp = append(resp, fc)
	return append(resp, data[:4]...)
}

// corruptPDU damages a response PDU in place the way the `corrupt` fault
// asks for on TCP: a wrong byte count on a read reply, otherwise a flipped
// last byte.
func corruptPDU(pdu []byte) {
	if len(pdu) >= 2 && pdu[0] >= FCReadCoils && pdu[0] <= FCReadInput {
		pdu[1] += 2
		return
	}
	if len(pdu) > 0 {
		pdu[len(pdu)-1] ^= 0x01
	}
}
