package hil

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/alicat"
	"hcp-edge/drivers/gpio"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/raman"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/simgpio"
	"hcp-edge/drivers/tpg"
)

// FaultTableEnv names the file TestFaultTable writes its markdown table to.
const FaultTableEnv = "HCP_FAULT_TABLE"

// Short driver settings so the table runs quickly.
const (
	faultTimeout = 200 * time.Millisecond
	faultRetries = 1
	faultPoll    = 10 * time.Millisecond
	faultWait    = 10 * time.Second // hang guard per observation
	// ramanTransfer is the Raman driver's allowance beyond the integration
	// (and its timeout for STOP).
	ramanTransfer = 300 * time.Millisecond
)

// faultRow is one line of the fault table: a fault, how the driver must see
// it, and what a good reading is once it clears.
type faultRow struct {
	fault, target, transport string
	// setup prepares the rig (optional).
	setup func(ctx context.Context) error
	// observe is polled after injection until it reports the documented
	// observation (ok). An error that is not the documented one fails the row.
	observe func(ctx context.Context) (obs string, ok bool, err error)
	// good reports a good reading: polled before injection and after clearing.
	good func(ctx context.Context) (bool, error)
	// teardown restores the rig (optional).
	teardown func(ctx context.Context) error
	// within, when set, is the driver's own bound for the call that observes
	// the fault (its timeout times its attempts): the observing call must
	// return within it, plus a generous allowance for a loaded machine.
	within time.Duration
}

// slack is the allowance on top of a driver's own timeout bound: a hang
// guard for a loaded 2-core machine, not a performance assertion.
const slack = time.Second

// expectErr builds an observation: call's error must wrap one of want.
func expectErr(call func(ctx context.Context) error, want ...error) func(ctx context.Context) (string, bool, error) {
	return func(ctx context.Context) (string, bool, error) {
		err := call(ctx)
		if err == nil {
			return "", false, nil
		}
		for _, w := range want {
			if errors.Is(err, w) {
				return sentinelName(err), true, nil
			}
		}
		return "", false, fmt.Errorf("unexpected error %w (want %v)", err, want)
	}
}

// goodIf builds a recovery check from a call that must succeed.
func goodIf(call func(ctx context.Context) error) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		err := call(ctx)
		return err == nil, err
	}
}

func sentinelName(err error) string {
	for _, s := range []struct {
		e error
		n string
	}{
		{device.ErrTimeout, "ErrTimeout"}, {device.ErrChecksum, "ErrChecksum"}, {device.ErrFrame, "ErrFrame"},
		{device.ErrSensor, "ErrSensor"}, {device.ErrRejected, "ErrRejected"}, {device.ErrReadback, "ErrReadback"},
	} {
		if errors.Is(err, s.e) {
			return s.n
		}
	}
	return err.Error()
}

// faultRig is the rig of the fault table with every driver on it.
type faultRig struct {
	*sim
	furnace map[string]*regmap.Controller // by transport
	dio     map[string]*regmap.Module
	mfc     map[string]*alicat.MFC // by gas
	gauge   *tpg.Gauge
	raman   *raman.Spectrometer
	inputs  map[string]*gpio.Input // estop, leak
}

func newFaultRig(t *testing.T) *faultRig {
	s := startRig(t, 300)
	ctx := ctxFor(t)
	fr := &faultRig{sim: s, furnace: map[string]*regmap.Controller{}, dio: map[string]*regmap.Module{},
		mfc: map[string]*alicat.MFC{}, inputs: map[string]*gpio.Input{}}
	for _, tr := range transports {
		b := s.bus(tr, faultTimeout, faultRetries)
		fr.furnace[tr] = s.furnace(b)
		fr.dio[tr] = s.dio(b)
	}
	for _, g := range gases {
		fr.mfc[g.gas] = s.mfc(g, faultTimeout)
	}
	fr.gauge = s.gauge(faultTimeout)
	fr.raman = s.raman(ramanTransfer)
	c := s.gpioClient()
	for _, name := range []string{simgpio.EStop, simgpio.Leak} {
		o := gpio.DefaultInputOpts(name)
		o.Wait = 100 * time.Millisecond
		o.ReadTimeout = time.Second
		in, err := gpio.NewInput(c.Pin(name), o)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = in.Close() })
		fr.inputs[name] = in
	}
	s.energise(ctx)
	return fr
}

