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

// CompileEnvelope compiles f's envelope against the rig f describes (its
// Spec): what the daemon, the CLI's checks and the previews all run on.
func (f File) CompileEnvelope() (*envelope.Envelope, error) {
	spec, err := Spec(f.Rig)
	if err != nil {
		return nil, err
	}
	return envelope.Compile(f.Envelope, spec)
}
