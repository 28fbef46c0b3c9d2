package plant

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Fault names (configs/rig-protocols.md, Faults).
const (
	FaultThermalRunaway = "thermal-runaway"
	FaultTCOpen         = "tc-open"
	FaultTCFrozen       = "tc-frozen"
	FaultSilent         = "silent"
	FaultCorrupt        = "corrupt"
	FaultMFCStuckOpen   = "mfc-stuck-open"
	FaultGasLeak        = "gas-leak"
	FaultVacuumLoss     = "vacuum-loss"
	FaultChamberLeak    = "chamber-leak"
	FaultEstop          = "estop"
	FaultDoorOpen       = "door-open"
	// FaultScrubberTrip: the exhaust scrubber stops by itself (its
	// contactor drops out, its supply fails): its output reads off at
	// once, exhaust_ok with it, and it will not run again (a write to
	// switch it on is taken but it stays off) until the fault is cleared
	// and it is switched on anew.
	FaultScrubberTrip = "scrubber-trip"
	// FaultExhaustLost: the exhaust's flow switch opens (fan stopped, duct
	// blocked): exhaust_ok reads 0 while the scrubber's output stays on.
	FaultExhaustLost = "exhaust-lost"

	// The spectrum faults: what makes the Raman spectrum realistic rather
	// than ideal (SpectrumFaults reads them; serialsim renders them).
	FaultRamanFluorescence = "raman-fluorescence"
	FaultRamanSpikes       = "raman-spikes"
	FaultRamanSaturation   = "raman-saturation"
	FaultRamanMixed        = "raman-mixed-coverage"
)

// FaultNames lists every fault the plant knows.
var FaultNames = []string{
	FaultThermalRunaway, FaultTCOpen, FaultTCFrozen, FaultSilent, FaultCorrupt,
	FaultMFCStuckOpen, FaultGasLeak, FaultVacuumLoss, FaultChamberLeak, FaultEstop, FaultDoorOpen,
	FaultScrubberTrip, FaultExhaustLost,
	FaultRamanFluorescence, FaultRamanSpikes, FaultRamanSaturation, FaultRamanMixed,
}

// spectrumFaultArg is the numeric target of a spectrum fault: its default
// when the target is empty and the range it must lie in (lo < v <= hi).
var spectrumFaultArg = map[string]struct {
	def, lo, hi float64
	what        string
}{
	FaultRamanFluorescence: {1, 0, 50, "the background's strength (1 = typical)"},
	FaultRamanSpikes:       {3, 0, 100, "the mean number of spikes per acquisition"},
	FaultRamanSaturation:   {65535, 0, 1e12, "the detector's full-well count"},
}

// ChamberLeakMaxPaPerMin bounds the rate of rise a chamber-leak fault may
// add: above it the fault would be a vacuum loss.
const ChamberLeakMaxPaPerMin = 10000.0

// Devices lists the device names a silent or corrupt fault may target on the
// MoS2 rig (Plant.Devices has the plant's).
var Devices = []string{"furnace", "dio", "mfc-ar", "mfc-h2", "mfc-h2s", "gauge", "raman"}

// Fault is one active fault.
type Fault struct {
	Name   string    `json:"name"`
	Target string    `json:"target,omitempty"`
	Since  time.Time `json:"since"`
}

type faultKey struct{ name, target string }

