package serialsim

import (
	"time"

	"hcp-edge/firmware-sim/plant"
)

// Plant is what the serial instruments need from the simulated physics. It is
// satisfied by *plant.Plant; tests supply their own.
type Plant interface {
	// MFC returns the state of the controller for gas ("ar", "h2", "h2s").
	MFC(gas string) (plant.MFCState, bool)
	// SetMFCSetpoint sets a controller's setpoint in sccm, or fails and changes nothing.
	SetMFCSetpoint(gas string, sccm float64) error
	// SetMFCHold holds a controller's valve closed or resumes control.
	SetMFCHold(gas string, hold bool) error
	// ChamberPressure is the true chamber pressure in pascal.
	ChamberPressure() float64
	// Film is what has grown on the sample so far, in layers per material.
	Film() plant.Film
	// SimElapsed is the simulated time since the plant started.
	SimElapsed() time.Duration
	// TimeScale is sim seconds per wall-clock second.
	TimeScale() float64
	// FaultActive reports whether fault name is active for target.
	FaultActive(name, target string) bool
	// SpectrumFaults are the active spectrum faults the spectrometer renders.
	SpectrumFaults() plant.SpectrumFaults
	// RecordWrite appends a write the firmware received to the write log.
	RecordWrite(device, via, channel string, value float64, accepted bool)
}

var _ Plant = (*plant.Plant)(nil)

// Fault names the instruments react to.
const (
	faultSilent  = "silent"
	faultCorrupt = "corrupt"
)

// via is the write log's interface name for everything in this package.
const via = "serial"

// badValue is recorded as the value of a refused write whose argument was not
// a number (the write log is JSON, which has no NaN).
const badValue = -1
