package rig

import (
	"time"

	"hcp-edge/device"
)

// Facts is what the instruments' profiles and drivers say about a rig that
// the envelope's spec needs and the layout does not: each zone's and
// head's ranges, where each writable channel lands on the wire, and the
// writes the drivers make on their own. drivers/rigbuild fills it from the
// profiles (FactsOf); envelope.SpecOf turns a Layout and its Facts into
// the envelope's RigSpec. It sits here, in the bottom layer, because
// neither of those two may import the other.
type Facts struct {
	Zones        map[string]ZoneFacts // by Zone.Name
	Heads        map[string]HeadFacts // by Head.Name
	Lines        map[string]string    // by Line.Gas: the wire of its flow setpoint
	Outputs      map[string]string    // by Switch.Name: the wire of the output
	Spectrometer *SpectrometerFacts   // nil: no spectrometer
	// Internal lists the writes drivers make on their own (watchdog kick,
	// gauge unit selection, hold of a valve, ...), never reachable through
	// an action, in the order the coverage report lists them.
	Internal []InternalWrite
}

// ZoneFacts is a zone's controller's ranges and wires.
type ZoneFacts struct {
	SetpointMin, SetpointMax device.Temperature
	RampMax                  device.TemperatureRate
	ProcessValueMax          device.Temperature // the highest it can measure
	// Where the setpoint, the ramp rate ("" when the controller has none)
	// and the heater enable land.
	SetpointWire, RampRateWire, HeaterWire string
}

// HeadFacts is a gauge head's measuring range.
type HeadFacts struct {
	Min, Max device.Pressure
}

// SpectrometerFacts is the spectrometer's integration range and where an
// acquisition's integration time lands.
type SpectrometerFacts struct {
	MinIntegration, MaxIntegration time.Duration
	Wire                           string
}

// InternalWrite is a write a driver makes on its own: the channel it
// writes, where it lands, and why it is harmless.
type InternalWrite struct{ Channel, Wire, Reason string }