// normalizeFault validates name and target and returns the canonical target.
func (p *Plant) normalizeFault(name, target string) (string, error) {
	target = strings.ToLower(strings.TrimSpace(target))
	switch name {
	case FaultSilent, FaultCorrupt:
		devices := p.Devices()
		for _, d := range devices {
			if d == target {
				return target, nil
			}
		}
		return "", fmt.Errorf("%w: %s needs a device (%s), got %q", ErrBadTarget, name, strings.Join(devices, ", "), target)
	case FaultMFCStuckOpen:
		for _, g := range p.Gases() {
			if g == target {
				return target, nil
			}
		}
		return "", fmt.Errorf("%w: %s needs a gas (%s), got %q", ErrBadTarget, name, strings.Join(p.Gases(), ", "), target)
	case FaultChamberLeak:
		v, err := strconv.ParseFloat(target, 64)
		if err != nil || !(v > 0) || v > ChamberLeakMaxPaPerMin {
			return "", fmt.Errorf("%w: %s needs the rate of rise it adds, in Pa/min (0 < rate <= %g), got %q",
				ErrBadTarget, name, ChamberLeakMaxPaPerMin, target)
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case FaultRamanFluorescence, FaultRamanSpikes, FaultRamanSaturation:
		a := spectrumFaultArg[name]
		if target == "" {
			return strconv.FormatFloat(a.def, 'g', -1, 64), nil
		}
		v, err := strconv.ParseFloat(target, 64)
		if err != nil || !(v > a.lo) || v > a.hi {
			return "", fmt.Errorf("%w: %s takes %s (%g < v <= %g, default %g), got %q",
				ErrBadTarget, name, a.what, a.lo, a.hi, a.def, target)
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case FaultThermalRunaway, FaultTCOpen, FaultTCFrozen:
		// the furnace ("", or its zone's name), or another heated zone by name
		zs := p.Zones()
		for i, z := range zs {
			if target == z {
				return p.zone(i).fault, nil
			}
		}
		if target != "" {
			if len(zs) == 0 {
				return "", fmt.Errorf("%w: %s takes no target, got %q", ErrBadTarget, name, target)
			}
			return "", fmt.Errorf("%w: %s takes a zone (%s) or none (the %s zone), got %q", ErrBadTarget, name, strings.Join(zs, ", "), zs[len(zs)-1], target)
		}
		return "", nil
	case FaultGasLeak, FaultVacuumLoss, FaultEstop, FaultDoorOpen,
		FaultScrubberTrip, FaultExhaustLost, FaultRamanMixed:
		if target != "" {
			return "", fmt.Errorf("%w: %s takes no target, got %q", ErrBadTarget, name, target)
		}
		return "", nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownFault, name)
}

// Inject activates fault name for target ("" for faults without one).
// Injecting an active fault again is a no-op. A spectrum fault holds one
// value: injecting it with another replaces the one active.
func (p *Plant) Inject(name, target string) error {
	t, err := p.normalizeFault(name, target)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := faultKey{name, t}
	if _, numeric := spectrumFaultArg[name]; numeric {
		for o := range p.faults {
			if o.name == name && o != k {
				delete(p.faults, o)
			}
		}
	}
	if _, ok := p.faults[k]; !ok {
		p.faults[k] = p.now()
	}
	if name == FaultScrubberTrip {
		p.coils[CoilScrubber] = false // dropped out: it does not restart by itself when cleared
	}
	p.updatePinsLocked()
	return nil
}

// Clear deactivates fault name; with target "" it clears every target of
// that name. Clearing an inactive fault is a no-op; "all" clears everything.
func (p *Plant) Clear(name, target string) error {
	if name == "all" {
		p.ClearAll()
		return nil
	}
	t := strings.ToLower(strings.TrimSpace(target))
	if t != "" {
		var err error
		if t, err = p.normalizeFault(name, t); err != nil {
			return err
		}
	} else if !knownFault(name) {
		return fmt.Errorf("%w: %q", ErrUnknownFault, name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.faults {
		if k.name == name && (t == "" || k.target == t) {
			delete(p.faults, k)
		}
	}
	p.updatePinsLocked()
	return nil
}

func knownFault(name string) bool {
	for _, n := range FaultNames {
		if n == name {
			return true
		}
	}
	return false
}

// ClearAll clears every fault.
func (p *Plant) ClearAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.faults)
	p.updatePinsLocked()
}

// Faults lists the active faults, sorted by name and target.
func (p *Plant) Faults() []Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faultsLocked()
}

func (p *Plant) faultsLocked() []Fault {
	out := make([]Fault, 0, len(p.faults))
	for k, since := range p.faults {
		out = append(out, Fault{Name: k.name, Target: k.target, Since: since})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Target < out[j].Target
	})
	return out
}

func (p *Plant) faultActiveLocked(name, target string) bool {
	if len(p.faults) == 0 {
		return false
	}
	_, ok := p.faults[faultKey{name, target}]
	return ok
}

// chamberLeakLocked is the conductance (m³/s) of every active chamber-leak
// fault together: each adds its rate of rise (Pa/min, its target) at vacuum,
// a leak from atmosphere into the chamber.
func (p *Plant) chamberLeakLocked() float64 {
	var c float64
	for k := range p.faults {
		if k.name != FaultChamberLeak {
			continue
		}
		if rate, err := strconv.ParseFloat(k.target, 64); err == nil {
			c += rate / 60 * chamberVolumeM3 / AtmospherePa
		}
	}
	return c
}

// SpectrumFaults are the active spectrum faults as the spectrometer renders
// them; the zero value (none active) is the ideal spectrum.
type SpectrumFaults struct {
	// Fluorescence is the strength of the sample's sloped fluorescence
	// background (1 = typical); 0 for none.
	Fluorescence float64 `json:"fluorescence,omitempty"`
	// Spikes is the mean number of cosmic-ray spikes per acquisition.
	Spikes float64 `json:"spikes,omitempty"`
	// FullWell is the count at which the detector saturates; 0 never.
	FullWell uint64 `json:"full_well,omitempty"`
	// MixedCoverage renders a fractional layer count as a mixture of areas
	// of whole layer counts weighted by their coverage (Film.Truth), instead
	// of peaks at interpolated positions.
	MixedCoverage bool `json:"mixed_coverage,omitempty"`
}

// SpectrumFaults returns the active spectrum faults.
func (p *Plant) SpectrumFaults() SpectrumFaults {
	p.mu.Lock()
	defer p.mu.Unlock()
	var s SpectrumFaults
	for k := range p.faults {
		v, _ := strconv.ParseFloat(k.target, 64) // normalised on Inject
		switch k.name {
		case FaultRamanFluorescence:
			s.Fluorescence = v
		case FaultRamanSpikes:
			s.Spikes = v
		case FaultRamanSaturation:
			s.FullWell = uint64(v)
		case FaultRamanMixed:
			s.MixedCoverage = true
		}
	}
	return s
}