// rows returns every fault of configs/rig-protocols.md's table, per target
// and transport.
func (fr *faultRig) rows() []faultRow {
	var rows []faultRow
	status := func(tr string) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := fr.furnace[tr].Status(ctx); return err }
	}
	door := func(tr string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			in, err := fr.dio[tr].Input("door_closed")
			if err != nil {
				return err
			}
			_, err = in.Read(ctx)
			return err
		}
	}
	readFlow := func(gas string) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := fr.mfc[gas].ReadFlow(ctx); return err }
	}
	readGauge := func(ctx context.Context) error { _, err := fr.gauge.ReadPressure(ctx); return err }
	acquire := func(ctx context.Context) error { _, err := fr.raman.Acquire(ctx, 20*time.Millisecond); return err }

	// Comms faults: every device, both Modbus transports.
	for _, tr := range transports {
		for _, dev := range []struct {
			name string
			call func(context.Context) error
		}{{"furnace", status(tr)}, {"dio", door(tr)}} {
			corrupt := device.ErrFrame // TCP: byte count off by 2
			if tr == modbus.TransportRTU {
				corrupt = device.ErrChecksum
			}
			rows = append(rows,
				faultRow{fault: "silent", target: dev.name, transport: tr, within: (faultRetries + 1) * faultTimeout,
					observe: expectErr(dev.call, device.ErrTimeout), good: goodIf(dev.call)},
				faultRow{fault: "corrupt", target: dev.name, transport: tr,
					observe: expectErr(dev.call, corrupt), good: goodIf(dev.call)})
		}
	}
	serial := []struct {
		target  string
		call    func(context.Context) error
		corrupt []error
	}{
		{"mfc-ar", readFlow("ar"), []error{device.ErrFrame}},
		{"mfc-h2", readFlow("h2"), []error{device.ErrFrame}},
		{"mfc-h2s", readFlow("h2s"), []error{device.ErrFrame}},
		{"gauge", readGauge, []error{device.ErrFrame}},
		{"raman", acquire, []error{device.ErrChecksum, device.ErrFrame}},
	}
	for _, d := range serial {
		within := faultTimeout
		if d.target == "raman" { // wait for the block, then STOP unanswered
			within = fr.raman.Expected(20*time.Millisecond) + 2*ramanTransfer
		}
		rows = append(rows,
			faultRow{fault: "silent", target: d.target, transport: "serial", within: within,
				observe: expectErr(d.call, device.ErrTimeout), good: goodIf(d.call)},
			faultRow{fault: "corrupt", target: d.target, transport: "serial",
				observe: expectErr(d.call, d.corrupt...), good: goodIf(d.call)})
	}

	// Thermocouple faults.
	for _, tr := range transports {
		rows = append(rows, faultRow{fault: "tc-open", transport: tr,
			observe: func(ctx context.Context) (string, bool, error) {
				st, err := fr.furnace[tr].Status(ctx)
				if errors.Is(err, device.ErrSensor) {
					if st.Alarms&device.AlarmSensorBreak == 0 {
						return "", false, fmt.Errorf("ErrSensor without the sensor-break alarm: %+v", st)
					}
					return "ErrSensor (alarm sensor break)", true, nil
				}
				return "", false, err
			},
			good: goodIf(status(tr))})
	}
	f := fr.furnace[modbus.TransportTCP]
	var frozenPV, frozenTrue float64
	rows = append(rows, faultRow{fault: "tc-frozen", transport: "tcp",
		setup: func(ctx context.Context) error {
			if err := f.ConfigureWatchdog(ctx, 0); err != nil {
				return err
			}
			if err := f.SetSetpoint(ctx, device.Celsius(500)); err != nil {
				return err
			}
			if err := f.SetHeater(ctx, true); err != nil {
				return err
			}
			frozenPV = math.NaN()
			return eventually(ctx, faultPoll, func() (bool, error) {
				st, err := f.Status(ctx)
				return err == nil && st.ProcessValue.Celsius() > 60, err
			})
		},
		observe: func(ctx context.Context) (string, bool, error) {
			st, err := f.Status(ctx)
			if err != nil {
				return "", false, err
			}
			pv, truth := st.ProcessValue.Celsius(), fr.p.FurnaceTemperature()
			if math.IsNaN(frozenPV) || pv != frozenPV {
				frozenPV, frozenTrue = pv, truth
				return "", false, nil
			}
			if math.Abs(truth-frozenTrue) > 5 {
				return fmt.Sprintf("PV stuck at %.1f °C, true %.1f → %.1f °C", pv, frozenTrue, truth), true, nil
			}
			return "", false, nil
		},
		good: func(ctx context.Context) (bool, error) {
			pv, err := bracket(fr.p.FurnaceTemperature, func() (float64, error) {
				st, err := f.Status(ctx)
				return st.ProcessValue.Celsius(), err
			})
			if err != nil {
				return false, err
			}
			return (math.IsNaN(frozenPV) || pv.got != frozenPV) && pv.within(2), nil
		},
		teardown: func(ctx context.Context) error { return f.Halt(ctx) },
	})
	var runawaySP float64
	rows = append(rows, faultRow{fault: "thermal-runaway", transport: "tcp",
		setup: func(ctx context.Context) error {
			if err := f.Halt(ctx); err != nil {
				return err
			}
			st, err := f.Status(ctx)
			if err != nil {
				return err
			}
			runawaySP = math.Round(st.ProcessValue.Celsius() + 20)
			return f.SetSetpoint(ctx, device.Celsius(runawaySP))
		},
		observe: func(ctx context.Context) (string, bool, error) {
			st, err := f.Status(ctx)
			if err != nil {
				return "", false, err
			}
			if !st.HeaterEnabled && st.ProcessValue.Celsius() > runawaySP {
				return fmt.Sprintf("PV %.1f > SP %.0f °C, heater disabled, output %.0f %%",
					st.ProcessValue.Celsius(), runawaySP, float64(st.OutputPower)), true, nil
			}
			return "", false, nil
		},
		good: func(ctx context.Context) (bool, error) {
			st, err := f.Status(ctx)
			return err == nil && st.OutputPower == 0 && !st.HeaterEnabled, err
		},
	})

	// Stuck-open MFCs.
	for _, g := range gases {
		m := fr.mfc[g.gas]
		rows = append(rows, faultRow{fault: "mfc-stuck-open", target: g.gas, transport: "serial",
			setup: func(ctx context.Context) error { return m.SetFlow(ctx, device.SCCM(g.fullScale/10)) },
			observe: func(ctx context.Context) (string, bool, error) {
				st, err := m.ReadFlow(ctx)
				if err != nil {
					return "", false, err
				}
				if st.Flow > m.FullScale() && hasFlag(st.Flags, "MOV") {
					return fmt.Sprintf("flow %.1f > FS %.0f sccm, MOV", st.Flow.SCCM(), g.fullScale), true, nil
				}
				return "", false, nil
			},
			good: func(ctx context.Context) (bool, error) {
				st, err := m.ReadFlow(ctx)
				return err == nil && !hasFlag(st.Flags, "MOV") && st.Flow <= m.FullScale(), err
			},
			teardown: func(ctx context.Context) error { return m.Halt(ctx) },
		})
	}

	// GPIO inputs through drivers/gpio over simgpio.
	for _, in := range []struct{ fault, pin string }{{"gas-leak", simgpio.Leak}, {"estop", simgpio.EStop}} {
		input := fr.inputs[in.pin]
		rows = append(rows, faultRow{fault: in.fault, transport: "gpio",
			observe: func(ctx context.Context) (string, bool, error) {
				active, err := input.Read(ctx)
				if err != nil {
					return "", false, err
				}
				return in.pin + " input active", active, nil
			},
			good: func(ctx context.Context) (bool, error) {
				active, err := input.Read(ctx)
				return err == nil && !active, err
			},
		})
	}

	// Vacuum loss, seen by the gauge.
	m := fr.dio[modbus.TransportTCP]
	const lossPa = 1000.0
	rows = append(rows, faultRow{fault: "vacuum-loss", transport: "serial",
		setup: func(ctx context.Context) error {
			for _, name := range []string{"pump", "gate_valve"} {
				sw, err := m.Switch(name)
				if err != nil {
					return err
				}
				if err := sw.Set(ctx, true); err != nil {
					return err
				}
			}
			return eventually(ctx, faultPoll, func() (bool, error) {
				r, err := fr.gauge.ReadPressure(ctx)
				return err == nil && r.Pressure.Pascal() < 50, err
			})
		},
		observe: func(ctx context.Context) (string, bool, error) {
			r, err := fr.gauge.ReadPressure(ctx)
			if err != nil {
				return "", false, err
			}
			return fmt.Sprintf("gauge %.3g Pa > %.0f Pa", r.Pressure.Pascal(), lossPa), r.Pressure.Pascal() > lossPa, nil
		},
		good: func(ctx context.Context) (bool, error) {
			r, err := fr.gauge.ReadPressure(ctx)
			return err == nil && r.Pressure.Pascal() < lossPa, err
		},
		teardown: func(ctx context.Context) error { return m.Halt(ctx) },
	})

	// Door open, on both transports.
	for _, tr := range transports {
		in, _ := fr.dio[tr].Input("door_closed")
		rows = append(rows, faultRow{fault: "door-open", transport: tr,
			observe: func(ctx context.Context) (string, bool, error) {
				closed, err := in.Read(ctx)
				if err != nil {
					return "", false, err
				}
				return "door_closed false", !closed, nil
			},
			good: func(ctx context.Context) (bool, error) {
				closed, err := in.Read(ctx)
				return err == nil && closed, err
			},
		})
	}
	return rows
}

