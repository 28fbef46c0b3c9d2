package executor

import (
	"context"
	"sync"
	"testing"
	"time"

	"hcp-edge/cmd/hiltest/hilbench"
	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/device"
	"hcp-edge/device/catalog"
	"hcp-edge/device/devicetest"
	"hcp-edge/envelope"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
)

// simSpectrometer acquires rig-sim spectra of film (serialsim.SpectrumWith:
// counts and noise scale with the integration), each with its own noise.
type simSpectrometer struct {
	film plant.Film
	mu   sync.Mutex
	seed uint64
	at   []time.Duration // every integration asked, in order
}

func (s *simSpectrometer) String() string             { return "raman" }
func (s *simSpectrometer) Halt(context.Context) error { return nil }

func (s *simSpectrometer) Acquire(_ context.Context, integration time.Duration) (device.Spectrum, error) {
	s.mu.Lock()
	s.seed++
	seed := s.seed
	s.at = append(s.at, integration)
	s.mu.Unlock()
	x, c, _ := serialsim.SpectrumWith(s.film, int(integration.Milliseconds()), seed, serialsim.Effects{Sample: seed})
	y := make([]float64, len(c))
	for i := range c {
		y[i] = float64(c[i])
	}
	return device.Spectrum{Shift: x, Counts: y, Integration: integration, At: time.Now()}, nil
}

func (s *simSpectrometer) asked() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.at...)
}

// toolBench is the tool pipeline over devicetest fakes and a rig-sim
// spectrometer: the real Interlock and Invoker (catalog.Builtin), the
// analysis tool's handler registered as the agent registers it.
type toolBench struct {
	iv  *envelope.Invoker
	rig Rig
	sp  *simSpectrometer
}

func newToolBench(t *testing.T, an Analyzer, film plant.Film) *toolBench {
	t.Helper()
	env := loadEnvelope(t)
	spec := env.Spec()
	sp := &simSpectrometer{film: film}
	rig := envelope.Rig{Furnace: devicetest.NewFakeFurnace("furnace"), Flows: map[string]device.FlowController{},
		Switches: map[string]device.Switch{}, Inputs: map[string]device.DigitalInput{}, Spectrometer: sp}
	g := devicetest.NewFakeGauge("gauge")
	g.SetReading(0.05*device.Millibar, device.GaugeOK)
	rig.Gauge = g
	for _, gs := range spec.Gases {
		rig.Flows[gs.Gas] = devicetest.NewFakeFlow("mfc-"+gs.Gas, gs.Gas, gs.FullScale)
	}
	for _, s := range spec.Switches {
		rig.Switches[s.Name] = devicetest.NewFakeSwitch(s.Name, s.SafeState)
	}
	for _, in := range spec.Inputs {
		rig.Inputs[in] = devicetest.NewFakeInput(in, in == "door_closed" || in == "exhaust_ok")
	}
	il, err := envelope.NewInterlock(env, rig, allowAll{hilbench.AllowAll{Session: "e2e"}}, nopAuditor{}, envelope.DefaultInterlockOpts())
	if err != nil {
		t.Fatal(err)
	}
	tools, err := catalog.Builtin(simrig.Spec().Lines())
	if err != nil {
		t.Fatal(err)
	}
	iv, err := envelope.NewInvoker(il, tools, envelope.InvokerOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterAnalysis(iv, an); err != nil {
		t.Fatal(err)
	}
	return &toolBench{iv: iv, rig: ToolRig(iv, nil), sp: sp}
}

type nopAuditor struct{}

func (nopAuditor) Record(context.Context, envelope.Entry) error { return nil }
