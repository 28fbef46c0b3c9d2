// Command rig-sim runs the simulated CVD rig of configs/rig-protocols.md
// (development and HIL tests; not shipped) and talks to a running one.
//
//	rig-sim [run] [--rig RIG] [--dir D] [--modbus-addr A] [--time-scale S] [--relay-on] [--relay-watchdog T] [--mfc-variant V]
//	        [--precursor MoO3|WO3] [--furnace-model sim|eurotherm3200] [--furnace-decimals 0|1|2] [--furnace-ramp-units sec|min|hour] [--furnace-remote-sp on|off] [--dio-model sim|adam6052]
//	        [--gauge-model tpg261|tpg262] [--gauge-continuous]
//	rig-sim status [--json]
//	rig-sim precursor [MoO3|WO3]
//	rig-sim faults
//	rig-sim fault inject NAME [--target X]
//	rig-sim fault clear NAME|all [--target X]
//	rig-sim gpio get PIN
//	rig-sim gpio set relay|heartbeat 0|1
//
// Every sub-command but run takes --dir too (default /tmp/hcp-rig-sim or
// $HCP_RIG_SIM_DIR) to find <dir>/control.sock.
//
// --relay-watchdog T (a Go duration, e.g. 2s; default 0 = no watchdog) fits
// the relay watchdog module of configs/rig-protocols.md: the interlock relay's
// coil drops when the heartbeat pin shows no level change for T (wall clock),
// and stays dropped until relay is written High again while the heartbeat is
// alive.
//
// --rig RIG brings up one of the rigs firmware-sim/plant simulates
// (plant.Rigs; plant.DefaultRig without it): its gas lines on the
// mfc-<gas> controllers, its outputs and its spectrometer window, and,
// unless the flags say otherwise, the instruments its shipped configuration
// names (plant.Rig.Models: a rig on a Eurotherm 3200, an ADAM-6052 and a
// relay watchdog gets them). rig-sim run -h lists the rigs.
//
// A rig with several heated zones (plant.Plant.Zones; the two-zone furnace
// of firmware-sim/plant/twozone.go) has <dir>/modbus-rtu as its zones'
// RS-485 line, zone i's Eurotherm 3200 at unit i + 1 (Modbus TCP keeps the
// I/O module at unit 2 and has no unit 1); the banner and status name each
// zone.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"hcp-edge/firmware-sim/control"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
	"hcp-edge/firmware-sim/serialsim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0) // help was asked for and printed on stdout
		}
		fmt.Fprintln(os.Stderr, "rig-sim:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  rig-sim [run] [--rig RIG] [--dir D] [--modbus-addr A] [--time-scale S] [--relay-on] [--relay-watchdog T] [--mfc-variant V]
          [--precursor MoO3|WO3] [--furnace-model sim|eurotherm3200] [--furnace-decimals 0|1|2] [--furnace-ramp-units sec|min|hour] [--furnace-remote-sp on|off] [--dio-model sim|adam6052]
          [--gauge-model tpg261|tpg262] [--gauge-continuous]
  rig-sim status [--json] [--dir D]
  rig-sim precursor [MoO3|WO3] [--dir D]
  rig-sim faults [--dir D]
  rig-sim fault inject NAME [--target X] [--dir D]
  rig-sim fault clear NAME|all [--target X] [--dir D]
  rig-sim gpio get PIN [--dir D]
  rig-sim gpio set relay|heartbeat 0|1 [--dir D]
`

// run dispatches a command line; it is main without the process around it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return cmdRun(ctx, args, stdout, stderr)
	case "status":
		return cmdStatus(ctx, args, stdout, stderr)
	case "faults":
		return cmdFaults(ctx, args, stdout, stderr)
	case "fault":
		return cmdFault(ctx, args, stdout, stderr)
	case "gpio":
		return cmdGPIO(ctx, args, stdout, stderr)
	case "precursor":
		return cmdPrecursor(ctx, args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("rig-sim "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", rig.DefaultOpts().Dir, "run directory (ptys and sockets)")
	return fs, dir
}

// parse parses flags that may come before or after positional arguments.
// -h and --help print the usage on stdout and return flag.ErrHelp, which main
// turns into exit 0; other problems are printed on the FlagSet's output.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	errOut := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	defer fs.SetOutput(errOut)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				_, _ = stdout.Write(buf.Bytes())
			} else {
				_, _ = errOut.Write(buf.Bytes())
			}
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	d := rig.DefaultOpts()
	fs, dir := newFlags("run", stderr)
	addr := fs.String("modbus-addr", d.ModbusAddr, "Modbus TCP listen address (units 1 and 2)")
	scale := fs.Float64("time-scale", d.TimeScale, "sim seconds per wall-clock second")
	relay := fs.Bool("relay-on", false, "start with the interlock relay energised")
	watchdog := fs.Duration("relay-watchdog", 0, "relay watchdog timeout: the relay's coil drops when the heartbeat pin shows no level change for this long (wall clock), and is energised again only by writing relay High while the heartbeat toggles; 0 = no watchdog")
	precursor := fs.String("precursor", string(plant.MoO3), plant.PrecursorUsage())
	furnaceModel := fs.String("furnace-model", string(plant.FurnaceSim), "controller map on unit 1: sim (configs/rig-protocols.md) or eurotherm3200 (configs/manuals/eurotherm-3200.md; no comms watchdog: use --relay-watchdog)")
	dioModel := fs.String("dio-model", string(plant.DIOSim), "digital I/O map on unit 2: sim (configs/rig-protocols.md) or adam6052 (configs/manuals/adam-6052.md)")
	furnaceDecimals := fs.Int("furnace-decimals", 1, "eurotherm3200: decimal places of temperatures in the 16-bit region (dEC.P): 0, 1 or 2")
	furnaceRamp := fs.String("furnace-ramp-units", string(plant.EuroPerMinute), "eurotherm3200: ramp units of SP.RAT (rmP.U): sec, min or hour")
	furnaceRemote := fs.String("furnace-remote-sp", "off", "eurotherm3200: on = the unit was left in auto with the remote (comms) setpoint selected (273 = 0, 276 = 1); off = local setpoint, manual (the power-on state)")
	rigName := fs.String("rig", string(plant.DefaultRig), plant.RigUsage())
	gaugeModel := fs.String("gauge-model", string(serialsim.TPG261), "gauge controller on <dir>/gauge: tpg261 (one PKR; TID PKR,noSEn) or tpg262 (two PKRs; profile pfeiffer-tpg-262)")
	gaugeContinuous := fs.Bool("gauge-continuous", false, "start the gauge controller in continuous output mode (COM, every 1 s), as a unit left so on the bench: the agent's probe and start refuse it")
	mfcVariant := fs.String("mfc-variant", "", "Alicat firmware the MFCs emulate: "+strings.Join(serialsim.MFCVariants(), "|")+", for every MFC or per gas (ar=slpm,h2=pre6v)")
	rtuBaud := fs.Int("rtu-baud", 0, "baud rate whose line time the RTU line <dir>/modbus-rtu emulates (11 bits a character, 8E1): each exchange answered as late as on a real RS-485 line; 0 = a pty's speed. For wall-clock measurements (an e-stop's time): at a time scale above 1 the line's wall time is stretched as many times in the process")
	verbose := fs.Bool("v", false, "log protocol errors")
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	rk, err := plant.ParseRig(*rigName)
	if err != nil {
		return fmt.Errorf("run: --rig: %w", err)
	}
	if m, ok := rk.Models(); ok {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["furnace-model"] {
			*furnaceModel = string(m.Furnace)
		}
		if !set["dio-model"] {
			*dioModel = string(m.DIO)
		}
		if !set["relay-watchdog"] {
			*watchdog = m.RelayWatchdog
		}
		if !set["gauge-model"] && m.Gauge != "" {
			*gaugeModel = m.Gauge
		}
	}
	if len(pos) > 0 {
		return fmt.Errorf("run: unexpected arguments %q", pos)
	}
	if *scale <= 0 {
		return fmt.Errorf("run: --time-scale must be > 0")
	}
	if *rtuBaud < 0 {
		return fmt.Errorf("run: --rtu-baud must be >= 0 (0: a pty's speed), not %d", *rtuBaud)
	}
	if *watchdog < 0 {
		return fmt.Errorf("run: --relay-watchdog must be >= 0 (0: no watchdog), not %v", *watchdog)
	}
	pr, err := plant.ParsePrecursor(*precursor)
	if err != nil {
		return fmt.Errorf("run: --precursor: %w", err)
	}
	fm, err := plant.ParseFurnaceModel(*furnaceModel)
	if err != nil {
		return fmt.Errorf("run: --furnace-model: %w", err)
	}
	dm, err := plant.ParseDIOModel(*dioModel)
	if err != nil {
		return fmt.Errorf("run: --dio-model: %w", err)
	}
	gm, err := serialsim.ParseGaugeModel(*gaugeModel)
	if err != nil {
		return fmt.Errorf("run: --gauge-model: %w", err)
	}
	gauge := serialsim.GaugeVariant{Model: gm, Continuous: *gaugeContinuous, ContinuousMode: 1}
	mv, err := serialsim.ParseMFCVariants(*mfcVariant)
	if err != nil {
		return fmt.Errorf("run: --mfc-variant: %w", err)
	}
	if *furnaceRemote != "on" && *furnaceRemote != "off" {
		return fmt.Errorf("run: --furnace-remote-sp %q (on or off)", *furnaceRemote)
	}
	euroCfg := plant.EurothermConfig{Decimals: *furnaceDecimals, RampUnits: plant.EuroRampUnit(*furnaceRamp), RemoteSP: *furnaceRemote == "on"}
	if err := euroCfg.Validate(); err != nil {
		return fmt.Errorf("run: --furnace-decimals/--furnace-ramp-units: %w", err)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	r, err := rig.Start(ctx, rig.Opts{
		Dir: *dir, ModbusAddr: *addr, TimeScale: *scale, RelayEnergised: *relay, RelayWatchdog: *watchdog, Precursor: pr,
		FurnaceModel: fm, DIOModel: dm, Rig: rk, Eurotherm: &euroCfg, RTUBaud: *rtuBaud,
		Logger: logger, StartSerial: rig.SerialInstrumentsWith(serialsim.Opts{Gauge: gauge, MFCVariants: mv}),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rig-sim: rig %s, time scale %g (sim s per wall s), relay %s, precursor %s\n", rk, *scale, map[bool]string{true: "energised", false: "de-energised"}[*relay], pr)
	fmt.Fprintf(stdout, "  models       furnace %s, dio %s, gauge %s%s\n", fm, dm, gm, map[bool]string{true: " (continuous output on)"}[*gaugeContinuous])
	if *mfcVariant != "" {
		fmt.Fprintf(stdout, "  mfc variant  %s\n", *mfcVariant)
	}
	if *rtuBaud > 0 {
		fmt.Fprintf(stdout, "  rtu line     %d baud, 11 bits a character (each exchange as slow as on the line)\n", *rtuBaud)
	}
	if fm == plant.FurnaceEurotherm3200 {
		fmt.Fprintf(stdout, "  eurotherm    dEC.P %d decimals, rmP.U per %s, remote setpoint %s\n", euroCfg.Decimals, euroCfg.RampUnits, *furnaceRemote)
	}
	if *watchdog > 0 {
		fmt.Fprintf(stdout, "  relay watchdog %v: the relay drops without a heartbeat edge for that long\n", *watchdog)
	}
	if zones := r.Plant().Zones(); len(zones) > 0 {
		var units []string
		for i, z := range zones {
			units = append(units, fmt.Sprintf("unit %d %s zone (%s)", i+1, z, r.Plant().ZoneDevice(i)))
		}
		fmt.Fprintf(stdout, "  modbus tcp   %s (unit 2 dio)\n", r.ModbusAddr())
		fmt.Fprintf(stdout, "  modbus rtu   %s (RS-485, %s %s; 19200 8E1)\n", r.RTUPath(), fm, strings.Join(units, ", "))
	} else {
		fmt.Fprintf(stdout, "  modbus tcp   %s (unit 1 furnace, unit 2 dio)\n", r.ModbusAddr())
		fmt.Fprintf(stdout, "  modbus rtu   %s (units 1, 2; 19200 8E1)\n", r.RTUPath())
	}
	var links []string
	for _, g := range r.Plant().Gases() {
		links = append(links, "mfc-"+g)
	}
	for _, n := range append(links, "gauge", "raman") {
		fmt.Fprintf(stdout, "  %-12s %s\n", n, filepath.Join(r.Dir(), n))
	}
	fmt.Fprintf(stdout, "  control      %s\n", r.ControlPath())
	<-ctx.Done()
	fmt.Fprintln(stdout, "rig-sim: shutting down")
	return r.Close()
}

func client(dir string) *control.Client {
	return control.NewClient(filepath.Join(dir, rig.ControlName))
}

func reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 10*time.Second)
}

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := newFlags("status", stderr)
	asJSON := fs.Bool("json", false, "print the full status as JSON, write log included")
	if _, err := parse(fs, args, stdout); err != nil {
		return err
	}
	c := client(*dir)
	defer c.Close()
	ctx, cancel := reqCtx(ctx)
	defer cancel()
	if *asJSON {
		raw, err := c.StatusJSON(ctx)
		if err != nil {
			return err
		}
		_, err = stdout.Write(raw)
		return err
	}
	s, err := c.Status(ctx)
	if err != nil {
		return err
	}
	printStatus(stdout, s)
	return nil
}

// gasOrder is the controllers' keys, Ar and H2 first, then the others.
func gasOrder(m map[string]plant.MFCSnapshot) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := map[string]int{"ar": 0, "h2": 1}
	sort.Slice(keys, func(i, j int) bool {
		ri, oki := rank[keys[i]]
		rj, okj := rank[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return keys[i] < keys[j]
	})
	return keys
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func printStatus(w io.Writer, s control.Status) {
	f := s.Furnace
	pv := "OPEN"
	if f.PVC != nil {
		pv = fmt.Sprintf("%.1f °C", *f.PVC)
	}
	fmt.Fprintf(w, "sim time    %.0f s (scale %g)\n", s.SimTimeS, s.TimeScale)
	watchdog := fmt.Sprintf("watchdog %d ms expired %t", f.WatchdogTimeoutMs, f.WatchdogExpired)
	if f.Eurotherm != nil {
		watchdog = "no comms watchdog"
	}
	fmt.Fprintf(w, "furnace     T %.1f °C, PV %s, wsp %.1f °C, sp %.1f °C, ramp %.1f °C/min, out %.1f %%, heater %s (active %t), %s\n",
		f.TemperatureC, pv, f.WorkingSetpointC, f.SetpointC, f.RampRateCPerMin, f.OutputPct, onOff(f.HeaterEnable), f.HeaterActive, watchdog)
	if e := f.Eurotherm; e != nil {
		mode := "auto"
		if e.Manual {
			mode = "manual"
		}
		fmt.Fprintf(w, "eurotherm   %s, man.op %.1f %%, wrk.op %.1f %%, tg.sp %.1f °C, rm.sp %.1f °C (remote %t), sp.rat %.1f °C/%s, op.hi %.1f %%, status 0x%04x, nv writes %v\n",
			mode, e.ManualOutputPct, e.WorkingOutputPct, e.TargetSetpointC, e.CommsSetpointC, e.RemoteSelected, e.SetpointRate, e.RampUnits, e.OutputHighPct, e.Status, e.NVWrites)
	}
	for _, n := range zoneOrder(s.Zones) {
		z := s.Zones[n]
		pv := "OPEN"
		if z.PVC != nil {
			pv = fmt.Sprintf("%.1f °C", *z.PVC)
		}
		mode, sp := "auto", 0.0
		if e := z.Eurotherm; e != nil {
			if e.Manual {
				mode = "manual"
			}
			sp = e.TargetSetpointC
			if e.RemoteSelected {
				sp = e.CommsSetpointC
			}
		}
		fmt.Fprintf(w, "zone %-6s  unit %d %s: T %.1f °C, PV %s, wsp %.1f °C, sp %.1f °C, out %.1f %%, %s\n",
			n, z.Unit, z.Device, z.TemperatureC, pv, z.WorkingSetpointC, sp, z.OutputPct, mode)
	}
	fmt.Fprintf(w, "models      furnace %s, dio %s\n", s.FurnaceModel, s.DIOModel)
	fmt.Fprintf(w, "chamber     %.4g Pa (pumping %t)\n", s.ChamberPa, s.Pumping)
	for _, g := range gasOrder(s.MFCs) {
		m := s.MFCs[g]
		fmt.Fprintf(w, "mfc %-4s    sp %.2f flow %.2f sccm (fs %g), hold %t, stuck %t, line valve %s\n",
			g, m.SetpointSCCM, m.FlowSCCM, m.FullScaleSCCM, m.Hold, m.StuckOpen, map[bool]string{true: "open", false: "closed"}[m.ValveOpen])
	}
	fmt.Fprintf(w, "coils       %s\n", boolMap(s.Coils))
	fmt.Fprintf(w, "inputs      %s\n", boolMap(s.DiscreteInputs))
	fmt.Fprintf(w, "gpio        %s\n", boolMap(s.GPIO))
	if wd := s.RelayWatchdog; wd != nil {
		last := "none"
		if !wd.LastDrop.At.IsZero() {
			last = wd.LastDrop.At.Format("15:04:05.000")
		}
		fmt.Fprintf(w, "watchdog    relay: timeout %d ms, heartbeat alive %t (%d edges, last %s), drops %d (last %s)\n",
			wd.TimeoutMs, wd.Alive, wd.HeartbeatEdges, wd.LastHeartbeatAt.Format("15:04:05.000"), wd.Drops, last)
	}
	fmt.Fprintf(w, "growth      %s\n", s.GrowthSummary())
	var fl []string
	for _, f := range s.Faults {
		if f.Target != "" {
			fl = append(fl, f.Name+"("+f.Target+")")
		} else {
			fl = append(fl, f.Name)
		}
	}
	fmt.Fprintf(w, "faults      %s\n", strings.Join(fl, " "))
	fmt.Fprintf(w, "write log   %d entries (last seq %d, dropped %d)\n", len(s.Writes), s.WriteLogLastSeq, s.WriteLogDropped)
	start := max(0, len(s.Writes)-10)
	for _, e := range s.Writes[start:] {
		fmt.Fprintf(w, "  #%d %s %-8s %-4s %-22s %g accepted=%t\n", e.Seq, e.At.Format("15:04:05.000"), e.Device, e.Via, e.Channel, e.Value, e.Accepted)
	}
}

// zoneOrder is the zones' names in their order on the line.
func zoneOrder(m map[string]plant.ZoneSnapshot) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]].Unit < m[keys[j]].Unit })
	return keys
}

func boolMap(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := 0
		if m[k] {
			v = 1
		}
		fmt.Fprintf(&b, "%s=%d ", k, v)
	}
	return strings.TrimSpace(b.String())
}

func cmdFaults(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := newFlags("faults", stderr)
	if _, err := parse(fs, args, stdout); err != nil {
		return err
	}
	c := client(*dir)
	defer c.Close()
	ctx, cancel := reqCtx(ctx)
	defer cancel()
	list, err := c.Faults(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no active faults")
	}
	for _, f := range list {
		fmt.Fprintf(stdout, "%s\t%s\tsince %s\n", f.Name, f.Target, f.Since.Format(time.RFC3339))
	}
	return nil
}

func cmdFault(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := newFlags("fault", stderr)
	target := fs.String("target", "", "fault target (device for silent/corrupt, gas for mfc-stuck-open)")
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 2 || (pos[0] != "inject" && pos[0] != "clear") {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("fault: want inject|clear NAME; known faults: %s", strings.Join(plant.FaultNames, ", "))
	}
	c := client(*dir)
	defer c.Close()
	ctx, cancel := reqCtx(ctx)
	defer cancel()
	if pos[0] == "inject" {
		err = c.Inject(ctx, pos[1], *target)
	} else {
		err = c.Clear(ctx, pos[1], *target)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%sed %s %s\n", strings.TrimSuffix(pos[0], "e"), pos[1], *target)
	return nil
}

func cmdGPIO(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := newFlags("gpio", stderr)
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	c := client(*dir)
	defer c.Close()
	ctx, cancel := reqCtx(ctx)
	defer cancel()
	switch {
	case len(pos) == 2 && pos[0] == "get":
		l, err := c.GPIO(ctx, pos[1])
		if err != nil {
			return err
		}
		v := 0
		if l {
			v = 1
		}
		fmt.Fprintf(stdout, "%s %d\n", pos[1], v)
		return nil
	case len(pos) == 3 && pos[0] == "set" && (pos[2] == "0" || pos[2] == "1"):
		if err := c.SetGPIO(ctx, pos[1], pos[2] == "1"); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s\n", pos[1], pos[2])
		return nil
	}
	fmt.Fprint(stderr, usage)
	return errors.New("gpio: want get PIN or set relay|heartbeat 0|1")
}

func cmdPrecursor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := newFlags("precursor", stderr)
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("precursor: want at most one of MoO3, WO3")
	}
	c := client(*dir)
	defer c.Close()
	ctx, cancel := reqCtx(ctx)
	defer cancel()
	if len(pos) == 1 {
		pr, err := plant.ParsePrecursor(pos[0])
		if err != nil {
			return err
		}
		if err := c.SetPrecursor(ctx, pr); err != nil {
			return err
		}
	}
	pr, err := c.Precursor(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "precursor %s\n", pr)
	return nil
}
