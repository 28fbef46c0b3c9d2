package hil

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/tpg"
	"hcp-edge/firmware-sim/rig"
	"hcp-edge/firmware-sim/serialsim"
)

// gaugeOn starts a rig whose gauge controller is variant v and opens the
// gauge on it through the shipped profile name, reading channel ch.
func gaugeOn(t *testing.T, v serialsim.GaugeVariant, prof, ch string) (*sim, *tpg.Gauge) {
	t.Helper()
	s := startRigOpts(t, rig.Opts{TimeScale: 300, StartSerial: rig.SerialInstrumentsWith(serialsim.Opts{Gauge: v})})
	p, err := profile.Parse(prof+".yaml", configs.Profiles()["profiles/"+prof+".yaml"])
	if err != nil {
		t.Fatal(err)
	}
	o := tpg.DefaultOpts()
	o.Profile, o.Channel = p, ch
	g, err := tpg.Open(filepath.Join(s.r.Dir(), "gauge"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return s, g
}

// TestTPGVariants: the driver against each emulated controller through
// its shipped profile: Verify finds nothing amiss, every gauge reads the
// chamber (at atmosphere: overrange with the PKR's limit, a reading), and
// nothing is written to the controller.
func TestTPGVariants(t *testing.T) {
	for _, tc := range []struct {
		name    string
		variant serialsim.GaugeVariant
		profile string
		gauges  int
	}{
		{"tpg261", serialsim.GaugeVariant{Model: serialsim.TPG261}, "pfeiffer-tpg-261", 1},
		{"tpg262", serialsim.GaugeVariant{Model: serialsim.TPG262}, "pfeiffer-tpg-262", 2},
		{"sim profile on a tpg261", serialsim.GaugeVariant{}, "hcp-sim-gauge", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, g := gaugeOn(t, tc.variant, tc.profile, "")
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			fs, err := g.Verify(ctx)
			if err != nil || device.MismatchError(fs) != nil {
				t.Fatalf("findings %v, %v", fs, err)
			}
			r, err := g.ReadPressure(ctx)
			if err != nil || (r.Status != device.GaugeOK && r.Status != device.GaugeOverrange) {
				t.Fatalf("reading %+v, %v", r, err)
			}
			chamber := s.p.ChamberPressure()
			if r.Status == device.GaugeOK && (r.Pressure.Pascal() < chamber*0.9 || r.Pressure.Pascal() > chamber*1.1) {
				t.Fatalf("reading %v, chamber %g Pa", r.Pressure, chamber)
			}
			rows := g.ReadChannels(ctx)
			if len(rows) != tc.gauges {
				t.Fatalf("channels %+v", rows)
			}
			for _, row := range rows {
				if row.Error != "" || !strings.Contains(row.Raw, ",+") {
					t.Errorf("channel %+v", row)
				}
			}
			for _, w := range s.p.Writes(0) {
				if w.Device == "gauge" {
					t.Errorf("the driver wrote to the gauge controller: %+v", w)
				}
			}
		})
	}
}

// TestTPGProfileAgainstTheWrongModel: a TPG 262 profile on a TPG 261 finds
// no gauge on connector 2 (TID "PKR,noSEn"): a mismatch naming gauge2.
func TestTPGProfileAgainstTheWrongModel(t *testing.T) {
	_, g := gaugeOn(t, serialsim.GaugeVariant{Model: serialsim.TPG261}, "pfeiffer-tpg-262", "gauge1")
	fs, err := g.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bad := device.Mismatches(fs)
	if len(bad) != 1 || bad[0].Setting != "gauge2 gauge type (TID)" || bad[0].Found != "noSEn" {
		t.Fatalf("findings %v", fs)
	}
}

// TestTPGContinuousOutputRefused: a controller left in continuous output
// mode (COM, every 1 s) is a mismatch naming the setting; Verify sends it
// nothing.
func TestTPGContinuousOutputRefused(t *testing.T) {
	s, g := gaugeOn(t, serialsim.GaugeVariant{Continuous: true, ContinuousMode: 1}, "pfeiffer-tpg-261", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fs, err := g.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bad := device.Mismatches(fs)
	if len(bad) != 1 || bad[0].Setting != tpg.SettingContinuous {
		t.Fatalf("findings %v", fs)
	}
	if !strings.Contains(device.MismatchError(fs).Error(), "continuous output (COM)") {
		t.Fatalf("refusal %v", device.MismatchError(fs))
	}
	if w := s.p.Writes(0); len(w) != 0 {
		t.Fatalf("writes %+v", w)
	}
}
