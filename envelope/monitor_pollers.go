package envelope

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"hcp-edge/device"
)

// poller reads one instrument, or one bank of switches or inputs, into the
// cache.
type poller struct {
	name  string
	every time.Duration
	read  func(ctx context.Context) error
	// members names the instruments a bank poller reads (each vouched for,
	// and reported to OnPoll, by each read); nil for one instrument, name.
	members []string
	// zone marks a heated zone's controller: polled at FurnaceEvery, in
	// the furnace's phase.
	zone bool
}

// healthNames are the instruments whose health p's reads decide.
func (p poller) healthNames() []string {
	if p.members != nil {
		return p.members
	}
	return []string{p.name}
}

// bankOf returns the bank that reads x with others, and x's index in it.
func bankOf(x any) (device.LevelBank, int) {
	if bm, ok := x.(device.BankMember); ok {
		return bm.Bank()
	}
	return nil, 0
}

// levelBank is the rig's switches (or inputs) that one device.LevelBank
// reads: names in order, each with its index in the bank's Levels.
type levelBank struct {
	bank  device.LevelBank
	names []string
	index []int
}

// bankLevels groups the members of levels that belong to a bank with at
// least two members of levels, in order of their first name; the rest are
// returned as single names, sorted.
func bankLevels[T any](levels map[string]T) (banks []*levelBank, single []string) {
	names := slices.Sorted(maps.Keys(levels))
	by := map[device.LevelBank]*levelBank{}
	for _, name := range names {
		b, i := bankOf(levels[name])
		if b == nil {
			continue
		}
		lb := by[b]
		if lb == nil {
			lb = &levelBank{bank: b}
			by[b] = lb
			banks = append(banks, lb)
		}
		lb.names = append(lb.names, name)
		lb.index = append(lb.index, i)
	}
	banks = slices.DeleteFunc(banks, func(lb *levelBank) bool { return len(lb.names) < 2 })
	for _, name := range names {
		if b, _ := bankOf(levels[name]); b == nil || len(by[b].names) < 2 {
			single = append(single, name)
		}
	}
	return banks, single
}

// bankPoller reads lb in one exchange into the cache's levels (the switches
// or the inputs), each member's level as of the read's start.
func (m *Monitor) bankPoller(kind string, lb *levelBank, levels func() map[string]Level) poller {
	members := make([]string, len(lb.names))
	for i, n := range lb.names {
		members[i] = kind + n
	}
	return poller{name: kind + "bank(" + strings.Join(lb.names, ",") + ")", every: m.opts.OtherEvery, members: members,
		read: func(ctx context.Context) error {
			at := m.opts.Clock() // the values are no older than the read's start
			got, err := lb.bank.Levels(ctx)
			if err != nil {
				return err
			}
			for _, i := range lb.index {
				if i < 0 || i >= len(got) {
					return fmt.Errorf("envelope: monitor: %s: bank returned %d levels, member index %d: %w", members[0], len(got), i, device.ErrFrame)
				}
			}
			m.mu.Lock()
			dst := levels()
			for j, name := range lb.names {
				dst[name] = newerLevel(dst[name], Level{On: got[lb.index[j]], At: at})
			}
			m.mu.Unlock()
			return nil
		}}
}

func (m *Monitor) pollers() []poller {
	rig := m.il.rig
	var ps []poller
	for i, z := range m.env.zones {
		c := m.il.controller(i)
		ps = append(ps, poller{name: m.il.zoneInstrument(i), every: m.opts.FurnaceEvery, zone: true, read: func(ctx context.Context) error {
			st, err := furnaceStatus(ctx, c)
			if err == nil {
				m.mu.Lock()
				if i == 0 {
					if !st.At.Before(m.r.Furnace.At) {
						m.r.Furnace = st
					}
				} else if !st.At.Before(m.r.Zones[z.name].At) {
					m.r.Zones[z.name] = st
				}
				m.mu.Unlock()
			}
			return err
		}})
	}
	ps = append(ps, poller{name: "gauge", every: m.opts.OtherEvery, read: func(ctx context.Context) error {
		p, err := rig.Gauge.ReadPressure(ctx)
		if err == nil || errors.Is(err, device.ErrSensor) {
			m.mu.Lock()
			if !p.At.Before(m.r.Pressure.At) {
				m.r.Pressure = p // the gauge answered: comms are fine, the status tells the rest
			}
			m.mu.Unlock()
			return nil
		}
		return err
	}})
	for gas, fc := range rig.Flows {
		ps = append(ps, poller{name: FlowChannel(gas), every: m.opts.OtherEvery, read: func(ctx context.Context) error {
			st, err := fc.ReadFlow(ctx)
			if err == nil {
				m.mu.Lock()
				if !st.At.Before(m.r.Flows[gas].At) {
					m.r.Flows[gas] = st
				}
				m.mu.Unlock()
			}
			return err
		}})
	}
	// Switches and inputs that a device.LevelBank reads together (the DIO
	// module's coils, its discrete inputs) are read by one poller per bank:
	// each still at OtherEvery, in one transaction instead of one each.
	swBanks, swSingle := bankLevels(rig.Switches)
	for _, lb := range swBanks {
		ps = append(ps, m.bankPoller("switch.", lb, func() map[string]Level { return m.r.Switches }))
	}
	inBanks, inSingle := bankLevels(rig.Inputs)
	for _, lb := range inBanks {
		ps = append(ps, m.bankPoller("input.", lb, func() map[string]Level { return m.r.Inputs }))
	}
	for _, name := range swSingle {
		sw := rig.Switches[name]
		ps = append(ps, poller{name: SwitchChannel(name), every: m.opts.OtherEvery, read: func(ctx context.Context) error {
			at := m.opts.Clock() // the value is no older than the read's start
			on, err := sw.State(ctx)
			if err == nil {
				m.mu.Lock()
				m.r.Switches[name] = newerLevel(m.r.Switches[name], Level{On: on, At: at})
				m.mu.Unlock()
			}
			return err
		}})
	}
	for _, name := range inSingle {
		in := rig.Inputs[name]
		ps = append(ps, poller{name: "input." + name, every: m.opts.OtherEvery, read: func(ctx context.Context) error {
			at := m.opts.Clock() // the value is no older than the read's start
			on, err := in.Read(ctx)
			if err == nil {
				m.mu.Lock()
				m.r.Inputs[name] = newerLevel(m.r.Inputs[name], Level{On: on, At: at})
				m.mu.Unlock()
			}
			return err
		}})
	}
	return ps
}
