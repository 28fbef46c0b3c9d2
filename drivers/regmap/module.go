package regmap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"hcp-edge/device"
	"hcp-edge/drivers/profile"
)

// OutputSpec places one of the rig's on/off outputs on a channel of the
// module: the layout names it and gives its safe level.
type OutputSpec struct {
	Name    string // the rig's name for it, e.g. a valve
	Channel string // the profile's channel (role output)
	Safe    bool   // the level Halt drives it to
}

// InputSpec places one of the rig's binary inputs on a channel. Invert
// makes Read return true when the input is 0 (for a contact whose named
// condition is the open state).
type InputSpec struct {
	Name    string
	Channel string // the profile's channel (role input)
	Invert  bool
}

// ModuleOpts places an I/O module on its bus and names its channels.
type ModuleOpts struct {
	Name    string // default "dio"
	Unit    byte
	Outputs []OutputSpec
	Inputs  []InputSpec
}

// CoilSpec is an output as the module drives it: name, coil address, safe level.
type CoilSpec struct {
	Name    string
	Address uint16
	Safe    bool
}

// bitSpec is an input as the module reads it.
type bitSpec struct {
	Name    string
	Address uint16
	Invert  bool
	Coil    bool // read with FC 01 (an input on a coil), else FC 02
}

// Module is an I/O module on one unit id, driven through its profile.
type Module struct {
	bus    Bus
	p      *profile.Profile
	o      ModuleOpts
	coils  map[string]*Switch
	inputs map[string]*Input
	// coilBank and inputBank read every output, every input, in one
	// transaction (nil when the addresses are not contiguous).
	coilBank, inputBank *bank
}

// NewModule returns the module of profile p on bus with the layout's
// outputs and inputs. It sends nothing.
func NewModule(bus Bus, p *profile.Profile, o ModuleOpts) (*Module, error) {
	if bus == nil || p == nil {
		return nil, errors.New("regmap: nil bus or profile")
	}
	if o.Name == "" {
		o.Name = "dio"
	}
	if p.Family != profile.Modbus {
		return nil, fmt.Errorf("%s: profile %s is not a Modbus profile", o.Name, p.ID)
	}
	m := &Module{bus: bus, p: p, o: o, coils: map[string]*Switch{}, inputs: map[string]*Input{}}
	used := map[string]string{}
	var coils, inputs []bankBit
	for _, out := range o.Outputs {
		ch, ok := p.Channel(out.Channel)
		if !ok || ch.Role != profile.RoleOutput {
			return nil, fmt.Errorf("%s: output %s: profile %s has no output channel %q", o.Name, out.Name, p.ID, out.Channel)
		}
		if out.Name == "" || m.coils[out.Name] != nil || m.inputs[out.Name] != nil {
			return nil, fmt.Errorf("%s: output %q unnamed or configured twice", o.Name, out.Name)
		}
		if prev, dup := used[out.Channel]; dup {
			return nil, fmt.Errorf("%s: output %s: channel %s is already %s", o.Name, out.Name, out.Channel, prev)
		}
		used[out.Channel] = out.Name
		spec := CoilSpec{Name: out.Name, Address: ch.Register().Address, Safe: out.Safe}
		m.coils[out.Name] = &Switch{m: m, spec: spec}
		coils = append(coils, bankBit{name: out.Name, addr: spec.Address})
	}
	var inCoil, inDiscrete []bankBit
	for _, in := range o.Inputs {
		ch, ok := p.Channel(in.Channel)
		if !ok || ch.Role != profile.RoleInput {
			return nil, fmt.Errorf("%s: input %s: profile %s has no input channel %q", o.Name, in.Name, p.ID, in.Channel)
		}
		if in.Name == "" || m.inputs[in.Name] != nil || m.coils[in.Name] != nil {
			return nil, fmt.Errorf("%s: input %q unnamed or configured twice", o.Name, in.Name)
		}
		if prev, dup := used[in.Channel]; dup { // two inputs may read one channel (one inverted); an output's channel is its own
			return nil, fmt.Errorf("%s: input %s: channel %s is output %s", o.Name, in.Name, in.Channel, prev)
		}
		spec := bitSpec{Name: in.Name, Address: ch.Register().Address, Invert: in.Invert, Coil: ch.Table == "coil"}
		m.inputs[in.Name] = &Input{m: m, spec: spec}
		b := bankBit{name: in.Name, addr: spec.Address, invert: in.Invert}
		if spec.Coil {
			inCoil = append(inCoil, b)
		} else {
			inDiscrete = append(inDiscrete, b)
		}
	}
	inputs = inDiscrete
	if m.coilBank = newBank(m, false, coils); m.coilBank != nil {
		for i, b := range m.coilBank.bits {
			m.coils[b.name].index = i
		}
	}
	if len(inCoil) == 0 {
		if m.inputBank = newBank(m, true, inputs); m.inputBank != nil {
			for i, b := range m.inputBank.bits {
				m.inputs[b.name].index = i
			}
		}
	}
	return m, nil
}

