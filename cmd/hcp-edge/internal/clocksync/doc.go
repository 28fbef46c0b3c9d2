// Package clocksync reads the kernel's clock-synchronisation state
// (adjtimex(2)) and decides whether the agent holds new sessions while the
// system clock is not synchronised.
//
// # Concepts
//
// A Raspberry Pi has no real-time clock: it boots with the time
// fake-hwclock saved (or 1970) and steps to the right time when NTP
// synchronises, often minutes after boot. The kernel knows whether that
// has happened: adjtimex returns TIME_ERROR and sets STA_UNSYNC in the
// status until a time daemon (systemd-timesyncd, chrony, ntpd) has
// disciplined the clock. Read asks it.
//
// Hold is the agent's view: with holding enabled
// (agent.hold_until_clock_synced, the default), new sessions are refused
// with task_rejected resource_unavailable "clock not synchronised" until
// the kernel has reported the clock synchronised once; from then on it
// stays released for the life of the process (a later loss of the NTP
// server leaves a clock that was set right and runs free, and every
// duration the agent judges is on the monotonic clock anyway). The
// interlock, the trip monitor and the e-stop never ask it: they run from
// the first second. Running and recovered sessions are not held.
//
// # Caveats
//
// A container or CI machine usually reports the clock unsynchronised
// (no time daemon in it disciplines the host's clock), which is why the
// simulator configuration (configs/sim.yaml) turns holding off. A state
// that cannot be read (adjtimex refused, as under systemd's ProtectClock=;
// a system other than Linux) is unknown, and unknown holds like
// unsynchronised: the operator sees why in `status` and either fixes the
// reason or sets agent.hold_until_clock_synced false.
package clocksync
