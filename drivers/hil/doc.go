// Package hil holds the hardware-in-the-loop tests of the drivers: the real
// drivers of drivers/ against the simulated rig of firmware-sim, over real wires
// — Modbus TCP on a loopback socket, Modbus RTU on a pseudo-terminal, the ASCII
// instruments on their own ptys and the virtual GPIO over the simulator's
// control socket — and peer tests with programs nobody here wrote (mbpoll,
// pymodbus). The package has no non-test code; it is documentation and tests.
//
// # Concepts
//
// Each test starts a whole rig in-process with firmware-sim/rig.Start in a
// t.TempDir() (Modbus TCP on a free port, the RTU line, the serial instruments
// and the control socket) and talks to it only through the drivers, exactly as
// the agent would. The simulator's write log (plant.Writes) is the witness:
// after every driver write the test checks that exactly the values the driver
// meant reached the firmware, on the interface it used (via tcp, rtu, serial or
// gpio), accepted or refused. The simulator's true state (plant.Snapshot,
// FurnaceTemperature, Layers) is what the driver readings are compared with.
//
// Only the tests import firmware-sim; firmware-sim and drivers/ are written
// independently from configs/rig-protocols.md, so a misreading of that text on
// either side shows up here as a failing test.
//
// # Tests
//
//   - TestFurnace, TestDIOAndGauge, TestMFC, TestRaman: every instrument over
//     both Modbus transports or its pty, writes proven by the write log.
//   - TestEurothermVerifyRefusesAnotherConfiguration, TestEurothermVariantsDriven,
//     TestADAMVerify: the simulated 3216 at 0, 1 and 2 decimals and per-second,
//     per-minute and per-hour ramp units against the eurotherm-3200 profile
//     (Verify names dEC.P and rmP.U when they differ, writes nothing) and
//     against a profile written for each (600 °C reaches the unit as 600 °C).
//   - TestFaultTable: every fault of the protocol document's table is
//     injected through the control API, observed through the real driver as the
//     documented error or reading (errors.Is on the device sentinels), then
//     cleared; detection and recovery times go into a markdown table, logged
//     and, with HCP_FAULT_TABLE=path, written to a file
//     (scripts/fault-table.sh prints it).
//   - TestGPIOOverControlSocket: drivers/gpio over drivers/simgpio pins across
//     the control socket: e-stop and leak edges, relay with read-back.
//   - TestHeartbeatHoldsRelay, TestHeartbeatProcessKilled: drivers/gpio's
//     Heartbeat and the relay Output over simgpio against the simulator's
//     relay watchdog (rig.Opts.RelayWatchdog): the relay stays energised
//     while the heartbeat runs, and drops within the timeout plus one poll
//     when it stops — by Close, or by SIGKILL of a child process (this test
//     binary re-run as TestHeartbeatChild) that held it.
//   - TestMbpoll*, TestPymodbusClient: foreign Modbus masters read (and write)
//     the simulator; they skip loudly without the peer (devicetest.LookPath)
//     and fail with HCP_REQUIRE_PEERS=1.
//   - BenchmarkSimModbusTCPRead: round trips per second of drivers/modbus
//     reading the furnace's 9 input registers, from the in-process simulator or,
//     with HCP_BENCH_MODBUS_ADDR=host:port, from a running rig-sim
//     (scripts/bench-modbus.sh compares it with mbpoll).
//
// # Caveats
//
// Driver timeouts are short here (a few hundred milliseconds, one retry) so the
// fault table runs quickly; the measured times say how fast a fault surfaces
// with such settings on this machine, not a property of the protocol. The
// physics runs on the simulator's scaled clock while comms run on the wall
// clock, so the tests compare sim-time quantities with the uptime register,
// never with wall-clock sleeps. Long parts honour testing.Short().
package hil
