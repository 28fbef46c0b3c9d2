package serialsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// Link names of the instruments under the run directory.
const (
	LinkMFCAr  = "mfc-ar"
	LinkMFCH2  = "mfc-h2"
	LinkMFCH2S = "mfc-h2s"
	LinkGauge  = "gauge"
	LinkRaman  = "raman"
)

// Opts configures StartAllOpts.
type Opts struct {
	// Seed seeds every instrument's noise and corruption source (each gets its
	// own stream derived from it). 0 seeds from the clock.
	Seed uint64
	// Logger receives line failures; nil discards them.
	Logger *slog.Logger
	// Gauge is the gauge controller's model and output mode (zero: a TPG
	// 261 answering only what it is asked).
	Gauge GaugeVariant
	// MFCVariants chooses each controller's variant by gas ("ar"); the key
	// "" applies to every controller not named. Empty: MFCDefault.
	MFCVariants map[string]MFCVariant
}

// DefaultOpts returns the options StartAll uses: clock-seeded noise, no logging.
func DefaultOpts() Opts { return Opts{} }

// Set is the rig's five serial instruments, running.
type Set struct {
	// MFCs holds the controllers by gas: "ar", "h2", "h2s" ("ch4" on the
	// graphene rig).
	MFCs  map[string]*MFC
	Gauge *Gauge
	Raman *Raman
}

// StartAll serves the rig's serial instruments under dir: <dir>/mfc-ar,
// <dir>/mfc-h2, <dir>/mfc-h2s (<dir>/mfc-ch4 on the graphene rig: a mfc-<gas>
// for each of the plant's Gases), <dir>/gauge and <dir>/raman (reading the
// rig's WindowFor), each a symlink to its own pty. They run until Close or until ctx is done.
func StartAll(ctx context.Context, p *plant.Plant, dir string) (*Set, error) {
	if p == nil {
		return nil, errors.New("serialsim: nil plant")
	}
	return StartAllOpts(ctx, p, dir, DefaultOpts())
}

// StartAllOpts is StartAll with options and any Plant.
func StartAllOpts(ctx context.Context, p Plant, dir string, o Opts) (*Set, error) {
	if p == nil {
		return nil, errors.New("serialsim: nil plant")
	}
	seed := o.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	gases := []string{"ar", "h2", "h2s"}
	if g, ok := p.(interface{ Gases() []string }); ok {
		gases = g.Gases()
	}
	window := TMDWindow
	if r, ok := p.(interface{ Rig() plant.Rig }); ok {
		window = WindowFor(r.Rig())
	}
	s := &Set{MFCs: make(map[string]*MFC, len(gases))}
	for i, gas := range gases {
		mfc, err := NewMFC(ctx, p, MFCOpts{Link: filepath.Join(dir, "mfc-"+gas), Gas: gas, Seed: seed + uint64(i) + 1, Logger: o.Logger, Variant: o.mfcVariant(gas)})
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		s.MFCs[gas] = mfc
	}
	g, err := NewGauge(ctx, p, GaugeOpts{Link: filepath.Join(dir, LinkGauge), Seed: seed + 4, Logger: o.Logger, Variant: o.Gauge})
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.Gauge = g
	r, err := NewRaman(ctx, p, RamanOpts{Link: filepath.Join(dir, LinkRaman), Seed: seed + 5, Logger: o.Logger, Window: window})
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.Raman = r
	return s, nil
}

// Close stops every instrument, removes the links and waits for their
// goroutines.
func (s *Set) Close() error {
	var errs []error
	gases := make([]string, 0, len(s.MFCs))
	for gas := range s.MFCs {
		gases = append(gases, gas)
	}
	sort.Strings(gases)
	for _, gas := range gases {
		if m := s.MFCs[gas]; m != nil {
			if err := m.Close(); err != nil {
				errs = append(errs, fmt.Errorf("mfc-%s: %w", gas, err))
			}
		}
	}
	if s.Gauge != nil {
		if err := s.Gauge.Close(); err != nil {
			errs = append(errs, fmt.Errorf("gauge: %w", err))
		}
	}
	if s.Raman != nil {
		if err := s.Raman.Close(); err != nil {
			errs = append(errs, fmt.Errorf("raman: %w", err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("serialsim: close: %w", errors.Join(errs...))
	}
	return nil
}
