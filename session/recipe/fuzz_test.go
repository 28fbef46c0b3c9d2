package recipe

import (
	"testing"

	"hcp-edge/configs"
)

// FuzzLoad: Load never panics, and whatever it accepts Check and Resolve
// can judge and plan.
func FuzzLoad(f *testing.F) {
	names := configs.Recipes().Names()
	for _, n := range names {
		data := configs.Recipes()[n]
		f.Add(data)
	}
	f.Add([]byte("name: x\nversion: 1.0.0\ndescription: d\nphases: [{hold: {duration: {input: a}}}]\ncleanup: {purge: PT1M}\n"))
	env := simEnvelope(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Load("fuzz.yaml", data)
		if err != nil {
			return
		}
		_ = Check(r, env)
		_, _ = r.Resolve(nil)
	})
}
