package hil

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/regmap"
	"hcp-edge/drivers/regmap/regmaptest"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
)

// BenchModbusAddrEnv names a running simulator (host:port) for
// BenchmarkSimModbusTCPRead; unset, the benchmark starts one in-process.
const BenchModbusAddrEnv = "HCP_BENCH_MODBUS_ADDR"

// BenchmarkSimModbusTCPRead measures Modbus TCP round trips of our driver
// (drivers/modbus Bus, one connection) reading the furnace's 9 input registers
// (unit 1) from the simulator, reported as rt/s. scripts/bench-modbus.sh runs
// it against a rig-sim process and compares it with mbpoll.
func BenchmarkSimModbusTCPRead(b *testing.B) {
	addr := os.Getenv(BenchModbusAddrEnv)
	if addr == "" {
		addr = startRig(b, 300).r.ModbusAddr().String()
	}
	o := modbus.DefaultOpts()
	o.Address, o.Timeout, o.Retries = addr, 2*time.Second, 0
	bus, err := modbus.New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	ctx := context.Background()
	if _, err := bus.ReadInputRegisters(ctx, 1, 0, 9); err != nil { // dial outside the timing
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	cpu0 := cpuTime(b)
	for b.Loop() {
		regs, err := bus.ReadInputRegisters(ctx, 1, 0, 9)
		if err != nil {
			b.Fatal(err)
		}
		if len(regs) != 9 {
			b.Fatalf("%d registers", len(regs))
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rt/s")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(n), "cpu-µs/rt")
}

// cpuTime is the CPU time (user and system, every thread) the process has
// used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchFurnaceProfileEnv names the shipped profile BenchmarkSimFurnaceSnapshot
// reads with (default regmaptest.SimFurnaceProfile, "hcp-sim-tc"); the
// simulator it reads must serve that model on unit 1 (rig-sim
// --furnace-model eurotherm3200 for "eurotherm-3200").
const BenchFurnaceProfileEnv = "HCP_BENCH_FURNACE_PROFILE"

// benchFurnaceModels is the rig-sim furnace model of each profile the
// benchmark knows, for the in-process simulator.
var benchFurnaceModels = map[string]plant.FurnaceModel{
	regmaptest.SimFurnaceProfile: plant.FurnaceSim,
	"eurotherm-3200":             plant.FurnaceEurotherm3200,
}

// BenchmarkSimFurnaceSnapshot measures the generic driver reading the furnace
// controller (unit 1) over Modbus TCP against the simulator: "snapshot" is
// regmap.Controller.Snapshot (every channel with a role), "status" is
// Controller.Status (the channels of device.FurnaceStatus: what the monitor
// polls at 20 Hz). Each reports snap/s, the process's CPU time a reading as
// cpu-µs/snap (the client's alone when the simulator is another process),
// and as rt/s the Modbus transactions they took (Controller.Reads: hcp-sim-tc 2 and 2, eurotherm-3200 6 and 5, its
// map has gaps). scripts/bench-modbus.sh runs it against rig-sim processes and
// compares it with mbpoll reading the same spans.
func BenchmarkSimFurnaceSnapshot(b *testing.B) {
	id := os.Getenv(BenchFurnaceProfileEnv)
	if id == "" {
		id = regmaptest.SimFurnaceProfile
	}
	addr := os.Getenv(BenchModbusAddrEnv)
	if addr == "" {
		model, ok := benchFurnaceModels[id]
		if !ok {
			b.Fatalf("%s=%s: no simulator model known for it; start one and set %s", BenchFurnaceProfileEnv, id, BenchModbusAddrEnv)
		}
		r, err := rig.Start(context.Background(), rig.Opts{Dir: b.TempDir(), ModbusAddr: "127.0.0.1:0", TimeScale: 300, FurnaceModel: model})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = r.Close() })
		addr = r.ModbusAddr().String()
	}
	o := modbus.DefaultOpts()
	o.Address, o.Timeout, o.Retries = addr, 2*time.Second, 0
	bus, err := modbus.New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	p, err := regmaptest.Profile(id)
	if err != nil {
		b.Fatal(err)
	}
	c, err := regmap.NewController(bus, p, regmap.ControllerOpts{Name: "furnace", Unit: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Snapshot(ctx); err != nil { // dial outside the timing; a sensor fault is a failed read here
		b.Fatal(err)
	}
	snapReads, statusReads := c.Reads()
	run := func(name string, reads int, read func() (device.FurnaceStatus, error)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			cpu0 := cpuTime(b)
			for b.Loop() {
				s, err := read()
				if err != nil {
					b.Fatal(err)
				}
				if s.At.IsZero() {
					b.Fatal("empty reading")
				}
				n++
			}
			rate := float64(n) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "snap/s")
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(n), "cpu-µs/snap")
			b.ReportMetric(rate*float64(reads), "rt/s")
			b.ReportMetric(float64(reads), "reads/snap")
		})
	}
	run("snapshot", snapReads, func() (device.FurnaceStatus, error) {
		s, err := c.Snapshot(ctx)
		return s.FurnaceStatus, err
	})
	run("status", statusReads, func() (device.FurnaceStatus, error) { return c.Status(ctx) })
}
