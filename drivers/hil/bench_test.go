package hil

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hcp-edge/hcp-edge/drivers/modbus"
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
}
