package rigconfig

import (
	"hcp-edge/drivers/rigbuild"
	"hcp-edge/envelope"
)

// Spec derives the envelope.RigSpec of r: what its profiles say
// (rigbuild.FactsOf) and its layout, put together by envelope.SpecOf.
func Spec(r Rig) (envelope.RigSpec, error) {
	ps, err := r.Profiles()
	if err != nil {
		return envelope.RigSpec{}, err
	}
	f, err := rigbuild.FactsOf(r.Config, ps)
	if err != nil {
		return envelope.RigSpec{}, err
	}
	return envelope.SpecOf(r.Layout(), f)
}
