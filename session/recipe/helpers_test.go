package recipe

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/envelope"
)

// simEnvelope compiles the envelope of the shipped configs/sim.yaml
// against the simulated rig.
func simEnvelope(t testing.TB) *envelope.Envelope {
	t.Helper()
	b, err := os.ReadFile("../../configs/sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Envelope envelope.Config `yaml:"envelope"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Compile(doc.Envelope, simrig.Spec())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
