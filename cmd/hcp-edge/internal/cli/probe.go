package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/commission"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hcp-edge/internal/safestate"
	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/simgpio"
)

// probeRow is one instrument's answer.
type probeRow struct {
	Instrument string         `json:"instrument"`
	OK         bool           `json:"ok"`
	Reading    string         `json:"reading"`
	Values     map[string]any `json:"values,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// Probe is `hcp-edge probe`: open every instrument, read it once, print
// what it says (read-only).
func Probe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (default: the embedded configs/sim.yaml)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	spectrumMS := fs.Int("spectrum", 0, "also acquire a Raman spectrum with this integration time in ms (0: identify only)")
	timeout := fs.Duration("timeout", 2*time.Second, "time allowed for each instrument")
	writeCheck := fs.Bool("write-check", false, "commissioning: also drive each output to its other level and back, confirming each by read-back "+
		"(needs --operator and the daemon stopped; first de-energises the relay, turns the heater off and zeroes the non-inert flows)")
	operator := fs.String("operator", "", "with --write-check: the technician at the rig")
	if pos, err := parseArgs(fs, args, stdout); err != nil || len(pos) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "hcp-edge probe: unexpected argument %q\n", pos[0])
		}
		return usageExit(err)
	}
	var (
		f   rigconfig.File
		err error
	)
	if *cfgPath == "" {
		f, err = rigconfig.Parse(bytes.NewReader(configs.SimYAML))
	} else {
		f, err = rigconfig.Load(*cfgPath)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge probe: configuration: %v\n", err)
		return ExitUsage
	}
	in, err := rigconfig.Build(f.Rig)
	if err != nil {
		fmt.Fprintf(stderr, "hcp-edge probe: %v\n", err)
		return ExitFailure
	}
	defer in.Close()

	// Identity and profile-dependent settings first, read-only: a unit that
	// differs from its profile fails the probe (and the agent's start).
	findings, verr := in.Verify(ctx, max(*timeout, rigconfig.VerifyTimeout))
	mismatched := len(device.Mismatches(findings))
	rows := probeAll(ctx, in, *timeout, time.Duration(*spectrumMS)*time.Millisecond)
	failed := 0
	for _, r := range rows {
		if !r.OK {
			failed++
		}
	}
	channels := probeChannels(ctx, in, *timeout)
	badCh := badChannels(channels)
	var check *commission.Report
	if *writeCheck {
		rep, err := commission.WriteCheck(ctx, in, commission.Opts{Operator: *operator, ControlSocket: f.Agent.ControlSocket,
			Hazards: f.Rig.HazardOf(), Timeout: *timeout})
		if err != nil {
			what := "no output written"
			if len(rep.Prepared) > 0 {
				what += " (moved toward safe: " + strings.Join(rep.Prepared, ", ") + ")"
			}
			fmt.Fprintf(stderr, "hcp-edge probe --write-check: %s: %v\n", what, err)
			return ExitFailure
		}
		check = &rep
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := map[string]any{"instruments": rows, "failed": failed, "channels": channels, "bad_channels": badCh,
			"settings": findings, "mismatched_settings": mismatched}
		if verr != nil {
			out["settings_error"] = verr.Error()
		}
		if check != nil {
			out["write_check"] = check
		}
		_ = enc.Encode(out)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "INSTRUMENT\tSTATUS\tREADING")
		for _, r := range rows {
			status, text := "ok", r.Reading
			if !r.OK {
				status, text = "FAIL", r.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Instrument, status, text)
		}
		_ = tw.Flush()
		printChannels(stdout, channels)
		printFindings(stdout, findings, verr)
		printWriteCheck(stdout, check)
		if failed > 0 {
			fmt.Fprintf(stdout, "\n%d instrument(s) did not answer correctly\n", failed)
		}
		if badCh > 0 {
			fmt.Fprintf(stdout, "\n%d channel(s) did not answer or read outside the device's declared range\n", badCh)
		}
	}
	if failed > 0 || badCh > 0 || mismatched > 0 || verr != nil || (check != nil && len(check.Unconfirmed) > 0) {
		return ExitFailure
	}
	return ExitOK
}

// printFindings prints each unit's identity and the settings its profile
// depends on, as read (never changed) by device.Verifier.
func printFindings(w io.Writer, fs []device.Finding, err error) {
	if len(fs) == 0 && err == nil {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTRUMENT\tSETTING\tFOUND\tPROFILE EXPECTS\tSTATUS")
	bad := 0
	for _, f := range fs {
		status := "ok"
		if !f.OK {
			status, bad = "MISMATCH", bad+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Instrument, f.Setting, f.Found, f.Expected, status)
	}
	_ = tw.Flush()
	if err != nil {
		fmt.Fprintf(w, "settings not read: %v\n", err)
	}
	if bad > 0 {
		fmt.Fprintf(w, "\n%d setting(s) differ from the profile: the agent refuses to start; fix the unit (or the profile), not the agent\n", bad)
	}
}

func probeAll(ctx context.Context, in *rigconfig.Instruments, timeout, spectrum time.Duration) []probeRow {
	var rows []probeRow
	each := func(name string, d time.Duration, read func(ctx context.Context) (string, map[string]any, error)) {
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		text, values, err := read(c)
		r := probeRow{Instrument: name, OK: err == nil, Reading: text, Values: values}
		if err != nil {
			r.Error = err.Error()
		}
		rows = append(rows, r)
	}
	for _, f := range in.Zones { // Build built every one
		each(f.String(), timeout, func(ctx context.Context) (string, map[string]any, error) {
			s, err := f.Snapshot(ctx)
			if err != nil {
				return "", nil, err
			}
			heater := "off"
			if s.HeaterEnabled {
				heater = "on"
			}
			return fmt.Sprintf("PV %s, setpoint %s (working %s), ramp %s, output %s, heater %s, watchdog %s, alarms %#04x",
					s.ProcessValue, s.Setpoint, s.WorkingSetpoint, s.RampRate, s.OutputPower, heater, s.WatchdogTimeout, uint16(s.Alarms)),
				map[string]any{"pv_c": round1(s.ProcessValue.Celsius()), "setpoint_c": round1(s.Setpoint.Celsius()),
					"output_pct": float64(s.OutputPower), "heater_enabled": s.HeaterEnabled, "alarms": uint16(s.Alarms)}, nil
		})
	}
	for _, m := range in.Modules {
		each(m.String(), timeout, func(ctx context.Context) (string, map[string]any, error) {
			var parts []string
			values := map[string]any{}
			for _, sw := range m.Switches() {
				on, err := sw.State(ctx)
				if err != nil {
					return "", nil, err
				}
				values[sw.String()] = on
				parts = append(parts, fmt.Sprintf("%s=%s", shortName(sw.String()), safestate.OnOff(on)))
			}
			for _, inp := range m.Inputs() {
				name := inp.String()
				v, err := inp.Read(ctx)
				if err != nil {
					return "", nil, err
				}
				values[name] = v
				parts = append(parts, fmt.Sprintf("%s=%t", name, v))
			}
			return strings.Join(parts, " "), values, nil
		})
	}
	for _, m := range in.MFCs {
		each(m.String(), timeout, func(ctx context.Context) (string, map[string]any, error) {
			s, err := m.ReadFlow(ctx)
			if err != nil {
				return "", nil, err
			}
			text := fmt.Sprintf("%s: flow %s, setpoint %s (full scale %s)", s.Gas, s.Flow, s.Setpoint, m.FullScale())
			if len(s.Flags) > 0 {
				text += " [" + strings.Join(s.Flags, " ") + "]"
			}
			return text, map[string]any{"gas": s.Gas, "flow_sccm": s.Flow.SCCM(), "setpoint_sccm": s.Setpoint.SCCM(), "flags": s.Flags}, nil
		})
	}
	for _, g := range in.Gauges {
		each(g.String(), timeout, func(ctx context.Context) (string, map[string]any, error) {
			r, err := g.ReadPressure(ctx)
			if err != nil {
				return "", nil, err
			}
			return fmt.Sprintf("%s (%.4g mbar), %s", r.Pressure, r.Pressure.Millibar(), r.Status),
				map[string]any{"pressure_pa": r.Pressure.Pascal(), "status": r.Status.String()}, nil
		})
	}
	rt := timeout
	if spectrum > 0 {
		rt += in.Raman.Expected(spectrum)
	}
	each(in.Raman.String(), rt, func(ctx context.Context) (string, map[string]any, error) {
		id, err := in.Raman.Identify(ctx)
		if err != nil || spectrum <= 0 {
			return id, map[string]any{"id": id}, err
		}
		s, err := in.Raman.Acquire(ctx, spectrum)
		if err != nil {
			return "", nil, err
		}
		shift, peak := strongestIn(s.Shift, s.Counts, 360, 420)
		return fmt.Sprintf("%s; %d points %.1f..%.1f cm-1, strongest 360..420 cm-1 at %.1f cm-1 (%.0f counts)",
				id, len(s.Shift), s.Shift[0], s.Shift[len(s.Shift)-1], shift, peak),
			map[string]any{"id": id, "points": len(s.Shift)}, nil
	})
	each("gpio", timeout, func(ctx context.Context) (string, map[string]any, error) {
		values := map[string]any{}
		var parts []string
		for _, pin := range []string{simgpio.EStop, simgpio.Leak, simgpio.Relay, simgpio.RelayFB} {
			lvl, err := in.GPIOLevel(ctx, pin)
			if err != nil {
				return "", nil, err
			}
			values[pin] = bool(lvl)
			parts = append(parts, fmt.Sprintf("%s=%s", pin, lvl))
		}
		return strings.Join(parts, " ") + "  (estop and leak are active Low)", values, nil
	})
	return rows
}

func strongestIn(shift, counts []float64, lo, hi float64) (float64, float64) {
	at, best := math.NaN(), -1.0
	for i, s := range shift {
		if s >= lo && s <= hi && counts[i] > best {
			at, best = s, counts[i]
		}
	}
	return at, best
}

func shortName(s string) string {
	if i := strings.LastIndexAny(s, "/ "); i >= 0 {
		return s[i+1:]
	}
	return s
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
