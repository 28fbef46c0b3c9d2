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
// checked against Opts.Now on every register access and every physics tick.
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
//   - Growth: MoS2 layers grow at a rate ∝ H2S flow into the chamber × an
//     Arrhenius factor, nil below about 550 °C; 10 min at 725 °C with 5 sccm
//     H2S give about one layer.
//
// # Caveats
//
// The MFC flow reading does not depend on the line valve (the controller
// measures what it passes; where it goes is the valve's business). The comms
// watchdog only trips while heater enable is 1.
package plant
