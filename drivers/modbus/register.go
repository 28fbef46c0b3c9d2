package modbus

import (
	"context"
	"fmt"
	"math"
	"strings"

	"hcp-edge/device"
)

// Table is a Modbus data table.
type Table string

// Tables.
const (
	Holding  Table = "holding"  // read/write registers (FC 03, 06, 16)
	Input    Table = "input"    // read-only registers (FC 04)
	Coil     Table = "coil"     // read/write bits (FC 01, 05, 15)
	Discrete Table = "discrete" // read-only bits (FC 02)
)

// Type is how a register value is encoded.
type Type string

// Register types. Bool is the type of coils and discrete inputs (and may be
// left empty for them).
const (
	Int16   Type = "int16"
	Uint16  Type = "uint16"
	Int32   Type = "int32"
	Uint32  Type = "uint32"
	Float32 Type = "float32"
	Bool    Type = "bool"
)

// ByteOrder is the order of the two bytes inside each register.
type ByteOrder string

// Byte orders; empty means BigEndian, the Modbus norm.
const (
	BigEndian    ByteOrder = "big"    // high byte first (A B)
	LittleEndian ByteOrder = "little" // low byte first (B A)
)

// WordOrder is the order of the registers of a 32-bit value.
type WordOrder string

// Word orders; empty means HighWordFirst.
const (
	HighWordFirst WordOrder = "high-first" // ABCD (with BigEndian bytes)
	LowWordFirst  WordOrder = "low-first"  // CDAB (with BigEndian bytes)
)

// ParseOrder reads the conventional four-letter notation of a 32-bit layout:
// ABCD, CDAB, BADC or DCBA.
func ParseOrder(s string) (ByteOrder, WordOrder, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "ABCD":
		return BigEndian, HighWordFirst, nil
	case "CDAB":
		return BigEndian, LowWordFirst, nil
	case "BADC":
		return LittleEndian, HighWordFirst, nil
	case "DCBA":
		return LittleEndian, LowWordFirst, nil
	}
	return "", "", fmt.Errorf("modbus: byte order %q (want ABCD, CDAB, BADC or DCBA)", s)
}

// RegisterSpec says where a value lives and how it is encoded. The
// engineering value is raw*Scale + Offset (Scale 0 means 1).
type RegisterSpec struct {
	Table     Table
	Address   uint16
	Type      Type
	ByteOrder ByteOrder
	WordOrder WordOrder
	Scale     float64
	Offset    float64
}

// Words is the number of registers (or bits) the value occupies.
func (s RegisterSpec) Words() uint16 {
	switch s.Type {
	case Int32, Uint32, Float32:
		return 2
	}
	return 1
}

// IsBit reports whether s is a coil or a discrete input.
func (s RegisterSpec) IsBit() bool { return s.Table == Coil || s.Table == Discrete }

// Writable reports whether s is a holding register or a coil.
func (s RegisterSpec) Writable() bool { return s.Table == Holding || s.Table == Coil }

func (s RegisterSpec) scale() float64 {
	if s.Scale == 0 {
		return 1
	}
	return s.Scale
}

func (s RegisterSpec) String() string {
	return fmt.Sprintf("%s %d (%s)", s.Table, s.Address, s.Type)
}

// Validate checks s.
func (s RegisterSpec) Validate() error {
	switch s.Table {
	case Holding, Input:
		switch s.Type {
		case Int16, Uint16, Int32, Uint32, Float32:
		default:
			return fmt.Errorf("modbus: register %s: type %q (want int16, uint16, int32, uint32 or float32)", s, s.Type)
		}
	case Coil, Discrete:
		if s.Type != "" && s.Type != Bool {
			return fmt.Errorf("modbus: %s %d: type %q (bits are bool)", s.Table, s.Address, s.Type)
		}
		return nil
	default:
		return fmt.Errorf("modbus: table %q (want holding, input, coil or discrete)", s.Table)
	}
	switch s.ByteOrder {
	case "", BigEndian, LittleEndian:
	default:
		return fmt.Errorf("modbus: register %s: byte order %q", s, s.ByteOrder)
	}
	switch s.WordOrder {
	case "", HighWordFirst, LowWordFirst:
	default:
		return fmt.Errorf("modbus: register %s: word order %q", s, s.WordOrder)
	}
	if !device.Finite(s.Scale) || !device.Finite(s.Offset) {
		return fmt.Errorf("modbus: register %s: scale and offset must be finite", s)
	}
	if int(s.Address)+int(s.Words()) > 0x10000 {
		return fmt.Errorf("modbus: register %s runs past address 65535", s)
	}
	return nil
}

// raw32 joins two registers in the configured orders.
func (s RegisterSpec) raw32(w []uint16) uint32 {
	a, b := s.swap(w[0]), s.swap(w[1])
	if s.WordOrder == LowWordFirst {
		a, b = b, a
	}
	return uint32(a)<<16 | uint32(b)
}

func (s RegisterSpec) swap(w uint16) uint16 {
	if s.ByteOrder == LittleEndian {
		return w<<8 | w>>8
	}
	return w
}

