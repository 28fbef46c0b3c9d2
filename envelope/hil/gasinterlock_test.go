package hil

import (
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/envelope/internal/rawkey"
	"hcp-edge/firmware-sim/plant"
)

// flowH2S switches the scrubber on, waits for the exhaust to read OK, opens
// the H2S line and sets 10 sccm (pumped, armed rig).
func (b *bench) flowH2S() {
	b.t.Helper()
	b.apply(envelope.SwitchAction("scrubber", true))
	b.waitFor("exhaust OK", func() bool { return b.Monitor.Readings().Inputs["exhaust_ok"].On })
	b.apply(envelope.SwitchAction("h2s_valve", true))
	b.apply(envelope.FlowAction("H2S", 10))
	b.waitFor("H2S flowing", func() bool { return b.Monitor.Readings().Flows["H2S"].Flow > 5 })
}

// expectLineClosedBy checks that the H2S line's closing reached the
// firmware after mark, by the monitor's trip and before a comms loss could
// have closed it (the comms timeout after the fault), and returns how long
// after the fault it did.
func (b *bench) expectLineClosedBy(mark uint64, fault time.Time) time.Duration {
	b.t.Helper()
	b.expectWrites(mark, wr("dio", "coil:h2s_valve", 0), wr("mfc-h2s", "setpoint", 0))
	w, _ := b.written(mark, "dio", "coil:h2s_valve", 0)
	took := w.At.Sub(fault)
	if ct := b.Interlock.View().Envelope().CommsTimeout(); took >= ct {
		b.t.Fatalf("H2S valve closed %v after the fault: not before the %v comms timeout", took, ct)
	}
	return took
}

// gasInterlockLost runs one gas_interlock_lost trip on the simulated rig:
// H2S flowing with its interlock held, the fault injected at the simulator
// (not through the interlock), the trip audited with the procedure
// close_all_valves_and_alert, every gas line closed and nothing else
// written, the interlock latched; then the fault cleared, the latch reset
// once the line reads closed.
// channels are the channels the trip may name: the first of the fault's
// readings the monitor took.
func gasInterlockLost(t *testing.T, fault string, channels ...string) {
	b := newBench(t, simScale, envelope.DefaultMonitorOpts())
	b.pumpDown()
	b.arm()
	b.flowH2S()
	if st := b.Monitor.Status(); st.Latched || len(st.Trips) != 0 {
		t.Fatalf("H2S flowing with the scrubber on tripped: %+v", st.Trips)
	}
	mark := b.mark()
	at := time.Now()
	if err := b.Plant.Inject(fault, ""); err != nil {
		t.Fatal(err)
	}
	e := b.expectTripped(envelope.TripGasInterlockLost, envelope.ProcCloseValvesAndAlert)
	named := false
	for _, ch := range channels {
		named = named || strings.HasPrefix(e.Reason, string(envelope.TripGasInterlockLost)+" on "+ch+": ")
	}
	if !named || !strings.Contains(e.Reason, "H2S in use") {
		t.Fatalf("reason %q, want H2S in use and one of %v", e.Reason, channels)
	}
	took := b.expectLineClosedBy(mark, at)
	t.Logf("%s: H2S valve closed %v after the fault (monitor period %v)", fault, took.Round(time.Millisecond), envelope.DefaultMonitorOpts().OtherEvery)
	b.expectWrites(mark, gasLines()...)
	b.expectNoWrites(mark, [2]string{"furnace", "heater_enable"}, [2]string{"gpio", "relay"},
		[2]string{"dio", "coil:pump"}, [2]string{"dio", "coil:gate_valve"}, [2]string{"dio", "coil:vent_valve"})
	if !b.Plant.Relay() {
		t.Fatal("close_all_valves_and_alert de-energised the relay")
	}
	b.latchedChecks()
	if _, err := b.Interlock.ApplyKeyed(rawkey.Key{}, b.Ctx, "token", envelope.SwitchAction("h2s_valve", true)); !errors.Is(err, envelope.ErrViolation) {
		t.Fatalf("H2S valve opened while latched: %v", err)
	}
	// The line is closed: the condition is gone once the flow has decayed.
	b.waitFor("H2S stopped", func() bool {
		r := b.Monitor.Readings()
		return r.Flows["H2S"].Flow < 1 && !r.Switches["h2s_valve"].On
	})
	if latched, _ := b.Interlock.Latched(); !latched {
		t.Fatal("latch cleared by itself")
	}
	if n := len(b.Audit.Entries(envelope.DecisionTripped)); n != 1 {
		t.Fatalf("%d trips audited, want 1: %+v", n, b.Audit.Entries(envelope.DecisionTripped))
	}
	b.reset()
	// Unlatched, the gas interlock still holds H2S closed while the fault lasts.
	var err error
	for range 20 {
		_, err = b.Interlock.ApplyKeyed(rawkey.Key{}, b.Ctx, "token", envelope.SwitchAction("h2s_valve", true))
		if v, ok := err.(*envelope.Violation); !ok || v.Rule != envelope.RuleStale {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v, ok := err.(*envelope.Violation); !ok || (v.Rule != envelope.RuleGasSwitch && v.Rule != envelope.RuleGasInput) {
		t.Fatalf("H2S valve with %s active: %v", fault, err)
	}
	if err := b.Plant.Clear(fault, ""); err != nil {
		t.Fatal(err)
	}
}

// TestTripScrubberDrops: H2S flows with the scrubber on; the scrubber drops
// out by itself (plant.FaultScrubberTrip: its output reads off, exhaust_ok
// with it) → gas_interlock_lost within a poll of the DIO, on whichever of
// the scrubber's read-back and exhaust_ok the monitor read first: the H2S
// line closed, the interlock latched.
func TestTripScrubberDrops(t *testing.T) {
	gasInterlockLost(t, plant.FaultScrubberTrip, "switch.scrubber", "input.exhaust_ok")
}

// TestTripExhaustLost: H2S flows with the scrubber on; the exhaust's flow
// switch opens (plant.FaultExhaustLost: exhaust_ok reads 0, the scrubber's
// output stays on) → gas_interlock_lost on input.exhaust_ok.
func TestTripExhaustLost(t *testing.T) {
	gasInterlockLost(t, plant.FaultExhaustLost, "input.exhaust_ok")
}
