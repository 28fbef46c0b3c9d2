package hil

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
)

var transports = []string{modbus.TransportTCP, modbus.TransportRTU}

// TestFurnace drives the furnace controller over both Modbus transports:
// status against the simulator's state, writes with read-back proven by the
// write log, a real ramp on the simulator's clock, and the comms watchdog.
// rampRate is TestFurnace's ramp in °C/min: at time scale 300, 25 → 200 °C
// spans about 1.75 s of wall time.
const rampRate = 20.0

func TestFurnace(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			s := startRig(t, 300)
			ctx := ctxFor(t)
			c := s.furnace(s.bus(tr, time.Second, 1))

			st, err := c.Status(ctx)
			if err != nil {
				t.Fatalf("status: %v", err)
			}
			snap := s.p.Snapshot().Furnace
			if math.Abs(st.ProcessValue.Celsius()-snap.TemperatureC) > 1 || st.Setpoint.Celsius() != 25 ||
				st.HeaterEnabled || st.RampRate != 0 || st.Alarms != 0 {
				t.Fatalf("power-on status %+v, simulator %+v", st, snap)
			}

			m := s.mark()
			s.energise(ctx)
			// The ramp rate first, as the CVD executor does: with a rate of 0 the
			// firmware steps its working setpoint to a new setpoint at once, so a
			// plant step between the two writes would skip the ramp entirely.
			if err := c.SetRampRate(ctx, device.KelvinPerMinute(rampRate)); err != nil {
				t.Fatal(err)
			}
			if err := c.SetSetpoint(ctx, device.Celsius(200)); err != nil {
				t.Fatal(err)
			}
			if err := c.ConfigureWatchdog(ctx, 600*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if err := c.SetHeater(ctx, true); err != nil {
				t.Fatal(err)
			}
			// Refused before sending: nothing may reach the firmware.
			if err := c.SetSetpoint(ctx, device.Celsius(1500)); !errors.Is(err, device.ErrOutOfRange) {
				t.Fatalf("setpoint 1500 °C: %v, want ErrOutOfRange", err)
			}
			s.expectWrites(m, []w{
				{"gpio", "gpio", "relay", 0, true}, // NewOutput: safe state first
				{"gpio", "gpio", "relay", 1, true},
				{"furnace", tr, "ramp_rate", rampRate * 10, true},
				{"furnace", tr, "setpoint", 2000, true},
				{"furnace", tr, "watchdog_timeout", 600, true},
				{"furnace", tr, "heater_enable", 1, true},
			})

			// Keep the watchdog alive while the furnace ramps.
			kctx, stopKicks := context.WithCancel(ctx)
			mk := s.mark()
			if err := c.StartWatchdog(kctx, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}

			// The working setpoint ramps at rampRate °C/min of sim time (slow enough
			// to span ~1.75 s of wall time, so a loaded machine still samples it): compare it
			// with the controller's own uptime register (whole sim seconds).
			type sample struct {
				wsp, pv float64
				up      time.Duration
				at      time.Time
			}
			var samples []sample
			err = eventually(ctx, 10*time.Millisecond, func() (bool, error) {
				sn, err := c.Snapshot(ctx)
				if err != nil {
					return false, err
				}
				if sn.WorkingSetpoint.Celsius() < 199 {
					samples = append(samples, sample{sn.WorkingSetpoint.Celsius(), sn.ProcessValue.Celsius(), sn.Uptime, time.Now()})
				}
				return sn.WorkingSetpoint.Celsius() >= 199.95, nil
			})
			if err != nil {
				t.Fatalf("working setpoint never reached 200 °C: %v", err)
			}
			if len(samples) < 2 {
				t.Fatalf("too few samples while ramping: %v", samples)
			}
			a, b := samples[0], samples[len(samples)-1]
			dUp := (b.up - a.up).Seconds()
			if dUp < 20 {
				t.Fatalf("ramp sampled over only %.0f sim s: %+v", dUp, samples)
			}
			rate := (b.wsp - a.wsp) / dUp * 60
			if math.Abs(rate-rampRate) > rampRate/10 {
				t.Errorf("working setpoint ramped at %.1f °C/min of uptime, want %v", rate, rampRate)
			}
			if ratio := dUp / b.at.Sub(a.at).Seconds(); ratio < 300/2.5 || ratio > 300*2.5 {
				t.Errorf("uptime advanced %.0f× wall time, time scale 300", ratio)
			}
			t.Logf("ramp: %d samples, %.1f °C/min over %.0f sim s", len(samples), rate, dUp)

			// The process value follows towards the setpoint.
			var last device.FurnaceStatus
			err = eventually(ctx, 20*time.Millisecond, func() (bool, error) {
				st, err := c.Status(ctx)
				last = st
				return err == nil && math.Abs(st.ProcessValue.Celsius()-200) < 3 && st.OutputPower > 0, err
			})
			if err != nil {
				t.Fatalf("PV never settled near 200 °C: %v (last %+v, true %.1f °C)", err, last, s.p.FurnaceTemperature())
			}
			// The PV against the true temperature at the instant it was read: the
			// furnace still moves at a time scale of 300, so the truth is bracketed.
			pv, err := bracket(s.p.FurnaceTemperature, func() (float64, error) {
				st, err := c.Status(ctx)
				return st.ProcessValue.Celsius(), err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !pv.within(1) {
				t.Errorf("PV against the true temperature (°C): %v", pv)
			}

			// Stop kicking: the controller drops its output by itself.
			stopKicks()
			kicks := 0
			for _, e := range s.p.Writes(mk) {
				if e.Channel == "watchdog_kick" {
					if e.Device != "furnace" || e.Via != tr || !e.Accepted {
						t.Fatalf("kick %+v", e)
					}
					kicks++
				}
			}
			if kicks < 2 {
				t.Fatalf("%d watchdog kicks reached the firmware", kicks)
			}
			err = eventually(ctx, 50*time.Millisecond, func() (bool, error) {
				st, err := c.Status(ctx)
				return err == nil && st.Alarms&device.AlarmWatchdog != 0 && !st.HeaterEnabled && st.OutputPower == 0, err
			})
			if err != nil {
				t.Fatalf("watchdog never expired: %v", err)
			}
			// Re-enabling clears the alarm; Halt disables the heater again.
			if err := c.ConfigureWatchdog(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if err := c.SetHeater(ctx, true); err != nil {
				t.Fatal(err)
			}
			if st, err := c.Status(ctx); err != nil || st.Alarms&device.AlarmWatchdog != 0 {
				t.Fatalf("after re-enable: %+v, %v", st, err)
			}
			m = s.mark()
			if err := c.Halt(ctx); err != nil {
				t.Fatal(err)
			}
			s.expectWrites(m, []w{{"furnace", tr, "heater_enable", 0, true}})
			if s.p.Snapshot().Furnace.HeaterEnable {
				t.Fatal("heater enabled in the simulator after Halt")
			}
		})
	}
}

// TestDIOAndGauge switches every coil of the digital I/O module over both
// transports, reads its inputs, and watches the chamber pump down through the
// gauge on its pty.
func TestDIOAndGauge(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			s := startRig(t, 300)
			ctx := ctxFor(t)
			m := s.dio(s.bus(tr, time.Second, 1))
			g := s.gauge(time.Second)

			read := func(name string) bool {
				t.Helper()
				v, err := s.input(m, name).Read(ctx)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return v
			}
			if !read("door_closed") || read("exhaust_ok") || read("pump_running") {
				t.Fatal("power-on inputs: want door closed, exhaust not ok, pump stopped")
			}

			mg := s.mark()
			r0, err := g.ReadPressure(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The driver reads the controller's unit (UNI) and never sets it.
			s.expectWrites(mg, nil)
			if r0.Status != device.GaugeOverrange || math.Abs(r0.Pressure.Millibar()-1000) > 1 {
				t.Fatalf("vented chamber reads %v %v, want overrange at 1000 mbar", r0.Pressure, r0.Status)
			}

			mk := s.mark()
			for _, name := range []string{"pump", "gate_valve", "scrubber"} {
				if err := s.sw(m, name).Set(ctx, true); err != nil {
					t.Fatalf("%s on: %v", name, err)
				}
			}
			s.expectWrites(mk, []w{
				{"dio", tr, "coil:pump", 1, true},
				{"dio", tr, "coil:gate_valve", 1, true},
				{"dio", tr, "coil:scrubber", 1, true},
			})
			if err := eventually(ctx, 10*time.Millisecond, func() (bool, error) {
				return read("pump_running") && read("exhaust_ok"), nil
			}); err != nil {
				t.Fatalf("pump_running/exhaust_ok never came: %v", err)
			}

			// Pumping: the gauge reading falls, and agrees with the simulator.
			prev := r0.Pressure
			falls, reads := 0, 0
			var last device.PressureReading
			if err := eventually(ctx, 20*time.Millisecond, func() (bool, error) {
				r, err := g.ReadPressure(ctx)
				if err != nil {
					return false, err
				}
				reads++
				if r.Pressure < prev {
					falls++
				}
				prev, last = r.Pressure, r
				return r.Status == device.GaugeOK && r.Pressure.Pascal() < 10, nil
			}); err != nil {
				t.Fatalf("chamber never pumped below 10 Pa: %v (last %v)", err, last.Pressure)
			}
			// The readings fall as the chamber pumps down: on two readings at
			// least, unless a stall of the loaded machine let the simulator
			// (at its time scale) pump the chamber down between the first
			// two reads, when the one fall is all there was to see.
			if falls < 1 || falls < 2 && reads > 2 {
				t.Errorf("pressure fell on only %d of %d readings", falls, reads)
			}
			// The gauge against the chamber at the instant it was read (still pumping down).
			pa, err := bracket(s.p.ChamberPressure, func() (float64, error) {
				r, err := g.ReadPressure(ctx)
				return r.Pressure.Pascal(), err
			})
			if err != nil {
				t.Fatal(err)
			}
			if tol := 0.5*pa.lo + 0.5; !pa.within(tol) {
				t.Errorf("gauge against the chamber (Pa): %v", pa)
			}

			// Every valve, on and off, confirmed by read-back and by the plant.
			coils := map[string]int{"ar_valve": 2, "h2_valve": 3, "h2s_valve": 4, "vent_valve": 5}
			for _, name := range []string{"ar_valve", "h2_valve", "h2s_valve", "vent_valve"} {
				sw := s.sw(m, name)
				mk := s.mark()
				for _, on := range []bool{true, false} {
					if err := sw.Set(ctx, on); err != nil {
						t.Fatalf("%s %v: %v", name, on, err)
					}
					if got, err := sw.State(ctx); err != nil || got != on {
						t.Fatalf("%s state %v, %v; want %v", name, got, err, on)
					}
					if s.p.Coil(coils[name]) != on {
						t.Fatalf("plant coil %s is %v, want %v", name, !on, on)
					}
				}
				s.expectWrites(mk, []w{{"dio", tr, "coil:" + name, 1, true}, {"dio", tr, "coil:" + name, 0, true}})
			}

			// Halt: every coil to its safe level (scrubber stays on).
			mk = s.mark()
			if err := m.Halt(ctx); err != nil {
				t.Fatal(err)
			}
			var want []w
			for _, name := range []string{"pump", "gate_valve", "ar_valve", "h2_valve", "h2s_valve", "vent_valve", "scrubber"} {
				v := 0.0
				if name == "scrubber" {
					v = 1
				}
				want = append(want, w{"dio", tr, "coil:" + name, v, true})
			}
			s.expectWrites(mk, want)
			sn := s.p.Snapshot()
			for name, on := range sn.Coils {
				if on != (name == "scrubber") {
					t.Errorf("after Halt coil %s = %v", name, on)
				}
			}
		})
	}
}

