package alicat_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/alicat"
	"hcp-edge/drivers/profile"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/serialsim"
)

// mcProfile is the shipped profile of the real MC series.
var mcProfile = func() *profile.Profile {
	p, err := profile.Parse("alicat-mc.yaml", configs.Profiles()["profiles/alicat-mc.yaml"])
	if err != nil {
		panic(err)
	}
	return p
}()

// hilMFC serves the Ar controller of a running plant in variant v on a pty
// (firmware-sim/serialsim, written from the manual and the corpus, not from
// this driver) and opens the driver on it with prof.
func hilMFC(t *testing.T, v serialsim.MFCVariant, prof *profile.Profile, edit ...func(*alicat.Opts)) (*alicat.MFC, *serialsim.MFC, *plant.Plant) {
	t.Helper()
	if testing.Short() {
		t.Skip("HIL: a plant and a pty")
	}
	p, err := plant.New(plant.DefaultOpts())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sim, err := serialsim.NewMFC(ctx, p, serialsim.MFCOpts{Link: filepath.Join(t.TempDir(), "mfc-ar"), Gas: "ar", Seed: 1, Variant: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	o := alicat.DefaultOpts()
	o.Profile, o.Name, o.UnitID, o.Gas, o.FullScale = prof, "mfc-ar", 'A', "Ar", device.SCCM(500)
	for _, e := range edit {
		e(&o)
	}
	m, err := alicat.Open(sim.Link(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, sim, p
}

// settle sets f and polls until the flow reads f within 2 %.
func settle(t *testing.T, m *alicat.MFC, f device.Flow) device.FlowStatus {
	t.Helper()
	ctx := context.Background()
	if err := m.SetFlow(ctx, f); err != nil {
		t.Fatalf("SetFlow(%v): %v", f, err)
	}
	var st device.FlowStatus
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		if st, err = m.ReadFlow(ctx); err != nil {
			t.Fatalf("ReadFlow: %v", err)
		}
		if math.Abs(st.Flow.SCCM()-f.SCCM()) <= 0.02*f.SCCM() {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("flow %v, want %v (setpoint read %v)", st.Flow, f, st.Setpoint)
	return st
}

// TestHILVariants: the driver, verified first as the agent does at start,
// drives and reads every variant right, in both shipped profiles.
func TestHILVariants(t *testing.T) {
	for _, prof := range []*profile.Profile{mcProfile, simProfile} {
		for _, v := range []serialsim.MFCVariant{serialsim.MFCDefault, serialsim.MFCPadded, serialsim.MFCPre6v, serialsim.MFCTotalizer, serialsim.MFCSLPM} {
			t.Run(prof.ID+"/"+string(v), func(t *testing.T) {
				m, _, _ := hilMFC(t, v, prof)
				fs, err := m.Verify(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					t.Log(f)
				}
				if err := device.MismatchError(fs); err != nil {
					t.Fatalf("Verify: %v", err)
				}
				st := settle(t, m, device.SCCM(120))
				if math.Abs(st.Setpoint.SCCM()-120) > 1e-6 {
					t.Fatalf("setpoint %v", st.Setpoint)
				}
				settle(t, m, device.SCCM(0))
				if err := m.Halt(context.Background()); err != nil {
					t.Fatalf("Halt: %v", err)
				}
			})
		}
	}
}

// TestHILSLPM: a controller reporting SLPM is read as SLPM once verified (a
// real 120 sccm, not 0.12); before Verify the profile's sccm would make the
// setpoint 1000 times too large, which the controller refuses.
func TestHILSLPM(t *testing.T) {
	m, _, p := hilMFC(t, serialsim.MFCSLPM, mcProfile)
	ctx := context.Background()
	if err := m.SetFlow(ctx, device.SCCM(120)); !errors.Is(err, device.ErrRejected) {
		t.Fatalf("unverified SetFlow(120 sccm) = %v: sent as 120 SLPM, the controller must refuse it", err)
	}
	if _, err := m.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	if u := m.Units().Of(m.Model(), "mass_flow"); u != "slpm" {
		t.Fatalf("mass flow unit %q, want slpm", u)
	}
	st := settle(t, m, device.SCCM(120))
	if got, _ := p.MFC("ar"); math.Abs(got.SetpointSCCM-120) > 1e-6 || math.Abs(st.Flow.SCCM()-120) > 3 {
		t.Fatalf("plant setpoint %g sccm, read flow %v", got.SetpointSCCM, st.Flow)
	}
}

// TestHILVerifyRefuses: an analog setpoint source, saved setpoints and a
// configured full scale above the model's are mismatches naming the
// setting, and Verify changed nothing on the unit.
func TestHILVerifyRefuses(t *testing.T) {
	tests := []struct {
		v       serialsim.MFCVariant
		setting string
	}{
		{serialsim.MFCAnalogSetpoint, "setpoint source"},
		{serialsim.MFCSavedSetpoint, "setpoint saving"},
		{serialsim.MFCPadded, "full scale"}, // configured 1000 sccm on an MC-500SCCM-D
	}
	for _, tc := range tests {
		t.Run(string(tc.v), func(t *testing.T) {
			m, _, p := hilMFC(t, tc.v, mcProfile, func(o *alicat.Opts) {
				if tc.setting == "full scale" {
					o.FullScale = device.SCCM(1000)
				}
			})
			seq, _ := p.WriteLogStats()
			fs, err := m.Verify(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			err = device.MismatchError(fs)
			t.Log(err)
			if !errors.Is(err, device.ErrMismatch) || !strings.Contains(err.Error(), "mfc-ar: "+tc.setting) {
				t.Fatalf("Verify: %v, want a mismatch naming %q", err, tc.setting)
			}
			if w := p.Writes(seq); len(w) != 0 {
				t.Fatalf("Verify wrote %+v", w)
			}
		})
	}
}

// TestHILAnalogSourceIgnoresSetpoints: on an analog source the controller
// ignores S; the driver's readback says so instead of believing the flow set.
func TestHILAnalogSourceIgnoresSetpoints(t *testing.T) {
	m, _, _ := hilMFC(t, serialsim.MFCAnalogSetpoint, mcProfile)
	if err := m.SetFlow(context.Background(), device.SCCM(100)); !errors.Is(err, device.ErrReadback) {
		t.Fatalf("SetFlow = %v, want ErrReadback", err)
	}
}

// TestHILSavedSetpointWrites counts the non-volatile writes a saved-mode
// controller makes: one per setpoint (a MoS2 run's dozens of setpoints per
// gas, every run), none in unsaved mode — why Verify refuses saved mode.
func TestHILSavedSetpointWrites(t *testing.T) {
	for _, tc := range []struct {
		v    serialsim.MFCVariant
		want int64
	}{{serialsim.MFCSavedSetpoint, 6}, {serialsim.MFCPadded, 0}} {
		t.Run(string(tc.v), func(t *testing.T) {
			m, sim, _ := hilMFC(t, tc.v, mcProfile)
			ctx := context.Background()
			for _, f := range []float64{50, 100, 0, 200, 20, 0} {
				if err := m.SetFlow(ctx, device.SCCM(f)); err != nil {
					t.Fatal(err)
				}
			}
			if got := sim.NVMWrites(); got != tc.want {
				t.Fatalf("%d non-volatile writes for 6 setpoints, want %d", got, tc.want)
			}
		})
	}
}