// bankBit is one member of a bank.
type bankBit struct {
	name   string
	addr   uint16
	invert bool
}

// bank is the module's coils (FC 01) or discrete inputs (FC 02) read in one
// transaction over their address span.
type bank struct {
	m      *Module
	inputs bool
	lo, n  uint16
	bits   []bankBit // by address, then name: the index of Levels
}

var _ device.LevelBank = (*bank)(nil)

// newBank returns the bank of bits, or nil when it would read an address no
// member has (a gap: a real module may refuse it) or more than one Modbus
// read allows, or has fewer than two members.
func newBank(m *Module, inputs bool, bits []bankBit) *bank {
	if len(bits) < 2 {
		return nil
	}
	bits = slices.Clone(bits)
	sort.Slice(bits, func(i, j int) bool {
		if bits[i].addr != bits[j].addr {
			return bits[i].addr < bits[j].addr
		}
		return bits[i].name < bits[j].name
	})
	lo, hi := bits[0].addr, bits[len(bits)-1].addr
	distinct := 1
	for i := 1; i < len(bits); i++ {
		if bits[i].addr != bits[i-1].addr {
			distinct++
		}
	}
	span := int(hi) - int(lo) + 1
	if span != distinct || span > 2000 {
		return nil
	}
	return &bank{m: m, inputs: inputs, lo: lo, n: uint16(span), bits: bits}
}

// Levels reads the bank in one transaction (FC 01 or FC 02 over the members'
// address span); each level is what the member's State or Read returns.
func (b *bank) Levels(ctx context.Context) ([]bool, error) {
	read, what := b.m.bus.ReadCoils, "coils"
	if b.inputs {
		read, what = b.m.bus.ReadDiscreteInputs, "inputs"
	}
	raw, err := read(ctx, b.m.o.Unit, b.lo, b.n)
	if err != nil {
		return nil, fmt.Errorf("%s %s %d..%d: read: %w", b.m.o.Name, what, b.lo, b.lo+b.n-1, err)
	}
	if len(raw) < int(b.n) {
		return nil, fmt.Errorf("%s %s %d..%d: read %d bits: %w", b.m.o.Name, what, b.lo, b.lo+b.n-1, len(raw), device.ErrFrame)
	}
	out := make([]bool, len(b.bits))
	for i, bit := range b.bits {
		out[i] = raw[bit.addr-b.lo] != bit.invert
	}
	return out, nil
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
	m     *Module
	spec  CoilSpec
	index int // in m.coilBank
}

var _ device.Switch = (*Switch)(nil)

// String is the coil's name.
func (s *Switch) String() string { return s.spec.Name }

func (s *Switch) prefix() string {
	return fmt.Sprintf("%s coil %s (%d)", s.m.o.Name, s.spec.Name, s.spec.Address)
}

// Bank returns the module's coil bank, which reads every coil in one
// transaction (FC 01), and the coil's index in it; nil when the coils'
// addresses are not contiguous.
func (s *Switch) Bank() (device.LevelBank, int) {
	if s.m.coilBank == nil {
		return nil, 0
	}
	return s.m.coilBank, s.index
}

var _ device.BankMember = (*Switch)(nil)

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
	m     *Module
	spec  bitSpec
	index int // in m.inputBank
}

var _ device.DigitalInput = (*Input)(nil)

// String is the input's name.
func (in *Input) String() string { return in.spec.Name }

// Bank returns the module's input bank, which reads every discrete input in
// one transaction (FC 02), and the input's index in it; nil when the inputs'
// addresses are not contiguous.
func (in *Input) Bank() (device.LevelBank, int) {
	if in.m.inputBank == nil {
		return nil, 0
	}
	return in.m.inputBank, in.index
}

var _ device.BankMember = (*Input)(nil)

// Read returns the input (FC 02, or FC 01 for an input on a coil),
// inverted when configured.
func (in *Input) Read(ctx context.Context) (bool, error) {
	read := in.m.bus.ReadDiscreteInputs
	if in.spec.Coil {
		read = in.m.bus.ReadCoils
	}
	bits, err := read(ctx, in.m.o.Unit, in.spec.Address, 1)
	if err != nil {
		return false, fmt.Errorf("%s input %s (%d): %w", in.m.o.Name, in.spec.Name, in.spec.Address, err)
	}
	return bits[0] != in.spec.Invert, nil
}

// Inputs returns every input, ordered by name.
func (m *Module) Inputs() []*Input {
	out := make([]*Input, 0, len(m.inputs))
	for _, in := range m.inputs {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	return out
}

// Profile is the module's profile.
func (m *Module) Profile() *profile.Profile { return m.p }
