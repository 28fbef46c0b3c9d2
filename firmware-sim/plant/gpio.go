package plant

import (
	"context"
	"fmt"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/physic"
)

// Virtual GPIO pin names (configs/rig-protocols.md, Virtual GPIO).
const (
	PinEstop   = "estop"
	PinLeak    = "leak"
	PinRelay   = "relay"
	PinRelayFB = "relay_fb"
	// PinHeartbeat is the relay watchdog's pulse input, an output of the
	// header: with the watchdog on (Opts.RelayWatchdog), the relay's coil
	// stays energised only while this pin keeps changing level.
	PinHeartbeat = "heartbeat"
)

const (
	pinEstop = iota
	pinLeak
	pinRelay
	pinRelayFB
	pinHeartbeat
	numPins
)

// PinNames lists the virtual pins in header order.
var PinNames = [numPins]string{PinEstop, PinLeak, PinRelay, PinRelayFB, PinHeartbeat}

// Pin is one virtual GPIO line of the rig as a periph.io gpio.PinIO: inputs
// (estop, leak, relay_fb) follow the plant (faults, the relay's coil); the
// outputs (relay, heartbeat) are driven with Out and read back the level last
// written. WaitForEdge works on every pin; Out on an input fails.
type Pin struct {
	p      *Plant
	name   string
	number int
	output bool

	// guarded by p.mu
	level   gpio.Level
	edge    gpio.Edge
	pull    gpio.Pull
	edges   uint64
	seen    uint64
	changed chan struct{} // closed and replaced on every level change
}

var _ gpio.PinIO = (*Pin)(nil)

func (p *Plant) initPins() {
	p.closedCh = make(chan struct{})
	for i, n := range PinNames {
		p.pins[i] = &Pin{p: p, name: n, number: i, output: i == pinRelay || i == pinHeartbeat, edge: gpio.BothEdges, pull: gpio.Float, changed: make(chan struct{})}
	}
	for _, pin := range p.pins {
		pin.level = p.pinLevelLocked(pin.number)
	}
}

func (p *Plant) pinLevelLocked(i int) gpio.Level {
	switch i {
	case pinEstop:
		return gpio.Level(!p.faultActiveLocked(FaultEstop, ""))
	case pinLeak:
		return gpio.Level(!p.faultActiveLocked(FaultGasLeak, ""))
	case pinRelay:
		return gpio.Level(p.relayOut)
	case pinHeartbeat:
		return gpio.Level(p.rwd.level)
	default: // relay_fb: the coil
		return gpio.Level(p.relay)
	}
}

// updatePinsLocked lets the relay watchdog act, then recomputes every pin's
// level and signals the changes.
func (p *Plant) updatePinsLocked() {
	p.relayWatchdogLocked()
	for i, pin := range p.pins {
		l := p.pinLevelLocked(i)
		if l == pin.level {
			continue
		}
		pin.level = l
		rising := l == gpio.High
		if pin.edge == gpio.BothEdges || (pin.edge == gpio.RisingEdge && rising) || (pin.edge == gpio.FallingEdge && !rising) {
			pin.edges++
		}
		close(pin.changed)
		pin.changed = make(chan struct{})
	}
}