// Raw returns the integer on the wire (sign-extended for signed types; the
// IEEE bits widened for float32), before scale and offset.
func (s RegisterSpec) Raw(words []uint16) (int64, error) {
	if len(words) < int(s.Words()) {
		return 0, frameError("register %s: %d words, want %d", s, len(words), s.Words())
	}
	switch s.Type {
	case Int16:
		return int64(int16(s.swap(words[0]))), nil
	case Uint16, "", Bool:
		return int64(s.swap(words[0])), nil
	case Int32:
		return int64(int32(s.raw32(words))), nil
	default:
		return int64(s.raw32(words)), nil
	}
}

// Decode returns the engineering value held in words (len ≥ Words()). A
// float32 NaN decodes to NaN: the caller decides what an invalid reading means.
func (s RegisterSpec) Decode(words []uint16) (float64, error) {
	r, err := s.Raw(words)
	if err != nil {
		return 0, err
	}
	v := float64(r)
	if s.Type == Float32 {
		v = float64(math.Float32frombits(uint32(r)))
	}
	return v*s.scale() + s.Offset, nil
}

// DecodeFrom decodes s out of a block of registers read from address start.
func (s RegisterSpec) DecodeFrom(block []uint16, start uint16) (float64, error) {
	if s.Address < start || int(s.Address-start)+int(s.Words()) > len(block) {
		return 0, frameError("register %s outside the block read from %d (%d words)", s, start, len(block))
	}
	return s.Decode(block[s.Address-start:])
}

// Encode returns the registers that hold v. A value that is not finite, or
// that does not fit the type after scale and offset, is refused with an error
// wrapping device.ErrOutOfRange.
func (s RegisterSpec) Encode(v float64) ([]uint16, error) {
	if !device.Finite(v) {
		return nil, fmt.Errorf("modbus: register %s: value %v: %w", s, v, device.ErrOutOfRange)
	}
	x := (v - s.Offset) / s.scale()
	var lo, hi float64
	switch s.Type {
	case Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case Uint16, Bool, "":
		lo, hi = 0, math.MaxUint16
	case Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	case Uint32:
		lo, hi = 0, math.MaxUint32
	case Float32:
		if math.Abs(x) > math.MaxFloat32 {
			return nil, fmt.Errorf("modbus: register %s: value %v overflows float32: %w", s, v, device.ErrOutOfRange)
		}
		return s.split(math.Float32bits(float32(x))), nil
	default:
		return nil, fmt.Errorf("modbus: register %s: unknown type", s)
	}
	r := math.Round(x)
	if !device.Finite(r) || r < lo || r > hi {
		return nil, fmt.Errorf("modbus: register %s: value %v (raw %v) outside %v..%v: %w", s, v, r, lo, hi, device.ErrOutOfRange)
	}
	if s.Words() == 1 {
		return []uint16{s.swap(uint16(int64(r)))}, nil
	}
	return s.split(uint32(int64(r))), nil
}

func (s RegisterSpec) split(u uint32) []uint16 {
	a, b := s.swap(uint16(u>>16)), s.swap(uint16(u))
	if s.WordOrder == LowWordFirst {
		a, b = b, a
	}
	return []uint16{a, b}
}

// Read reads and decodes the value s describes from unit (coils and discrete
// inputs read as 0 or 1).
func (b *Bus) Read(ctx context.Context, unit byte, s RegisterSpec) (float64, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	switch s.Table {
	case Coil, Discrete:
		var bits []bool
		var err error
		if s.Table == Coil {
			bits, err = b.ReadCoils(ctx, unit, s.Address, 1)
		} else {
			bits, err = b.ReadDiscreteInputs(ctx, unit, s.Address, 1)
		}
		if err != nil {
			return 0, err
		}
		if bits[0] {
			return 1, nil
		}
		return 0, nil
	}
	var words []uint16
	var err error
	if s.Table == Holding {
		words, err = b.ReadHoldingRegisters(ctx, unit, s.Address, s.Words())
	} else {
		words, err = b.ReadInputRegisters(ctx, unit, s.Address, s.Words())
	}
	if err != nil {
		return 0, err
	}
	return s.Decode(words)
}

// Write encodes v and writes it to unit: FC 06 for one register, FC 16 for
// two, FC 05 for a coil (v ≠ 0 is on). Nothing is sent when v does not encode.
func (b *Bus) Write(ctx context.Context, unit byte, s RegisterSpec, v float64) error {
	if err := s.Validate(); err != nil {
		return err
	}
	switch s.Table {
	case Coil:
		return b.WriteSingleCoil(ctx, unit, s.Address, v != 0)
	case Holding:
	default:
		return fmt.Errorf("modbus: %s is read-only: %w", s, device.ErrRejected)
	}
	words, err := s.Encode(v)
	if err != nil {
		return err
	}
	if len(words) == 1 {
		return b.WriteSingleRegister(ctx, unit, s.Address, words[0])
	}
	return b.WriteMultipleRegisters(ctx, unit, s.Address, words)
}
