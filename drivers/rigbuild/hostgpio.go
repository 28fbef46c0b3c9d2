package rigbuild

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"hcp-edge/device/rig"

	"periph.io/x/conn/v3/driver/driverreg"
	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"

	"hcp-edge/drivers/simgpio"
)

// ErrNoSuchPin is a gpio pin key (source: host) naming a pin that periph
// did not find on this host.
var ErrNoSuchPin = errors.New("no such pin on this host")

// PinError is a host GPIO pin the configuration names and this host does
// not have. It wraps ErrNoSuchPin.
type PinError struct {
	Key   string   // the configuration key, e.g. "gpio.estop_pin"
	Pin   string   // the configured name, e.g. "GPIO17"
	Found []string // the pins periph registered on this host, sorted
	// Drivers lists periph's GPIO drivers that did not load, with why,
	// when no pin was found (e.g. "ioctl-gpio: no GPIO chips found").
	Drivers []string
}

// maxPinsShown bounds how many found pins a PinError names.
const maxPinsShown = 8

func (e *PinError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: %v (periph found %d pins", e.Key, e.Pin, ErrNoSuchPin, len(e.Found))
	switch {
	case len(e.Found) > maxPinsShown:
		fmt.Fprintf(&b, ": %s, …", strings.Join(e.Found[:maxPinsShown], ", "))
	case len(e.Found) > 0:
		fmt.Fprintf(&b, ": %s", strings.Join(e.Found, ", "))
	case len(e.Drivers) > 0:
		fmt.Fprintf(&b, "; GPIO drivers not loaded: %s", strings.Join(e.Drivers, "; "))
	}
	b.WriteString(")")
	return b.String()
}

// Unwrap returns ErrNoSuchPin.
func (e *PinError) Unwrap() error { return ErrNoSuchPin }

// hostInputPull is the pull of the e-stop and leak input lines: down, so
// that a broken wire reads Low — the e-stop pressed and a leak detected
// (both active low, wired as contacts to 3.3 V that open on the
// condition). The simulator's lines have no pull.
const hostInputPull = pgpio.PullDown

// hostFeedbackPull is the pull of the relay's read-back line: up, so that
// a broken wire reads "energised". A halt (relay de-energised) is then
// never falsely confirmed: the e-stop reports the relay unconfirmed and
// the operator looks; the opposite mistake, an arm falsely confirmed,
// leaves the heater and gas valves without power, which is safe.
const hostFeedbackPull = pgpio.PullUp

// hostGPIO holds the four lines on the host's GPIO pins (gpio.source:
// host), found through periph.io/x/host, by the simulator's line names
// (simgpio.EStop, Leak, Relay, RelayFB) so that StartInputs and Relay
// treat both sources alike.
type hostGPIO struct {
	pins map[string]pgpio.PinIO
}

// openHostGPIO initialises periph's host drivers (those of
// hostdrivers_linux.go, and of hostdrivers_legacy*.go with the tag
// gpio_legacy) and looks up the pins of g. It configures nothing:
// StartInputs and Relay do.
func openHostGPIO(g rig.GPIO) (*hostGPIO, error) {
	state, err := driverreg.Init()
	if err != nil {
		return nil, fmt.Errorf("rigconfig: gpio: periph host drivers: %w", err)
	}
	var found []string
	for _, p := range gpioreg.All() { // sorted by name
		found = append(found, p.Name())
	}
	var drivers []string
	if len(found) == 0 {
		for _, f := range append(state.Failed, state.Skipped...) {
			if strings.Contains(f.D.String(), "gpio") {
				drivers = append(drivers, f.String())
			}
		}
	}
	h := &hostGPIO{pins: map[string]pgpio.PinIO{}}
	var errs []error
	for _, l := range []struct{ line, key, pin string }{
		{simgpio.EStop, "gpio.estop_pin", g.EStopPin},
		{simgpio.Leak, "gpio.leak_pin", g.LeakPin},
		{simgpio.Relay, "gpio.relay_pin", g.RelayPin},
		{simgpio.RelayFB, "gpio.relay_feedback_pin", g.RelayFeedbackPin},
		{simgpio.Heartbeat, "gpio.heartbeat_pin", g.HeartbeatPin},
	} {
		if l.line == simgpio.Heartbeat && g.RelayWatchdog <= 0 {
			continue // no watchdog relay: no heartbeat line
		}
		p := gpioreg.ByName(l.pin)
		if l.pin == "" || p == nil {
			errs = append(errs, &PinError{Key: l.key, Pin: l.pin, Found: found, Drivers: drivers})
			continue
		}
		switch l.line {
		case simgpio.Relay, simgpio.Heartbeat:
			h.pins[l.line] = p
		case simgpio.RelayFB:
			h.pins[l.line] = &inputPin{PinIO: p, pull: hostFeedbackPull}
		default:
			h.pins[l.line] = &inputPin{PinIO: p, pull: hostInputPull}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rigconfig: gpio: %w", err)
	}
	return h, nil
}

// pin returns the pin of line (a simgpio line name).
func (h *hostGPIO) pin(line string) (pgpio.PinIO, error) {
	p, ok := h.pins[line]
	if !ok {
		return nil, fmt.Errorf("rigconfig: gpio: no host pin for line %q", line)
	}
	return p, nil
}

// inputPin is a host pin used as an input. It is configured once, by the
// first In, with the line's pull and edge detection on both edges when the
// pin has it; later calls change nothing. periph hands out one object per
// pin, and the relay_fb line is both the relay's read-back (NewOutput
// configures it without edges) and a watched input (NewInput with both
// edges): a second configuration must not turn the watcher's edges off.
type inputPin struct {
	pgpio.PinIO
	pull pgpio.Pull

	mu    sync.Mutex
	done  bool // configured
	edges bool // with edge detection
}

// In configures the pin on the first call (pull is the line's, whatever
// the caller asks); it fails when edges are asked of a pin without them.
func (p *inputPin) In(_ pgpio.Pull, edge pgpio.Edge) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		if err := p.PinIO.In(p.pull, pgpio.BothEdges); err == nil {
			p.edges = true
		} else if err2 := p.PinIO.In(p.pull, pgpio.NoEdge); err2 != nil {
			return fmt.Errorf("configure %s as input: %w", p.PinIO, errors.Join(err, err2))
		}
		p.done = true
	}
	if edge != pgpio.NoEdge && !p.edges {
		return fmt.Errorf("%s: no edge detection on this pin", p.PinIO)
	}
	return nil
}
