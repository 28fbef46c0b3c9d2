package hil

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hcp-edge/cmd/hiltest/hilbench"
	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/envelope/internal/rawkey"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/session/audit"
)

// hangGuard bounds every wait of these tests; it is a guard against hangs, not
// a performance assertion.
const hangGuard = 20 * time.Second

// simScale is the simulator's time scale of the trip tests (sim seconds per
// wall second): fast enough to heat the furnace in a fraction of a second.
// Comms timings (polls, watchdog, comms timeout) are wall clock whatever it is.
const simScale = 3000

// logAudit appends every entry to a hash-chained audit log in a bbolt file,
// then to the bench's in-memory record for the assertions.
type logAudit struct {
	log    audit.Interlock
	record envelope.Auditor
}

func (a logAudit) Record(ctx context.Context, e envelope.Entry) error {
	if err := a.log.Record(ctx, e); err != nil {
		return err
	}
	return a.record.Record(ctx, e)
}

// bench is one in-process rig with every driver, the interlock over them and
// its monitor (cmd/hiltest/hilbench), and the audit log in a bbolt file.
type bench struct {
	*hilbench.Bench
	t   testing.TB
	log *audit.Log
}

// newBench starts the rig at time scale scale, builds every driver on it, the
// interlock (testdata envelope, allow-all authorizer, audit log in a bbolt
// file) and a started monitor with mopts; the interlock is not armed.
func newBench(t testing.TB, scale float64, mopts envelope.MonitorOpts) *bench {
	t.Helper()
	return newBenchWith(t, scale, mopts, nil)
}