// faultResult is one measured line of the table.
type faultResult struct {
	row              faultRow
	observed         string
	detect, recovery time.Duration
	err              error
}

// run injects the row's fault through the control API, polls until the
// driver observes it, clears it and polls until the next good reading.
func (fr *faultRig) run(ctx context.Context, row faultRow) faultResult {
	res := faultResult{row: row}
	fail := func(format string, a ...any) faultResult {
		res.err = fmt.Errorf(format, a...)
		_ = fr.ctl.Clear(ctx, "all", "")
		return res
	}
	if row.setup != nil {
		// The setup is the precondition, not what the row measures: a write
		// that the short driver timeout gives up on (a loaded machine) is
		// tried again until faultWait; any other error fails the row.
		sctx, cancel := context.WithTimeout(ctx, faultWait)
		var serr error
		err := eventually(sctx, faultPoll, func() (bool, error) {
			serr = row.setup(sctx)
			return serr == nil || !errors.Is(serr, device.ErrTimeout), nil
		})
		cancel()
		if err == nil {
			err = serr
		}
		if err != nil {
			return fail("setup: %v", err)
		}
	}
	if err := eventually(ctx, faultPoll, func() (bool, error) { return row.good(ctx) }); err != nil {
		return fail("no good reading before the fault: %v", err)
	}
	t0 := time.Now()
	if err := fr.ctl.Inject(ctx, row.fault, row.target); err != nil {
		return fail("inject: %v", err)
	}
	octx, cancel := context.WithTimeout(ctx, faultWait)
	defer cancel()
	for {
		tc := time.Now()
		obs, ok, err := row.observe(octx)
		took := time.Since(tc)
		if err != nil {
			return fail("while observing: %v", err)
		}
		if ok && row.within > 0 && took > row.within+slack {
			return fail("%s observed after %v, driver bound %v", obs, took, row.within)
		}
		if ok {
			res.observed, res.detect = obs, time.Since(t0)
			break
		}
		if octx.Err() != nil {
			return fail("not observed within %v", faultWait)
		}
		time.Sleep(faultPoll)
	}
	t1 := time.Now()
	if err := fr.ctl.Clear(ctx, row.fault, row.target); err != nil {
		return fail("clear: %v", err)
	}
	rctx, cancel2 := context.WithTimeout(ctx, faultWait)
	defer cancel2()
	var last error
	for {
		ok, err := row.good(rctx)
		if ok {
			res.recovery = time.Since(t1)
			break
		}
		last = err
		if rctx.Err() != nil {
			return fail("no recovery within %v: %v", faultWait, last)
		}
		time.Sleep(faultPoll)
	}
	if row.teardown != nil {
		// The teardown puts the instrument back for the next row; it is not
		// timed. With the table's short driver timeout (faultTimeout) one
		// slow answer on a loaded machine (make test-under-load: an MFC's
		// halt over its pty) must not fail the row, so it is tried again
		// within the hang guard, and fails the row only if it never succeeds.
		tctx, cancel3 := context.WithTimeout(ctx, faultWait)
		defer cancel3()
		for tries := 1; ; tries++ {
			err := row.teardown(tctx)
			if err == nil {
				break
			}
			if tctx.Err() != nil {
				res.err = fmt.Errorf("teardown (%d tries): %v", tries, err)
				break
			}
			time.Sleep(faultPoll)
		}
	}
	return res
}

