// Package plant is the simulated CVD rig's physics and state: furnace, chamber,
// gases, digital I/O, virtual GPIO, growth history, faults and the write log.
// It implements the instruments of configs/rig-protocols.md from that text and
// imports no product folder.
//
// # Concepts
//
// A Plant holds every state variable behind one mutex. One goroutine, owned by
// the Plant (Start/Close, or Run(ctx)), steps the physics on sim time = wall
// time × time scale, in substeps of at most 0.1 s of sim time; the linear parts
// (heat, pressure) are integrated exactly, so they are stable at any scale.
// Tests may instead call Step directly and inject the wall clock (Opts.Now).
//
// Communication timings are wall-clock time: the furnace comms watchdog is
// checked against Opts.Now on every register access and every physics tick,
// and so is the relay watchdog (Opts.RelayWatchdog, relaywatchdog.go), on
// every GPIO access and every tick.
//
// The interfaces (modbussim, serialsim, control) call the register and
// instrument methods here; they record every write they receive through
// RecordWrite (or the register methods record it themselves), accepted or not.
//
// # Models
//
//   - Furnace: two thermal lags (element and work zone) with losses to 25 °C,
//     about 1300 °C at full power, driven by the controller's own PI loop with
//     anti-windup; the working setpoint ramps at the ramp rate.
//   - Chamber: 50 L pumped by a 5 L/s roughing pump with an ultimate pressure,
//     a small leak, vent valve and gas load; base pressure about 1 Pa, tens of
//     Pa with 100 sccm of argon.
//   - Gases: three mass-flow controllers with first-order response and noise;
//     their flow reaches the chamber only through a line valve that is open,
//     i.e. its coil is on and the interlock relay is energised.
//   - Relay watchdog (optional): a cycle-monitoring watchdog relay module
//     in the relay's coil circuit; the coil stays energised only while the
//     heartbeat pin keeps changing level, and once dropped it waits for
//     relay to be written High again (relaywatchdog.go has the exact rule).
//   - Growth: layers of MoS2 or WS2, by the precursor in the boat, at a rate
//     ∝ H2S flow into the chamber × an Arrhenius factor (see Growth).
//   - Two zones (RigMoS2TwoZone, twozone.go): the furnace is the growth
//     zone; an upstream sulfur zone on its own 3200 sets the sulfur vapour
//     (CRC table, Clausius–Clapeyron) the Ar carries to the growth zone,
//     where it takes the place of the H2S of the same kinetics.
//
// # Real controller models
//
// Opts.FurnaceModel and Opts.DIOModel choose which instrument's register map
// units 1 and 2 present (configs/rig-protocols.md, Real controller models);
// the physics behind them is the same. FurnaceEurotherm3200 is the Eurotherm
// 3200 series of configs/manuals/eurotherm-3200.md (EurothermRead,
// EurothermWrite): setpoints in °C × 10 or IEEE floats at 0x8000 + 2 × address,
// auto/manual with bumpless transfer, output off by manual with manual output
// 0 or output high limit 0, and no comms watchdog; every write is logged under
// its parameter's channel (target_setpoint for the register of limited write
// endurance, comms_setpoint for the remote setpoint). DIOADAM6052 is the
// ADAM-6052 of configs/manuals/adam-6052.md (ADAMReadBits, ADAMWriteCoils,
// ADAMReadRegisters, ADAMWriteRegisters), its DO 0..6 wired to the sim
// module's coils and DI 0..2 to its inputs.
//
// A controller without a comms watchdog keeps heating when the agent dies; the
// dead-agent path is then the relay watchdog (Opts.RelayWatchdog,
// relaywatchdog.go): the relay's coil drops when the heartbeat pin stops
// changing level, removing heater power while the controller still asks for
// it (RelayWatchdog reports the drops).
//
// # Growth
//
// H2S sulfurizes what the precursor boat gives off: MoO3 (the default) grows
// MoS2, WO3 grows WS2 (Opts.Precursor at start, SetPrecursor later; the boat
// is loaded by hand, so the write log does not record it). Layers grow at a
// rate ∝ H2S flow into the chamber × an Arrhenius factor of the material,
// faded in smoothly above an onset temperature, so the rate never decreases
// with temperature (MaterialGrowthRate):
//
//	material  precursor  one layer (5 sccm H2S)  Ea/k_B    onset → full
//	MoS2      MoO3       10 min at 725 °C        14000 K   540 → 600 °C
//	WS2       WO3        10 min at 800 °C        18000 K   620 → 680 °C
//
// WS2 is slower at every temperature below about 1180 °C: at 725 °C ten
// minutes give about 0.28 of a layer and a monolayer takes about 35 min (WS2
// is grown hotter than MoS2 in practice, typically 800–900 °C, WO3 being far
// less volatile than MoO3). The MoS2 numbers are the simulator's original
// calibration, unchanged. The plant keeps the layers per material (Film); a
// sample has one material per run, and when the precursor was changed while
// growing the snapshot says so (material "MoS2+WS2") rather than naming one.
//
// # Caveats
//
// The MFC flow reading does not depend on the line valve (the controller
// measures what it passes; where it goes is the valve's business). The comms
// watchdog only trips while heater enable is 1.
package plant