// GPIOPin returns the pin of that name (estop, leak, relay, relay_fb, heartbeat).
func (p *Plant) GPIOPin(name string) (*Pin, error) {
	for i, n := range PinNames {
		if n == name {
			return p.pins[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownPin, name)
}

// EstopPin is the e-stop input (Low = pressed).
func (p *Plant) EstopPin() gpio.PinIn { return p.pins[pinEstop] }

// LeakPin is the gas-leak detector input (Low = leak).
func (p *Plant) LeakPin() gpio.PinIn { return p.pins[pinLeak] }

// RelayPin is the interlock relay output (High = energise). Without the relay
// watchdog the coil follows it; with the watchdog see relaywatchdog.go.
func (p *Plant) RelayPin() gpio.PinIO { return p.pins[pinRelay] }

// RelayFeedbackPin is the relay's read-back contact (High = energised).
func (p *Plant) RelayFeedbackPin() gpio.PinIn { return p.pins[pinRelayFB] }

// HeartbeatPin is the relay watchdog's pulse output (any level; its edges
// keep the relay energised when the watchdog is on).
func (p *Plant) HeartbeatPin() gpio.PinIO { return p.pins[pinHeartbeat] }

// GPIOLevel reads a pin by name.
func (p *Plant) GPIOLevel(name string) (bool, error) {
	pin, err := p.GPIOPin(name)
	if err != nil {
		return false, err
	}
	return bool(pin.Read()), nil
}

// SetGPIO drives an output pin by name (relay or heartbeat) and records the
// write (device gpio, via gpio), accepted or refused; heartbeat writes are
// counted (RelayWatchdog), not recorded (see Pin.Out).
func (p *Plant) SetGPIO(name string, level bool) error {
	pin, err := p.GPIOPin(name)
	if err != nil {
		p.RecordWrite("gpio", "gpio", name, b2f(level), false)
		return err
	}
	return pin.Out(gpio.Level(level))
}

// Relay reports whether the interlock relay is energised (its coil; the
// relay output may be High while the watchdog holds the coil dropped).
func (p *Plant) Relay() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.relayWatchdogLocked() {
		p.updatePinsLocked()
	}
	return p.relay
}

// WaitGPIO blocks until pin name's level differs from level, ctx is done or
// the plant is closed; it returns the level then and whether it differs.
func (p *Plant) WaitGPIO(ctx context.Context, name string, level bool) (bool, bool, error) {
	pin, err := p.GPIOPin(name)
	if err != nil {
		return false, false, err
	}
	for {
		p.mu.Lock()
		l, ch := bool(pin.level), pin.changed
		p.mu.Unlock()
		if l != level {
			return l, true, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return l, false, nil
		case <-p.closedCh:
			return l, false, ErrClosed
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// String implements conn.Resource.
func (pin *Pin) String() string { return "rig-sim/" + pin.name }

// Halt implements conn.Resource: an output goes Low (the relay de-energised).
func (pin *Pin) Halt() error {
	if pin.output {
		return pin.Out(gpio.Low)
	}
	return nil
}

// Name implements pin.Pin.
func (pin *Pin) Name() string { return pin.name }

// Number implements pin.Pin.
func (pin *Pin) Number() int { return pin.number }

// Function implements pin.Pin.
func (pin *Pin) Function() string {
	if pin.output {
		return "Out/" + pin.Read().String()
	}
	return "In/" + pin.Read().String()
}

// In configures edge detection on an input pin and forgets pending edges;
// the outputs (relay, heartbeat) refuse.
func (pin *Pin) In(pull gpio.Pull, edge gpio.Edge) error {
	if pin.output {
		return fmt.Errorf("%s: %w", pin.name, fmt.Errorf("output pin"))
	}
	pin.p.mu.Lock()
	defer pin.p.mu.Unlock()
	if pull != gpio.PullNoChange {
		pin.pull = pull
	}
	pin.edge = edge
	pin.seen = pin.edges
	return nil
}

// Read returns the pin's level (after letting the relay watchdog act, so a
// read between two physics ticks sees a drop already due).
func (pin *Pin) Read() gpio.Level {
	pin.p.mu.Lock()
	defer pin.p.mu.Unlock()
	if pin.p.relayWatchdogLocked() {
		pin.p.updatePinsLocked()
	}
	return pin.level
}

// WaitForEdge waits for an edge of the kind set by In (both edges by default),
// returning at once when one happened since the last call. A negative timeout
// waits forever (until the plant closes); 0 only checks.
func (pin *Pin) WaitForEdge(timeout time.Duration) bool {
	var tc <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		tc = t.C
	}
	for {
		pin.p.mu.Lock()
		if pin.edges != pin.seen {
			pin.seen = pin.edges
			pin.p.mu.Unlock()
			return true
		}
		ch := pin.changed
		pin.p.mu.Unlock()
		if timeout == 0 {
			return false
		}
		select {
		case <-ch:
		case <-tc:
			return false
		case <-pin.p.closedCh:
			return false
		}
	}
}

// Pull returns the pull set by In.
func (pin *Pin) Pull() gpio.Pull {
	pin.p.mu.Lock()
	defer pin.p.mu.Unlock()
	return pin.pull
}

// DefaultPull is Float: the lines have external pull-ups.
func (pin *Pin) DefaultPull() gpio.Pull { return gpio.Float }

// Out drives an output. A relay write is recorded in the write log (device
// gpio via gpio); heartbeat writes are not — toggled every few hundred
// milliseconds for as long as the agent runs, they would flood the bounded
// log — but counted (RelayWatchdog().HeartbeatEdges). Inputs refuse with
// ErrInputPin (recorded).
func (pin *Pin) Out(l gpio.Level) error {
	p := pin.p
	if !pin.output {
		p.RecordWrite("gpio", "gpio", pin.name, b2f(bool(l)), false)
		return fmt.Errorf("%s: %w", pin.name, ErrInputPin)
	}
	p.mu.Lock()
	if pin.number == pinHeartbeat {
		p.outHeartbeatLocked(bool(l))
		p.updatePinsLocked()
		p.mu.Unlock()
		return nil
	}
	p.outRelayLocked(bool(l))
	p.updatePinsLocked()
	sim := p.sim
	p.mu.Unlock()
	p.recordWrite("gpio", "gpio", PinRelay, b2f(bool(l)), true, sim)
	return nil
}

// PWM is not supported.
func (pin *Pin) PWM(gpio.Duty, physic.Frequency) error {
	return fmt.Errorf("%s: PWM not supported", pin.name)
}
