package safestate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/device"
	"hcp-edge/drivers/regmap"
)

// Output is what was done to one output and whether its read-back
// confirms the safe state.
type Output struct {
	Instrument string `json:"instrument"`
	Action     string `json:"action"`
	Confirmed  bool   `json:"confirmed"`
	ReadBack   string `json:"read_back,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Report is the answer of an e-stop, through the daemon or the fallback.
type Report struct {
	Via          string   `json:"via"` // "daemon" or "fallback"
	Operator     string   `json:"operator"`
	AllConfirmed bool     `json:"all_confirmed"`
	Outputs      []Output `json:"outputs"`
	Latched      bool     `json:"latched,omitempty"`
	LatchReason  string   `json:"latch_reason,omitempty"`
	Error        string   `json:"error,omitempty"` // the interlock's halt failures, if any
	TookMS       float64  `json:"took_ms"`
	// HaltMS and ReadBackMS are the daemon's own share of TookMS: the
	// interlock's halts, then every output's read-back (0 in the
	// fallback), which runs while the interlock writes its audit entry of
	// the halts; the daemon replies once both are done. The rest is the
	// CLI's start, the control socket, that audit write when it outlasts
	// the read-backs, and the reply.
	HaltMS     float64 `json:"halt_ms,omitempty"`
	ReadBackMS float64 `json:"read_back_ms,omitempty"`
}

// MS is d in milliseconds, to the microsecond.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Finish sets AllConfirmed: true when there are outputs and every one was
// read back safe.
func (r *Report) Finish() {
	r.AllConfirmed = len(r.Outputs) > 0
	for _, o := range r.Outputs {
		if !o.Confirmed {
			r.AllConfirmed = false
		}
	}
}

// Read-back timeouts of the safe-state paths.
const (
	outputTimeout = 2 * time.Second
	relayAction   = "de-energise the interlock relay (hardware cuts heater power and gas valve power)"
)

// Check reads every output back and reports whether it is safe. halt,
// when true, drives each output safe first (the fallback); the daemon's
// interlock has already done so. Every zone's controller and every I/O
// module's coils are checked (the list shape's rig.zones and rig.modules).
// Every instrument runs concurrently; on the read-back only path the first
// I/O module's coils are read in one exchange when its coil bank holds
// them all.
func Check(ctx context.Context, in *rigconfig.Instruments, halt bool) []Output {
	var (
		mu  sync.Mutex
		out []Output
		wg  sync.WaitGroup
	)
	add := func(r Output) {
		mu.Lock()
		out = append(out, r)
		mu.Unlock()
	}
	run := func(name, action string, f func(ctx context.Context) (string, bool, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, outputTimeout)
			defer cancel()
			rb, ok, err := f(c)
			r := Output{Instrument: name, Action: action, Confirmed: ok && err == nil, ReadBack: rb}
			if err != nil {
				r.Error = err.Error()
			}
			add(r)
		}()
	}
	if in.RelayOut != nil {
		relay := in.RelayOut
		run("relay", relayAction, func(ctx context.Context) (string, bool, error) {
			if halt {
				if err := relay.Halt(ctx); err != nil {
					return "", false, err
				}
			}
			on, err := relay.State(ctx)
			return "relay_fb=" + Energised(on), err == nil && !on, err
		})
	} else if halt {
		add(Output{Instrument: "relay", Action: relayAction, Error: "not reachable: " + errText(in.Unreachable["gpio"])})
	}
	heaterOff := func(f *regmap.Controller) {
		run(f.String(), "heater off", func(ctx context.Context) (string, bool, error) {
			if halt {
				if err := f.Halt(ctx); err != nil {
					return "", false, err
				}
			}
			// The heater-enable word alone, ahead of the routine polls
			// (device.WithUrgent): on an RS-485 line that several
			// controllers share at 19200 baud, a whole status read of each
			// behind the monitor's polls took 300 ms (TestTwoZoneEStopLatency).
			on, err := f.HeaterEnabled(device.WithUrgent(ctx))
			if err != nil {
				return "", false, err
			}
			return fmt.Sprintf("heater_enable=%d", b2i(on)), !on, nil
		})
	}
	if f := in.Furnace; f != nil {
		heaterOff(f)
	} else {
		add(Output{Instrument: "furnace", Action: "heater off", Error: "not reachable: " + errText(in.Unreachable["furnace"])})
	}
	zones := in.Config().ZoneEntries()
	for i := 1; i < len(in.Zones); i++ { // the other zones of the list shape (rig.zones)
		if f := in.Zones[i]; f != nil {
			heaterOff(f)
		} else if i < len(zones) {
			add(Output{Instrument: zones[i].Controller, Action: "heater off", Error: "not reachable: " + errText(in.Unreachable[zones[i].Controller])})
		}
	}
	if m := in.DIO; m != nil && !halt && coilBank(m.Switches()) != nil {
		// Read-back only (the daemon, after the interlock's halts): every
		// coil in one transaction (FC 01 over the bank) instead of one
		// each, queued one behind the other on the module's connection.
		sws := m.Switches()
		bank := coilBank(sws)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, outputTimeout)
			defer cancel()
			levels, err := bank.Levels(c)
			for _, sw := range sws {
				r := Output{Instrument: "dio/" + sw.String(), Action: "coil to " + OnOff(sw.SafeState())}
				if _, i := sw.Bank(); err == nil && i < len(levels) {
					r.ReadBack, r.Confirmed = "coil="+OnOff(levels[i]), levels[i] == sw.SafeState()
				} else if err != nil {
					r.Error = err.Error()
				} else {
					r.Error = fmt.Sprintf("coil bank read %d levels, the coil is at %d", len(levels), i)
				}
				add(r)
			}
		}()
	} else if m != nil {
		for _, sw := range m.Switches() {
			run("dio/"+sw.String(), "coil to "+OnOff(sw.SafeState()), func(ctx context.Context) (string, bool, error) {
				if halt {
					if err := sw.Halt(ctx); err != nil {
						return "", false, err
					}
				}
				on, err := sw.State(ctx)
				return "coil=" + OnOff(on), err == nil && on == sw.SafeState(), err
			})
		}
	} else {
		add(Output{Instrument: "dio", Action: "coils to their safe levels", Error: "not reachable: " + errText(in.Unreachable["dio"])})
	}
	modules := in.Config().ModuleEntries()
	for i := 1; i < len(in.Modules); i++ { // the other modules of the list shape (rig.modules), a coil at a time
		m := in.Modules[i]
		if m == nil {
			if i < len(modules) {
				add(Output{Instrument: modules[i].Name, Action: "coils to their safe levels", Error: "not reachable: " + errText(in.Unreachable[modules[i].Name])})
			}
			continue
		}
		for _, sw := range m.Switches() {
			run(m.String()+"/"+sw.String(), "coil to "+OnOff(sw.SafeState()), func(ctx context.Context) (string, bool, error) {
				if halt {
					if err := sw.Halt(ctx); err != nil {
						return "", false, err
					}
				}
				on, err := sw.State(ctx)
				return "coil=" + OnOff(on), err == nil && on == sw.SafeState(), err
			})
		}
	}
	opened := map[string]bool{}
	for _, mfc := range in.MFCs {
		opened[mfc.String()] = true
		run(mfc.String(), "hold valve closed, setpoint 0", func(ctx context.Context) (string, bool, error) {
			if halt {
				if err := mfc.Halt(ctx); err != nil {
					return "", false, err
				}
			}
			st, err := mfc.ReadFlow(ctx)
			if err != nil {
				return "", false, err
			}
			held := slices.ContainsFunc(st.Flags, func(f string) bool { return strings.EqualFold(f, "HLD") })
			return fmt.Sprintf("setpoint=%s flow=%s flags=%v", st.Setpoint, st.Flow, st.Flags), held && st.Setpoint == 0, nil
		})
	}
	for name, err := range in.Unreachable {
		if !strings.HasPrefix(name, "mfc") {
			continue
		}
		msg := "not reachable: " + err.Error()
		if errors.Is(err, syscall.EBUSY) || strings.Contains(err.Error(), "busy") {
			msg += " (the port is held exclusively by another process, e.g. a hung daemon; the de-energised relay unpowers the gas line valves)"
		}
		add(Output{Instrument: name, Action: "hold valve closed, setpoint 0", Error: msg})
	}
	if sp := in.Raman; sp != nil && halt {
		run(sp.String(), "stop acquisition (laser off)", func(ctx context.Context) (string, bool, error) {
			if err := sp.Halt(ctx); err != nil {
				return "", false, err
			}
			return "STOP acknowledged", true, nil
		})
	}
	wg.Wait()
	sort.SliceStable(out, func(i, j int) bool { // sort: no generic instantiation per element type in the binary
		return func(a, b Output) int { return strings.Compare(rank(a.Instrument), rank(b.Instrument)) }(out[i], out[j]) < 0
	})
	return out
}

// coilBank is the bank that reads every one of sws in one exchange, or nil
// when there is none (addresses not contiguous) or they are not all in it.
func coilBank(sws []*regmap.Switch) device.LevelBank {
	var bank device.LevelBank
	for _, sw := range sws {
		b, _ := sw.Bank()
		if b == nil || (bank != nil && b != bank) {
			return nil
		}
		bank = b
	}
	return bank
}

// rank orders the report: relay, furnace, dio, mfcs, the rest.
func rank(name string) string {
	switch {
	case name == "relay":
		return "0"
	case name == "furnace":
		return "1"
	case strings.HasPrefix(name, "dio"):
		return "2" + name
	case strings.HasPrefix(name, "mfc"):
		return "3" + name
	}
	return "4" + name
}

// Energised names a relay's level: "energised" or "de-energised".
func Energised(on bool) string {
	if on {
		return "energised"
	}
	return "de-energised"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func errText(err error) string {
	if err == nil {
		return "not built"
	}
	return err.Error()
}

// OnOff names a switch's level: "on" or "off".
func OnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
