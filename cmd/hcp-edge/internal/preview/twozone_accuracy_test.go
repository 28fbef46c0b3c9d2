package preview

import (
	"context"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hiltest/hilbench"
	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	simrig "hcp-edge/firmware-sim/rig"
	"hcp-edge/firmware-sim/serialsim"
	"hcp-edge/session/analysis"
	"hcp-edge/session/executor"
)

// twoZoneRun runs task on rig-sim --rig mos2-two-zone (in process, on a
// port of its own, the models rig-sim implies for the rig) with the boat
// the preview assumed, through the drivers the agent builds from cfg (both
// zones' 3200s on the RS-485 line), started as the daemon starts them (the
// relay de-energised, its heartbeat, each controller's Init), the
// interlock with env, the tool pipeline over the layout's catalog and the
// monitor at the configuration's periods: the run's duration, result and
// plant.
func twoZoneRun(t *testing.T, env *envelope.Envelope, x executor.Executor, task executor.Task, boat plant.Precursor) (time.Duration, *executor.Result, *plant.Plant) {
	m, _ := plant.RigMoS2TwoZone.Models()
	gm, err := serialsim.ParseGaugeModel(m.Gauge)
	if err != nil {
		t.Fatal(err)
	}
	r, err := simrig.Start(context.Background(), simrig.Opts{Dir: t.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: accuracyScale,
		RelayWatchdog: m.RelayWatchdog, Precursor: boat, FurnaceModel: m.Furnace, DIOModel: m.DIO, Rig: plant.RigMoS2TwoZone,
		StartSerial: simrig.SerialInstrumentsWith(serialsim.Opts{Gauge: serialsim.GaugeVariant{Model: gm, ContinuousMode: 1}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	t.Setenv("HCP_RIG_SIM_DIR", r.Dir())
	cfg, err := rigconfig.Load(twoZoneConfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range cfg.Rig.ModbusBuses {
		if b.Transport == "tcp" {
			b.Address = r.ModbusAddr().String()
			cfg.Rig.ModbusBuses[name] = b
		}
	}
	in, err := rigconfig.Build(cfg.Rig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := in.Relay(); err != nil {
		t.Fatal(err)
	}
	if err := in.StartHeartbeat(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := in.StartInputs(ctx); err != nil {
		t.Fatal(err)
	}
	er, err := rigconfig.InterlockRig(in)
	if err != nil {
		t.Fatal(err)
	}
	iopts := envelope.DefaultInterlockOpts()
	iopts.TimeScale = accuracyScale
	il, err := envelope.NewInterlock(env, er, benchAuthorizer{hilbench.AllowAll{Session: "accuracy"}}, &hilbench.Audit{}, iopts)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := catalog.Generate(cfg.Rig.Layout(), analysis.MaterialNames()...)
	if err != nil {
		t.Fatal(err)
	}
	rates, _ := executor.NewScaledClock(accuracyScale)
	iv, err := envelope.NewInvoker(il, tools, envelope.InvokerOpts{RateClock: rates.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := executor.RegisterAnalysis(iv, nil); err != nil { // the preview's analysis: the tier-1 fit
		t.Fatal(err)
	}
	for _, tc := range in.Zones {
		if _, err := tc.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mon, err := envelope.NewMonitor(il, envelope.MonitorOpts{FurnaceEvery: cfg.Monitor.FurnaceEvery, OtherEvery: cfg.Monitor.OtherEvery,
		KickEvery: cfg.Monitor.KickEvery})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mon.Close() })
	b := &hilbench.Bench{Interlock: il, Monitor: mon, Ctx: ctx}
	b.ArmAs(t, "accuracy-operator", time.Now().Add(hilbench.DefaultWait), hilbench.DefaultPoll)
	actual, res := execute(t, x, task, iv, mon)
	return actual, res, r.Plant()
}