// newBenchWith is newBench with hilbench.Opts.Devices: devices may wrap an
// instrument of the device set before the interlock is built.
func newBenchWith(t testing.TB, scale float64, mopts envelope.MonitorOpts, devices func(*envelope.Rig)) *bench {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	lg, err := audit.Open(db, audit.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{t: t, log: lg}
	b.Bench = hilbench.New(t, hilbench.Opts{TimeScale: scale, Authorizer: hilbench.AllowAll{Session: "hil"},
		Audit: func(record envelope.Auditor) envelope.Auditor {
			return logAudit{log: audit.Interlock{Log: lg}, record: record}
		},
		Monitor: &mopts, Devices: devices, Lifetime: 5 * time.Minute, Wait: hangGuard, Poll: 5 * time.Millisecond})
	return b
}

// waitFor polls cond until it holds or the hang guard runs out.
func (b *bench) waitFor(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// apply runs a through the interlock and fails the test on an error.
// apply runs a setup action, which must be accepted. A refusal for a stale
// reading (the interlock's own fresh read of an instrument missed its
// timeout on a busy machine: it refuses rather than guesses), or a write the
// device did not answer in time (device.ErrTimeout), is tried again once the
// monitor has read every instrument anew, within the hang guard; any other
// refusal fails the test at once. The actions a test is about go
// through refused or the trip checks, never through this retry.
func (b *bench) apply(a envelope.Action) {
	b.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		_, err := b.Interlock.ApplyKeyed(rawkey.Key{}, b.Ctx, "token", a)
		var v *envelope.Violation
		if err == nil {
			return
		}
		stale := errors.As(err, &v) && v.Rule == envelope.RuleStale
		if !stale && !errors.Is(err, device.ErrTimeout) || time.Now().After(deadline) {
			b.t.Fatalf("apply %v: %v", a, err)
		}
		b.t.Logf("apply %v: %v: again after fresh readings", a, err)
		since := time.Now()
		live := freshParts(b.Monitor.Readings(), since.Add(-b.Interlock.View().Envelope().MaxReadingAge()))
		b.waitFor("fresh readings", func() bool { return len(freshParts(b.Monitor.Readings(), since)) >= len(live) })
	}
}

// freshParts names the parts of r read after since (a silent instrument's
// part never is: the retry waits for the live ones only).
func freshParts(r envelope.Readings, since time.Time) []string {
	var parts []string
	add := func(name string, at time.Time) {
		if at.After(since) {
			parts = append(parts, name)
		}
	}
	add("furnace", r.Furnace.At)
	add("gauge", r.Pressure.At)
	for gas, f := range r.Flows {
		add("flow."+gas, f.At)
	}
	for name, l := range r.Switches {
		add("switch."+name, l.At)
	}
	for name, l := range r.Inputs {
		add("input."+name, l.At)
	}
	return parts
}

// refused checks that a is refused with a typed error while latched, and that
// nothing reached the firmware.
func (b *bench) refused(a envelope.Action) {
	b.t.Helper()
	mark := b.mark()
	_, err := b.Interlock.ApplyKeyed(rawkey.Key{}, b.Ctx, "token", a)
	var v *envelope.Violation
	if !errors.As(err, &v) || v.Rule != envelope.RuleLatched || !errors.Is(err, envelope.ErrViolation) {
		b.t.Fatalf("apply %v while latched: %v, want a latched violation", a, err)
	}
	// The monitor may re-assert the procedure's safe outputs meanwhile (and kick
	// the watchdog); anything else reaching the firmware came from the refused
	// action.
	for _, w := range b.Plant.Writes(mark) {
		if !safeDirectionWrite(w) {
			b.t.Fatalf("a refused action reached the firmware: %+v", w)
		}
	}
}

// safeDirectionWrite reports whether w drives an output towards its safe state
// (or only kicks the watchdog): what a trip procedure, its re-assertion and
// the monitor's polling write. The gauge driver writes nothing (it reads the
// controller's unit, UNI, and converts).
func safeDirectionWrite(w plant.Write) bool {
	switch {
	case w.Channel == "watchdog_kick":
		return true
	case w.Device == "furnace" && w.Channel == "heater_enable":
		return w.Value == 0
	case strings.HasPrefix(w.Device, "mfc-") && w.Channel == "hold":
		return w.Value == 1
	case strings.HasPrefix(w.Device, "mfc-") && w.Channel == "setpoint":
		return w.Value == 0
	case w.Device == "gpio" && w.Channel == "relay":
		return w.Value == 0
	case w.Device == "dio" && w.Channel == "coil:scrubber":
		return w.Value == 1
	case w.Device == "dio" && strings.HasPrefix(w.Channel, "coil:"):
		return w.Value == 0
	case w.Device == "raman" && w.Channel == "stop":
		return true
	}
	return false
}

// pumpDown opens the chamber to the running pump and waits for the monitor to
// read it below 1 mbar.
func (b *bench) pumpDown() {
	b.t.Helper()
	b.apply(envelope.SwitchAction("pump", true))
	b.apply(envelope.SwitchAction("gate_valve", true))
	b.waitFor("vacuum", func() bool {
		p := b.Monitor.Readings().Pressure
		return p.Status == device.GaugeOK && p.Pressure < 0.5*device.Millibar
	})
}

// arm energises the interlock relay.
func (b *bench) arm() {
	b.t.Helper()
	if err := b.Interlock.Arm(b.Ctx, "hil-operator"); err != nil {
		b.t.Fatalf("arm: %v", err)
	}
	if !b.Plant.Relay() {
		b.t.Fatal("armed, but the plant's relay is off")
	}
}

// heat sets the furnace setpoint and enables the heater (under vacuum).
func (b *bench) heat(c float64) {
	b.t.Helper()
	b.apply(envelope.SetpointAction(device.Celsius(c)))
	b.apply(envelope.HeaterAction(true))
}

func (b *bench) mark() uint64 {
	seq, _ := b.Plant.WriteLogStats()
	return seq
}

// written reports whether the firmware received an accepted write of value
// (any value if NaN) on device/channel after seq.
func (b *bench) written(since uint64, dev, channel string, value float64) (plant.Write, bool) {
	for _, w := range b.Plant.Writes(since) {
		if w.Device == dev && w.Channel == channel && w.Accepted && (math.IsNaN(value) || math.Abs(w.Value-value) < 1e-9) {
			return w, true
		}
	}
	return plant.Write{}, false
}

// expectWrites waits until every (device, channel, value) of want reached the
// firmware after since.
func (b *bench) expectWrites(since uint64, want ...plant.Write) {
	b.t.Helper()
	for _, w := range want {
		b.waitFor(w.Device+" "+w.Channel, func() bool { _, ok := b.written(since, w.Device, w.Channel, w.Value); return ok })
	}
}

// expectNoWrites checks that none of the channels (device/channel pairs)
// received any write after since.
func (b *bench) expectNoWrites(since uint64, channels ...[2]string) {
	b.t.Helper()
	for _, w := range b.Plant.Writes(since) {
		for _, c := range channels {
			if w.Device == c[0] && w.Channel == c[1] {
				b.t.Fatalf("unexpected write %+v", w)
			}
		}
	}
}

func wr(dev, channel string, v float64) plant.Write {
	return plant.Write{Device: dev, Channel: channel, Value: v}
}

// gasLines are the writes that close every gas line: each MFC held with a
// zero setpoint, each line valve closed.
func gasLines() []plant.Write {
	var out []plant.Write
	for _, d := range []string{"mfc-ar", "mfc-h2", "mfc-h2s"} {
		out = append(out, wr(d, "setpoint", 0))
	}
	for _, v := range []string{"ar_valve", "h2_valve", "h2s_valve"} {
		out = append(out, wr("dio", "coil:"+v, 0))
	}
	return out
}

// expectTripped waits for the trip's audit entry and checks the latch.
func (b *bench) expectTripped(trip envelope.Trip, proc envelope.Procedure) envelope.Entry {
	b.t.Helper()
	var e envelope.Entry
	b.waitFor("audited trip "+string(trip), func() bool {
		for _, x := range b.Audit.Entries(envelope.DecisionTripped) {
			if x.Trip == trip {
				e = x
				return true
			}
		}
		return false
	})
	if e.Rule != envelope.Rule(proc) {
		b.t.Fatalf("trip %s ran %s, want %s", trip, e.Rule, proc)
	}
	if latched, why := b.Interlock.Latched(); !latched || why == "" {
		b.t.Fatalf("not latched after %s", trip)
	}
	st := b.Monitor.Status()
	if !st.Latched || len(st.Trips) == 0 {
		b.t.Fatalf("status after %s: %+v", trip, st)
	}
	return e
}

// resetRefused checks that Reset refuses (typed, audited) while the
// condition holds.
func (b *bench) resetRefused() {
	b.t.Helper()
	before := len(b.Audit.Entries(envelope.DecisionRefused))
	err := b.Interlock.Reset(b.Ctx, "hil-operator")
	var v *envelope.Violation
	if !errors.As(err, &v) || v.Rule != envelope.RuleLatched {
		b.t.Fatalf("reset while the condition holds: %v", err)
	}
	if latched, _ := b.Interlock.Latched(); !latched {
		b.t.Fatal("a refused reset cleared the latch")
	}
	if len(b.Audit.Entries(envelope.DecisionRefused)) != before+1 {
		b.t.Fatal("refused reset not audited")
	}
}

// reset clears the latch once the condition is gone and checks the audit log
// chain.
func (b *bench) reset() {
	b.t.Helper()
	if err := b.Interlock.Reset(b.Ctx, "hil-operator"); err != nil {
		b.t.Fatalf("reset: %v", err)
	}
	if latched, _ := b.Interlock.Latched(); latched {
		b.t.Fatal("still latched after reset")
	}
	resets := b.Audit.Entries(envelope.DecisionReset)
	if len(resets) == 0 || resets[len(resets)-1].Operator != "hil-operator" {
		b.t.Fatalf("reset not audited with the operator: %+v", resets)
	}
	n, err := b.log.Verify(b.Ctx)
	if err != nil {
		b.t.Fatalf("audit chain: %v", err)
	}
	if int(n) != b.Audit.Len() {
		b.t.Fatalf("audit log holds %d entries, %d recorded", n, b.Audit.Len())
	}
}
