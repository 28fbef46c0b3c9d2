package executor

import (
	"strconv"

	"hcp-edge/device"
	"hcp-edge/session/jcamp"
)

// The JCAMP-DX spectrum artifact of every measuring session (docs/RECORD.md).
const (
	jcampName = "raman_spectrum_jcamp"
	jcampFile = "raman_spectrum.jdx"
)

// jcampSpectrum renders the run's spectrum as JCAMP-DX: Raman shift in
// 1/CM, intensity in COUNTS, the acquisition time, the integration, the
// session, the recipe and, once analysed, the material the analysis read.
func (r *recipeRun) jcampSpectrum(env *Env, sp *device.Spectrum) ([]byte, error) {
	title := "Raman spectrum, session " + env.SessionID
	sample := ""
	if a := r.st.Analysis; a != nil && a.Material != "" {
		title += ", " + string(a.Material)
		sample = string(a.Material) + " film grown by recipe " + r.st.Plan.Recipe.Name
	}
	params := []jcamp.Param{{Name: "INTEGRATION TIME MS", Value: strconv.FormatInt(sp.Integration.Milliseconds(), 10)}}
	if id := r.st.Plan.Recipe; id.Name != "" {
		params = append(params, jcamp.Param{Name: "RECIPE", Value: id.Name + " " + id.Version + " sha256:" + id.SHA256})
	}
	if env.SessionID != "" {
		params = append(params, jcamp.Param{Name: "SESSION", Value: env.SessionID})
	}
	return jcamp.Encode(jcamp.Spectrum{Shift: sp.Shift, Counts: sp.Counts}, jcamp.Meta{
		Title: title, Origin: "hcp-edge", Instrument: "Raman spectrometer of the rig (hcp-edge raman driver)",
		Sample: sample, Acquired: sp.At, Source: "hcp://" + env.SessionID + "/artifacts/" + jcampFile, Params: params,
	})
}
