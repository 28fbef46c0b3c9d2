package envelope

import (
	"log/slog"
	"time"

	"hcp-edge/device"
)

// InterlockOpts tunes an Interlock.
type InterlockOpts struct {
	Clock             func() time.Time // time source; time.Now if nil
	ReadTimeout       time.Duration    // per instrument read of a snapshot
	WriteTimeout      time.Duration    // per write and its read-back (acquisitions add their integration)
	HaltTimeout       time.Duration    // per instrument Halt
	SetpointTolerance device.Temperature
	RampTolerance     device.TemperatureRate
	FlowTolerance     device.Flow
	Logger            *slog.Logger // discarded if nil
	// TimeScale is the rig's process seconds per wall second
	// (agent.time_scale; 0: 1, a real rig). The envelope's rates of change
	// and the purge's duration are of the rig's time (NewScaledState), as
	// the recipe check and the tools' rate limits (InvokerOpts.RateClock)
	// count them.
	TimeScale float64
}

// DefaultInterlockOpts returns the defaults: 1 s reads, 2 s writes, 3 s halts,
// read-back tolerances of 0.1 K, 0.1 K/min and 0.05 sccm (the resolution of
// the rig's registers and MFC replies).
func DefaultInterlockOpts() InterlockOpts {
	return InterlockOpts{Clock: time.Now, ReadTimeout: time.Second, WriteTimeout: 2 * time.Second,
		HaltTimeout: 3 * time.Second, SetpointTolerance: 0.1, RampTolerance: 0.1, FlowTolerance: 0.05}
}
