package dio

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/hcp-edge/hcp-edge/device"
	"github.com/hcp-edge/hcp-edge/drivers/modbus"
)

// Bus is what the module needs from a Modbus line; *modbus.Bus has it.
type Bus interface {
	ReadCoils(ctx context.Context, unit byte, addr, qty uint16) ([]bool, error)
	ReadDiscreteInputs(ctx context.Context, unit byte, addr, qty uint16) ([]bool, error)
	WriteSingleCoil(ctx context.Context, unit byte, addr uint16, on bool) error
}

var _ Bus = (*modbus.Bus)(nil)

// CoilSpec names one coil and its safe level.
type CoilSpec struct {
	Name    string
	Address uint16
	Safe    bool // the level Halt drives it to
}

// InputSpec names one discrete input. Invert makes Read return true when the
// input is 0 (for a contact whose named condition is the open state).
type InputSpec struct {
	Name    string
	Address uint16
	Invert  bool
}

// Opts configures a Module.
type Opts struct {
	Name   string // default "dio"
	Unit   byte   // default 2
	Coils  []CoilSpec
	Inputs []InputSpec
}

// DefaultOpts is the rig's digital I/O module (configs/rig-protocols.md):
// coils pump 0, gate_valve 1, ar_valve 2, h2_valve 3, h2s_valve 4, vent_valve 5,
// scrubber 6 (all safe off except the scrubber, safe on); inputs door_closed 0,
// exhaust_ok 1, pump_running 2.
func DefaultOpts() Opts {
	return Opts{
		Name: "dio",
		Unit: 2,
		Coils: []CoilSpec{
			{Name: "pump", Address: 0},
			{Name: "gate_valve", Address: 1},
			{Name: "ar_valve", Address: 2},
			{Name: "h2_valve", Address: 3},
			{Name: "h2s_valve", Address: 4},
			{Name: "vent_valve", Address: 5},
			{Name: "scrubber", Address: 6, Safe: true},
		},
		Inputs: []InputSpec{
			{Name: "door_closed", Address: 0},
			{Name: "exhaust_ok", Address: 1},
			{Name: "pump_running", Address: 2},
		},
	}
}

// Module is the digital I/O module on one unit id.
type Module struct {
	bus    Bus
	o      Opts
	coils  map[string]*Switch
	inputs map[string]*Input
}

// New returns a Module on bus. It sends nothing.
func New(bus Bus, o Opts) (*Module, error) {
	if bus == nil {
		return nil, errors.New("dio: nil bus")
	}
	if o.Name == "" {
		o.Name = "dio"
	}
	m := &Module{bus: bus, o: o, coils: map[string]*Switch{}, inputs: map[string]*Input{}}
	seen := map[uint16]bool{}
	for _, c := range o.Coils {
		if c.Name == "" {
			return nil, fmt.Errorf("%s: coil %d has no name", o.Name, c.Address)
		}
		if m.coils[c.Name] != nil || seen[c.Address] {
			return nil, fmt.Errorf("%s: coil %q (%d) configured twice", o.Name, c.Name, c.Address)
		}
		seen[c.Address] = true
		m.coils[c.Name] = &Switch{m: m, spec: c}
	}
	seenIn := map[string]bool{}
	for _, in := range o.Inputs {
		if in.Name == "" || seenIn[in.Name] {
			return nil, fmt.Errorf("%s: input %q (%d) unnamed or configured twice", o.Name, in.Name, in.Address)
		}
		seenIn[in.Name] = true
		m.inputs[in.Name] = &Input{m: m, spec: in}
	}
	return m, nil
}

// String names the module.
func (m *Module) String() string { return m.o.Name }

// Switch returns the switch for the named coil.
func (m *Module) Switch(name string) (*Switch, error) {
	s, ok := m.coils[name]
	if !ok {
		return nil, fmt.Errorf("%s: no coil named %q", m.o.Name, name)
	}
	return s, nil
}

// Input returns the named discrete input.
func (m *Module) Input(name string) (*Input, error) {
	in, ok := m.inputs[name]
	if !ok {
		return nil, fmt.Errorf("%s: no input named %q", m.o.Name, name)
	}
	return in, nil
}

// Switches returns every switch, ordered by address.
func (m *Module) Switches() []*Switch {
	out := make([]*Switch, 0, len(m.coils))
	for _, s := range m.coils {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Address < out[j].spec.Address })
	return out
}

// Halt drives every coil to its safe level, each confirmed by read-back. It
// tries them all and returns every failure.
func (m *Module) Halt(ctx context.Context) error {
	var errs []error
	for _, s := range m.Switches() {
		errs = append(errs, s.Halt(ctx))
	}
	return errors.Join(errs...)
}

var _ device.Instrument = (*Module)(nil)

// Switch is one coil of the module.
type Switch struct {
	m    *Module
	spec CoilSpec
}

var _ device.Switch = (*Switch)(nil)

// String is the coil's name.
func (s *Switch) String() string { return s.spec.Name }

func (s *Switch) prefix() string {
	return fmt.Sprintf("%s coil %s (%d)", s.m.o.Name, s.spec.Name, s.spec.Address)
}

// SafeState is the level Halt drives the coil to.
func (s *Switch) SafeState() bool { return s.spec.Safe }

// Set writes the coil (FC 05) and confirms it by reading it back (FC 01).
func (s *Switch) Set(ctx context.Context, on bool) error {
	if err := s.m.bus.WriteSingleCoil(ctx, s.m.o.Unit, s.spec.Address, on); err != nil {
		return fmt.Errorf("%s: set %v: %w", s.prefix(), on, err)
	}
	got, err := s.State(ctx)
	if err != nil {
		return err
	}
	if got != on {
		return fmt.Errorf("%s: set %v, reads %v: %w", s.prefix(), on, got, device.ErrReadback)
	}
	return nil
}

// State reads the coil back from the module (FC 01).
func (s *Switch) State(ctx context.Context) (bool, error) {
	bits, err := s.m.bus.ReadCoils(ctx, s.m.o.Unit, s.spec.Address, 1)
	if err != nil {
		return false, fmt.Errorf("%s: read: %w", s.prefix(), err)
	}
	return bits[0], nil
}

// Halt drives the coil to its safe level and confirms it by read-back.
func (s *Switch) Halt(ctx context.Context) error { return s.Set(ctx, s.spec.Safe) }

// Input is one discrete input of the module.
type Input struct {
	m    *Module
	spec InputSpec
}

var _ device.DigitalInput = (*Input)(nil)

// String is the input's name.
func (in *Input) String() string { return in.spec.Name }

// Read returns the input (FC 02), inverted when configured.
func (in *Input) Read(ctx context.Context) (bool, error) {
	bits, err := in.m.bus.ReadDiscreteInputs(ctx, in.m.o.Unit, in.spec.Address, 1)
	if err != nil {
		return false, fmt.Errorf("%s input %s (%d): %w", in.m.o.Name, in.spec.Name, in.spec.Address, err)
	}
	return bits[0] != in.spec.Invert, nil
}
