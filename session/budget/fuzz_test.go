package budget

import (
	"errors"
	"math"
	"testing"
)

// FuzzParseTask: any payload either parses into limits that are all in
// range, or is refused with ErrInvalid; nothing panics.
func FuzzParseTask(f *testing.F) {
	for _, s := range []string{
		`{"constraints":{"budgets":{"gas_volume_scc":{"H2S":12.5},"heater_full_power_s":600,"max_actions":40}}}`,
		`{"constraints":{"budgets":{"gas_volume_scc":{"H2":0}}}}`,
		`{"constraints":{"budgets":null}}`,
		`{"constraints":{"budgets":{"max_actions":-1}}}`,
		`{"constraints":{"budgets":{"heater_full_power_s":1e400}}}`,
		`{}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		l, err := ParseTask(payload)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for g, v := range l.GasVolume {
			if g == "" || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("gas %q: %v", g, v)
			}
		}
		if l.HeaterEnergy < 0 || math.IsNaN(l.HeaterEnergy) || math.IsInf(l.HeaterEnergy, 0) || l.Actions < 0 {
			t.Fatalf("limits %+v", l)
		}
	})
}
