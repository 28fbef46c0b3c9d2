package hil

import (
	"math"
	"testing"
	"time"

	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
)

// recipe is a growth: temperature, H2S flow and growth time (sim time).
type recipe struct {
	name  string
	tempC float64
	h2s   float64
	grow  time.Duration
}

// grow runs rc on a fresh rig, driving it through the drivers (furnace over
// TCP, valves over TCP, H2S through its MFC) and advancing the physics with
// plant.Step for speed, then acquires a spectrum through the Raman driver.
func grow(t *testing.T, rc recipe) (device.Spectrum, float64) {
	s := startRig(t, 1) // the background clock barely moves; Step drives time
	ctx := ctxFor(t)
	bus := s.bus(modbus.TransportTCP, time.Second, 1)
	f := s.furnace(bus)
	m := s.dio(bus)
	h2s := s.mfc(gases[2], time.Second)
	sp := s.raman(2 * time.Second)

	s.energise(ctx)
	for _, name := range []string{"scrubber", "pump", "gate_valve", "h2s_valve"} {
		if err := s.sw(m, name).Set(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.ConfigureWatchdog(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.SetSetpoint(ctx, device.Celsius(rc.tempC)); err != nil {
		t.Fatal(err)
	}
	if err := f.SetHeater(ctx, true); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		st, err := f.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(st.ProcessValue.Celsius()-rc.tempC) < 3 {
			break
		}
		if i > 400 {
			t.Fatalf("furnace never reached %.0f °C: %+v", rc.tempC, st)
		}
		s.p.Step(30 * time.Second)
	}
	if s.p.Layers() != 0 {
		t.Fatalf("layers grew without H2S: %v", s.p.Layers())
	}
	if err := h2s.SetFlow(ctx, device.SCCM(rc.h2s)); err != nil {
		t.Fatal(err)
	}
	for d := time.Duration(0); d < rc.grow; d += 10 * time.Second {
		s.p.Step(10 * time.Second)
	}
	if err := h2s.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	s.p.Step(time.Minute)
	layers := s.p.Layers()

	id, err := sp.Identify(ctx)
	if err != nil || id != "HCP-SIM,RAMAN-532,SN0001,1.0" {
		t.Fatalf("identify %q, %v", id, err)
	}
	mk := s.mark()
	spec, err := sp.Acquire(ctx, 500*time.Millisecond)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	s.expectWrites(mk, []w{{"raman", "serial", "acquire", 500, true}})
	return spec, layers
}

// peak returns the centroid of the highest peak of sp within [lo, hi] cm⁻¹,
// over the points within 3 cm⁻¹ of the maximum and above half of it.
func peak(sp device.Spectrum, lo, hi float64) float64 {
	best := -1
	for i, x := range sp.Shift {
		if x >= lo && x <= hi && (best < 0 || sp.Counts[i] > sp.Counts[best]) {
			best = i
		}
	}
	if best < 0 {
		return math.NaN()
	}
	// Local baseline: the minimum within the window.
	base := math.Inf(1)
	for i, x := range sp.Shift {
		if x >= lo && x <= hi {
			base = math.Min(base, sp.Counts[i])
		}
	}
	half := base + (sp.Counts[best]-base)/2
	var sw, sx float64
	for i, x := range sp.Shift {
		if math.Abs(x-sp.Shift[best]) <= 3 && sp.Counts[i] >= half {
			sw += sp.Counts[i] - base
			sx += (sp.Counts[i] - base) * x
		}
	}
	return sx / sw
}

// TestRaman grows MoS2 with a monolayer recipe and a hotter one and checks
// the spectra the driver acquires: 801 points over 150–550 cm⁻¹, the silicon
// peak, and the E2g/A1g distance of the layer count.
func TestRaman(t *testing.T) {
	recipes := []recipe{
		{"monolayer", 725, 5, 8 * time.Minute},
		{"hotter", 850, 5, 8 * time.Minute},
	}
	dist := map[string]float64{}
	for _, rc := range recipes {
		t.Run(rc.name, func(t *testing.T) {
			spec, layers := grow(t, rc)
			if len(spec.Shift) != 801 || len(spec.Counts) != 801 {
				t.Fatalf("%d points, want 801", len(spec.Shift))
			}
			if spec.Shift[0] != 150 || spec.Shift[800] != 550 || spec.Integration != 500*time.Millisecond {
				t.Fatalf("window %.1f..%.1f, integration %v", spec.Shift[0], spec.Shift[800], spec.Integration)
			}
			si := peak(spec, 510, 530)
			e2g := peak(spec, 370, 394)
			a1g := peak(spec, 398, 420)
			d := a1g - e2g
			dist[rc.name] = d
			t.Logf("%s: %.2f layers (simulator), Si %.1f, E2g %.1f, A1g %.1f, distance %.2f cm⁻¹", rc.name, layers, si, e2g, a1g, d)
			if math.Abs(si-520.7) > 1.5 {
				t.Errorf("silicon peak at %.1f cm⁻¹, want 520.7", si)
			}
			if math.Abs(e2g-385) > 5 || math.Abs(a1g-405) > 5 {
				t.Errorf("MoS2 peaks at %.1f and %.1f cm⁻¹, want ≈ 385 and 405", e2g, a1g)
			}
			if rc.name == "monolayer" && (d < 17.8 || d > 19.6) {
				t.Errorf("monolayer recipe: distance %.2f cm⁻¹, want 18–19 (%.2f layers)", d, layers)
			}
		})
	}
	if mono, hot := dist["monolayer"], dist["hotter"]; mono != 0 && hot != 0 && hot < mono+1.5 {
		t.Errorf("hotter recipe distance %.2f not clearly above the monolayer's %.2f", hot, mono)
	}
}
