package rigconfig

import (
	"fmt"

	"hcp-edge/session/modelrouter"
)

// ModelRegistry is the model router's registry: the `models:` section, or
// modelrouter.DefaultRegistry (the two local models) when it is absent.
func (f File) ModelRegistry() modelrouter.Registry {
	if len(f.Models) == 0 {
		return modelrouter.DefaultRegistry()
	}
	return modelrouter.Registry{Models: f.Models}
}

// validateModels checks the `models:` section: every registry problem
// (modelrouter.Registry.Problems), each keyed models[i].field. (An inline
// api_key is no field of the type: the schema refuses it, and so does the
// decoder.)
func (f File) validateModels() []error {
	if len(f.Models) == 0 {
		return nil
	}
	var errs []error
	for _, p := range f.ModelRegistry().Problems() {
		key := "models"
		if p.Index >= 0 {
			key = fmt.Sprintf("models[%d].%s", p.Index, p.Key)
		}
		errs = append(errs, fmt.Errorf("%s: %s", key, p.Msg))
	}
	return errs
}

// ModelTrackerFile is the model router's tracker in the state directory:
// the day's spend and each model's statistics, saved after every analysis
// so that the daily budget holds across a restart (`hcp-edge models` reads
// it).
const ModelTrackerFile = "model-tracker.json"