// TestMFC drives the three mass-flow controllers on their ptys: set, read,
// hold (Halt) and resume, each write proven by the write log.
func TestMFC(t *testing.T) {
	s := startRig(t, 300)
	ctx := ctxFor(t)
	for _, g := range gases {
		t.Run(g.gas, func(t *testing.T) {
			mfc := s.mfc(g, time.Second)
			if mfc.FullScale() != device.SCCM(g.fullScale) {
				t.Fatalf("full scale %v", mfc.FullScale())
			}
			if v, err := mfc.Version(ctx); err != nil || v != "10v05.0-R24" {
				t.Fatalf("version %q, %v", v, err)
			}
			st, err := mfc.ReadFlow(ctx)
			if err != nil || st.Gas != g.display || math.Abs(st.Flow.SCCM()) > 0.5 || st.Setpoint != 0 {
				t.Fatalf("power-on reading %+v, %v", st, err)
			}

			target := math.Round(g.fullScale*0.4*100) / 100
			m := s.mark()
			if err := mfc.SetFlow(ctx, device.SCCM(target)); err != nil {
				t.Fatal(err)
			}
			if err := mfc.SetFlow(ctx, device.SCCM(g.fullScale+1)); !errors.Is(err, device.ErrOutOfRange) {
				t.Fatalf("above full scale: %v, want ErrOutOfRange", err)
			}
			s.expectWrites(m, []w{{g.name, "serial", "setpoint", target, true}})
			if ps, _ := s.p.MFC(g.gas); ps.SetpointSCCM != target {
				t.Fatalf("simulator setpoint %v, want %v", ps.SetpointSCCM, target)
			}
			if err := eventually(ctx, 10*time.Millisecond, func() (bool, error) {
				st, err = mfc.ReadFlow(ctx)
				return err == nil && math.Abs(st.Flow.SCCM()-target) < 0.02*g.fullScale && st.Setpoint.SCCM() == target, err
			}); err != nil {
				t.Fatalf("flow never reached %v sccm: %v (last %+v)", target, err, st)
			}

			// Halt holds the valve closed (HLD) and zeroes the setpoint.
			m = s.mark()
			if err := mfc.Halt(ctx); err != nil {
				t.Fatal(err)
			}
			s.expectWrites(m, []w{{g.name, "serial", "hold", 1, true}, {g.name, "serial", "setpoint", 0, true}})
			if err := eventually(ctx, 10*time.Millisecond, func() (bool, error) {
				st, err = mfc.ReadFlow(ctx)
				return err == nil && hasFlag(st.Flags, "HLD") && math.Abs(st.Flow.SCCM()) < 0.5, err
			}); err != nil {
				t.Fatalf("flow never stopped under hold: %v (last %+v)", err, st)
			}

			// A new setpoint above zero cancels the hold.
			m = s.mark()
			if err := mfc.SetFlow(ctx, device.SCCM(1.5)); err != nil {
				t.Fatal(err)
			}
			s.expectWrites(m, []w{{g.name, "serial", "setpoint", 1.5, true}, {g.name, "serial", "hold", 0, true}})
			if st, err = mfc.ReadFlow(ctx); err != nil || hasFlag(st.Flags, "HLD") {
				t.Fatalf("after resume %+v, %v", st, err)
			}
			if err := mfc.Halt(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
