package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hcp-edge/device"
	"hcp-edge/envelope"
	"hcp-edge/session/analysis"
	"hcp-edge/session/lifecycle"
	"hcp-edge/session/recipe"
)

// Integration bounds of the spectrometer.acquire tool (its input schema).
const (
	toolMinIntegration = 10 * time.Millisecond
	toolMaxIntegration = 60 * time.Second
)

// reacquire acts on the router's advice of a new acquisition (p.Reacquire:
// a longer integration when noise limits the answer, a shorter one when the
// detector clips). Models advise; the executor decides: it re-acquires
// once, and only when the integration, clamped to the range the recipe's
// check covered (recipe.Measure), the rig's spectrometer and the
// envelope's integration limits, differs from the spectrum's in the advised
// direction, and the session's time left (less the analysis margin) covers
// it. The acquisition is an action of the spectrometer.acquire tool through
// the Rig, as the measure phase's (the interlock judges it); the new
// spectrum is analysed again, and the outputs keep the new analysis unless
// it is less confident or found nothing (ProvenanceReacquired says which).
// A failed re-acquisition keeps the first analysis, with a warning; only
// the end of ctx fails the step. Advice it does not act on is a warning.
func (r *recipeRun) reacquire(ctx context.Context, i int, ph *recipe.Phase, a analysis.Result, p *Provenance) (analysis.Result, *Provenance, error) {
	adv := p.Reacquire
	if adv == nil || r.st.Spectrum == nil {
		return a, p, nil
	}
	it, why := r.reacquireAt(ctx, i, adv.Integration)
	if why != "" {
		r.warn(ctx, "reacquire_advised", fmt.Sprintf("a new acquisition at %v would help: %s", adv.Integration, adv.Reason),
			map[string]any{"integration_ms": adv.Integration.Milliseconds(), "not_reacquired": why})
		return a, p, nil
	}
	from := r.st.Spectrum.Integration
	rq := &ProvenanceReacquired{From: from, Integration: it, Reason: adv.Reason, Before: p.reading(), Kept: "original"}
	_ = r.emit(ctx, lifecycle.EventProgress, Progress{Stage: ph.Stage,
		Message: fmt.Sprintf("re-acquiring the Raman spectrum at %v (was %v): %s", it, from, adv.Reason)})
	res, err := r.apply(ctx, envelope.AcquireAction(it))
	if err == nil && res.Spectrum == nil {
		err = fmt.Errorf("%w: the spectrometer returned no spectrum", device.ErrFrame)
	}
	var (
		a2 analysis.Result
		p2 *Provenance
	)
	if err == nil {
		a2, p2, err = r.routed(ctx, ph.Analyse.Material, *res.Spectrum)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return a, p, errors.Join(cerr, err)
		}
		rq.Error = err.Error()
		p.Reacquired = rq
		r.warn(ctx, "reacquire_failed", fmt.Sprintf("the re-acquisition at %v failed; the first analysis stands: %v", it, err), nil)
		return a, p, nil
	}
	after := p2.reading()
	rq.After = &after
	if a2.Found && p2.Confidence >= p.Confidence {
		rq.Kept = "reacquired"
		p2.Reacquired, p2.Cost = rq, p2.Cost+p.Cost
		r.st.Spectrum = res.Spectrum
		return a2, p2, nil
	}
	p.Reacquired, p.Cost = rq, p.Cost+p2.Cost
	return a, p, nil
}

// reacquireAt is the integration a re-acquisition advised at advised may
// use, or why there is none.
func (r *recipeRun) reacquireAt(ctx context.Context, i int, advised time.Duration) (time.Duration, string) {
	m := r.measureBefore(i)
	if m == nil || m.MaxIntegration <= 0 {
		return 0, "the recipe's acquisition declares no range of integrations"
	}
	lo, hi := max(m.MinIntegration, toolMinIntegration), min(m.MaxIntegration, toolMaxIntegration)
	if env := r.env.Rig.Envelope(); env != nil {
		if sp := env.Spec().Spectrometer; sp != nil {
			lo, hi = max(lo, sp.MinIntegration), min(hi, sp.MaxIntegration)
		}
		if ip, ok := param(env, envelope.ChannelIntegration); ok {
			if ip.Min != nil {
				if v, err := durationIn(*ip.Min, ip.Unit); err == nil {
					lo = max(lo, v)
				}
			}
			if ip.Max != nil {
				if v, err := durationIn(*ip.Max, ip.Unit); err == nil {
					hi = min(hi, v)
				}
			}
		}
	}
	from := r.st.Spectrum.Integration
	it := min(max(advised.Round(time.Millisecond), lo), hi).Truncate(time.Millisecond) // the tool takes whole milliseconds
	switch {
	case lo > hi || it < lo:
		return 0, fmt.Sprintf("no integration lies within the recipe's range and the rig's limits (%v..%v)", lo, hi)
	case (advised > from) != (it > from) || it == from:
		return 0, fmt.Sprintf("the recipe's range and the rig's limits (%v..%v) allow no integration toward %v from %v", lo, hi, advised, from)
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := r.env.Clock.Process(time.Until(dl) - analysisMargin); left < it {
			return 0, fmt.Sprintf("the session's time left (%v less %v for the results) does not cover an integration of %v",
				time.Until(dl).Round(time.Second), analysisMargin, it)
		}
	}
	return it, ""
}

// measureBefore is the last measure phase before phase i: the acquisition
// whose spectrum phase i analyses.
func (r *recipeRun) measureBefore(i int) *recipe.Measure {
	for j := min(i, len(r.st.Plan.Phases)) - 1; j >= 0; j-- {
		if m := r.st.Plan.Phases[j].Measure; m != nil {
			return m
		}
	}
	return nil
}
