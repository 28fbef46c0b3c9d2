package regmap

import (
	"context"
	"fmt"
	"sort"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
)

// Bus is what the generic driver needs from a Modbus line; *modbus.Bus has it.
type Bus interface {
	ReadHoldingRegisters(ctx context.Context, unit byte, addr, qty uint16) ([]uint16, error)
	ReadInputRegisters(ctx context.Context, unit byte, addr, qty uint16) ([]uint16, error)
	WriteSingleRegister(ctx context.Context, unit byte, addr, value uint16) error
	WriteMultipleRegisters(ctx context.Context, unit byte, addr uint16, values []uint16) error
	ReadCoils(ctx context.Context, unit byte, addr, qty uint16) ([]bool, error)
	ReadDiscreteInputs(ctx context.Context, unit byte, addr, qty uint16) ([]bool, error)
	WriteSingleCoil(ctx context.Context, unit byte, addr uint16, on bool) error
}

var _ Bus = (*modbus.Bus)(nil)

// Limits of one Modbus read (the protocol's).
const (
	maxRegisters = 125
	maxBits      = 2000
)

// span is one read: a table's addresses lo..lo+n-1.
type span struct {
	table modbus.Table
	lo, n uint16
}

// spans plans the reads of specs (all of one table): addresses sorted,
// joined into one read while contiguous — across addresses of other mapped
// channels too, and across any gap when gaps are allowed — as long as the
// read stays within the protocol's limit.
func spans(table modbus.Table, specs, mapped []modbus.RegisterSpec, gaps bool) []span {
	if len(specs) == 0 {
		return nil
	}
	limit := uint16(maxRegisters)
	if table == modbus.Coil || table == modbus.Discrete {
		limit = maxBits
	}
	type iv struct{ lo, hi int }
	ivs := make([]iv, 0, len(specs))
	for _, s := range specs {
		ivs = append(ivs, iv{int(s.Address), int(s.Address) + int(s.Words()) - 1})
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].lo < ivs[j].lo }) // sort.Slice: no generic instantiation in the binary
	isMapped := map[int]bool{}
	for _, m := range mapped {
		if m.Table == table {
			for a := int(m.Address); a < int(m.Address)+int(m.Words()); a++ {
				isMapped[a] = true
			}
		}
	}
	covered := func(lo, hi int) bool {
		for a := lo; a <= hi; a++ {
			if !isMapped[a] {
				return false
			}
		}
		return true
	}
	var out []span
	cur := ivs[0]
	for _, x := range ivs[1:] {
		joinable := x.lo <= cur.hi+1 || gaps || covered(cur.hi+1, x.lo-1)
		if joinable && max(cur.hi, x.hi)-cur.lo+1 <= int(limit) {
			cur.hi = max(cur.hi, x.hi)
			continue
		}
		out = append(out, span{table, uint16(cur.lo), uint16(cur.hi - cur.lo + 1)})
		cur = x
	}
	return append(out, span{table, uint16(cur.lo), uint16(cur.hi - cur.lo + 1)})
}

// readWords reads the register spans and returns every word by address.
func readWords(ctx context.Context, bus Bus, unit byte, name string, ss []span) (map[modbus.Table]map[uint16]uint16, error) {
	blocks, err := readSpans(ctx, bus, unit, name, ss)
	if err != nil {
		return nil, err
	}
	got := map[modbus.Table]map[uint16]uint16{}
	for i, s := range ss {
		if got[s.table] == nil {
			got[s.table] = map[uint16]uint16{}
		}
		for j, w := range blocks[i] {
			got[s.table][s.lo+uint16(j)] = w
		}
	}
	return got, nil
}

// readSpans reads each span and returns its words, one slice per span.
func readSpans(ctx context.Context, bus Bus, unit byte, name string, ss []span) ([][]uint16, error) {
	out := make([][]uint16, len(ss))
	for i, s := range ss {
		read := bus.ReadInputRegisters
		if s.table == modbus.Holding {
			read = bus.ReadHoldingRegisters
		}
		words, err := read(ctx, unit, s.lo, s.n)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %d..%d: %w", name, s.table, s.lo, s.lo+s.n-1, err)
		}
		if len(words) < int(s.n) {
			return nil, fmt.Errorf("%s: %s %d..%d: %d words: %w", name, s.table, s.lo, s.lo+s.n-1, len(words), device.ErrFrame)
		}
		out[i] = words[:s.n]
	}
	return out, nil
}
