// Package budget is the resource monitor of a session (seeds/004, "Safety
// verifier": resource monitoring): what one session may consume of the rig
// beyond its safety envelope — wall time, gas volume per gas, heater energy
// and the number of actuator actions — tracked live and checked against its
// limits.
//
// # Concepts
//
// Limits are the budgets of one session. A capability declares a policy
// (capability.Budgets, the "budgets" object of its declaration) and a task
// may ask for tighter ones in constraints.budgets (ParseTask); Tighter
// combines them, budget by budget, so a task can only tighten the policy.
// The wall-time budget is the session's max_duration.
//
// A Tracker holds one session's Usage. It is fed the rig readings the
// envelope monitor already takes (Observe), the count of actuator actions
// the interlock executed for the session (SetActions; Actions counts them
// from the interlock's audit stream) and the session's elapsed process
// time (SetWall). Check returns an *ExceededError naming the first budget
// whose usage passed its limit.
//
// Gas volume is the integral of each gas's measured flow (sccm) over
// process time, in standard cubic centimetres (scc). Heater energy is the
// integral of the furnace controller's output (percent of full power) over
// process time, in seconds at full power, summed over every heated zone on
// a rig of several (each zone's controller its own channel): the energy in kJ is that figure
// times the heater's rated power in kW, which no configuration declares
// today. Process time is wall time times the time scale (1 on a real rig),
// so a simulated rig running 300 times fast is charged what the real one
// would be.
//
// # Missing and irregular readings
//
// Usage never looks smaller than it is for want of a reading. Between two
// samples of a channel the larger of the two rates is charged for the
// whole interval (an upper bound of the trapezoid), whatever the interval;
// an interval longer than Opts.MaxGap is counted the same way and marks
// the usage Estimated. From the last sample to the instant usage is asked
// for, the last rate is charged provisionally: a channel that stops
// answering keeps being charged at its last rate until it answers again.
// A sample no newer than the last one of its channel (a tie or an older
// reading) adds nothing; a tie with a higher rate raises the rate charged
// from then on. A channel never read is charged nothing: the interlock
// refuses to act on an instrument it cannot read.
//
// # Persistence
//
// State is the tracker's whole state (usage and the last sample of each
// channel); the engine stores it in each checkpoint, and a recovered
// session resumes from it rather than from a fresh budget: the first
// sample after the outage charges the outage at the larger of the rates
// before and after it.
package budget