func markdown(results []faultResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| fault | target | transport | observed error | detect ms | recover ms |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---:|---:|\n")
	for _, r := range results {
		target := r.row.target
		if target == "" {
			target = "–"
		}
		obs, det, rec := r.observed, fmt.Sprintf("%.0f", ms(r.detect)), fmt.Sprintf("%.0f", ms(r.recovery))
		if r.err != nil {
			obs, det, rec = "FAILED: "+r.err.Error(), "–", "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.row.fault, target, r.row.transport, obs, det, rec)
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TestFaultTable injects every fault of configs/rig-protocols.md's table,
// observes it through the real drivers as documented, clears it and measures
// detection and recovery times.
func TestFaultTable(t *testing.T) {
	fr := newFaultRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows := fr.rows()
	covered := map[string]bool{}
	var results []faultResult
	for _, row := range rows {
		if testing.Short() && row.transport == modbus.TransportRTU && row.fault != "corrupt" {
			continue // the RTU variants of transport-independent faults
		}
		covered[row.fault] = true
		res := fr.run(ctx, row)
		if res.err != nil {
			t.Errorf("%s %s via %s: %v", row.fault, row.target, row.transport, res.err)
		}
		results = append(results, res)
	}
	for _, name := range []string{"thermal-runaway", "tc-open", "tc-frozen", "silent", "corrupt",
		"mfc-stuck-open", "gas-leak", "vacuum-loss", "estop", "door-open"} {
		if !covered[name] {
			t.Errorf("fault %s not in the table", name)
		}
	}
	table := markdown(results)
	t.Logf("fault table (driver timeout %v, %d retry, poll %v):\n%s", faultTimeout, faultRetries, faultPoll, table)
	if path := os.Getenv(FaultTableEnv); path != "" {
		hdr := fmt.Sprintf("Fault table: drivers/hil TestFaultTable, driver timeout %v, %d retry, poll every %v, sim time scale 300.\n\n",
			faultTimeout, faultRetries, faultPoll)
		if err := os.WriteFile(path, []byte(hdr+table), 0o644); err != nil {
			t.Errorf("write %s: %v", path, err)
		}
	}
}
