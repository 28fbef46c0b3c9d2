package device

import (
	"context"
	"time"
)

// Instrument is what every device has in common.
type Instrument interface {
	// String names the instrument for logs and errors, e.g. "furnace" or "mfc-ar".
	String() string
	// Halt drives the instrument to its safe, inert state and returns once the
	// instrument has confirmed it (or with an error saying why it could not).
	// Halt is idempotent and must be safe to call at any time, from any state.
	Halt(ctx context.Context) error
}

// FurnaceAlarm is a set of alarm bits reported by a temperature controller.
type FurnaceAlarm uint16

// Alarm bits. Their meaning is the controller's; drivers translate its register
// into these.
const (
	AlarmHighTemperature FurnaceAlarm = 1 << iota // process value above the controller's own alarm limit
	AlarmSensorBreak                              // thermocouple open: the process value is invalid
	AlarmWatchdog                                 // the comms watchdog expired and the controller dropped its output
	AlarmHeaterFault                              // heater circuit fault reported by the controller
)

// FurnaceStatus is one consistent snapshot of a temperature controller.
type FurnaceStatus struct {
	ProcessValue    Temperature     // measured temperature
	Setpoint        Temperature     // target setpoint as written
	WorkingSetpoint Temperature     // the ramped setpoint the controller is tracking now
	RampRate        TemperatureRate // 0 means no ramp limit (step changes)
	OutputPower     Percent         // heater output, 0..100
	HeaterEnabled   bool            // heater output permitted by the controller
	Alarms          FurnaceAlarm
	At              time.Time // when the snapshot was read
}

// TemperatureController is a furnace temperature controller. Halt disables the
// heater output (and leaves the setpoint as it is).
type TemperatureController interface {
	Instrument
	// Status reads a full snapshot. A controller reporting AlarmSensorBreak returns
	// the status together with an error wrapping ErrSensor.
	Status(ctx context.Context) (FurnaceStatus, error)
	SetSetpoint(ctx context.Context, t Temperature) error
	SetRampRate(ctx context.Context, r TemperatureRate) error
	SetHeater(ctx context.Context, on bool) error
	// KickWatchdog restarts the controller's comms watchdog. A controller that is
	// not kicked within its timeout drops its output by itself.
	KickWatchdog(ctx context.Context) error
}

// FlowStatus is one reading of a mass-flow controller.
type FlowStatus struct {
	Gas         string // gas the controller is set up for, e.g. "Ar"
	Flow        Flow   // measured mass flow
	Setpoint    Flow   // current setpoint
	Pressure    Pressure
	Temperature Temperature
	Flags       []string // status codes the controller appended (e.g. "HLD", "OVR")
	At          time.Time
}

// FlowController is a mass-flow controller. Halt sets the setpoint to zero and
// closes the valve.
type FlowController interface {
	Instrument
	ReadFlow(ctx context.Context) (FlowStatus, error)
	SetFlow(ctx context.Context, f Flow) error
	// FullScale is the controller's range.
	FullScale() Flow
}

// GaugeStatus is the state a pressure gauge reports with a reading.
type GaugeStatus int

// Gauge statuses.
const (
	GaugeOK GaugeStatus = iota
	GaugeUnderrange
	GaugeOverrange
	GaugeSensorError
	GaugeSensorOff
	GaugeNoSensor
)

func (s GaugeStatus) String() string {
	switch s {
	case GaugeOK:
		return "ok"
	case GaugeUnderrange:
		return "underrange"
	case GaugeOverrange:
		return "overrange"
	case GaugeSensorError:
		return "sensor error"
	case GaugeSensorOff:
		return "sensor off"
	case GaugeNoSensor:
		return "no sensor"
	}
	return "unknown"
}

// PressureReading is one reading of a pressure gauge. The gauge measured it
// somewhere between Sent and At: a measurement that depends on when (a rate
// of rise) takes the end of that window that errs on the safe side.
type PressureReading struct {
	Pressure Pressure
	Status   GaugeStatus
	At       time.Time // when the reply arrived: the reading is no newer
	Sent     time.Time // when the request went out: the reading is no older (zero: unknown, take At)
}

// Requested is when the request for r went out (At when Sent is unknown):
// the earliest instant the gauge can have measured it.
func (r PressureReading) Requested() time.Time {
	if r.Sent.IsZero() {
		return r.At
	}
	return r.Sent
}

// PressureGauge is a vacuum gauge. Its Halt does nothing to the chamber (a gauge
// has no outputs) and returns nil once the line is idle.
type PressureGauge interface {
	Instrument
	// ReadPressure returns the reading; a status other than GaugeOK, GaugeUnderrange
	// or GaugeOverrange comes with an error wrapping ErrSensor.
	ReadPressure(ctx context.Context) (PressureReading, error)
}

// Switch is an on/off output: a pump, a valve, a scrubber, a relay. Halt drives
// it to its configured safe level (closed for a gas valve, on for the exhaust
// scrubber) and confirms it by read-back.
type Switch interface {
	Instrument
	// Set drives the output and confirms it by read-back (ErrReadback otherwise).
	Set(ctx context.Context, on bool) error
	// State reads the output back from the hardware.
	State(ctx context.Context) (bool, error)
	// SafeState is the level Halt drives the output to.
	SafeState() bool
}

// DigitalInput is a binary sensor: door closed, exhaust OK, e-stop, leak detector.
type DigitalInput interface {
	String() string
	// Read returns the current (debounced, where the driver debounces) level,
	// true meaning the input's named condition holds ("door closed" is true when
	// the door is closed; "estop pressed" is true when pressed).
	Read(ctx context.Context) (bool, error)
}

// LevelBank is a group of switches or digital inputs that one exchange reads
// together: the coils, or the discrete inputs, of one digital I/O module. A
// poller that reads the bank once per period reads every member at that
// period, in one transaction instead of one per member.
type LevelBank interface {
	// Levels reads every member in one exchange, indexed as each member's
	// Bank reports it; each level means what the member's own State or Read
	// would return (an inverted input comes inverted).
	Levels(ctx context.Context) ([]bool, error)
}

// BankMember is implemented by a Switch or a DigitalInput whose level its
// LevelBank also reads.
type BankMember interface {
	// Bank returns the member's bank and its index in the bank's Levels, or
	// a nil bank when the member is to be read on its own.
	Bank() (LevelBank, int)
}

// Spectrum is one acquired spectrum: intensities at Raman shifts.
type Spectrum struct {
	Shift       []float64 // Raman shift in cm^-1, ascending
	Counts      []float64 // intensity in counts, one per shift
	Integration time.Duration
	At          time.Time
}

// Spectrometer acquires Raman spectra. Halt stops any acquisition and turns the
// laser off.
type Spectrometer interface {
	Instrument
	Acquire(ctx context.Context, integration time.Duration) (Spectrum, error)
}
