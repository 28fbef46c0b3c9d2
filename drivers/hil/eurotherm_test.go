package hil

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/regmap"
	"hcp-edge/firmware-sim/plant"
	"hcp-edge/firmware-sim/rig"
)

// euroVariant is a 3216 as a technician may have configured it: dEC.P and
// rmP.U (rig-sim --furnace-decimals, --furnace-ramp-units).
type euroVariant struct {
	dec  int
	ramp plant.EuroRampUnit
}

func (v euroVariant) String() string { return fmt.Sprintf("dec%d-per-%s", v.dec, v.ramp) }

var euroVariants = []euroVariant{
	{0, plant.EuroPerMinute}, {1, plant.EuroPerMinute}, {2, plant.EuroPerMinute},
	{1, plant.EuroPerHour}, {1, plant.EuroPerSecond}, {0, plant.EuroPerHour}, {2, plant.EuroPerSecond},
}

// rampRaw and rampUnit are rmP.U's raw value and the profile unit of SP.RAT.
var (
	rampRaw  = map[plant.EuroRampUnit]int{plant.EuroPerMinute: 0, plant.EuroPerHour: 1, plant.EuroPerSecond: 2}
	rampUnit = map[plant.EuroRampUnit]string{plant.EuroPerMinute: "celsius_per_minute", plant.EuroPerHour: "celsius_per_hour", plant.EuroPerSecond: "celsius_per_second"}
)

// euroProfile is the shipped eurotherm-3200 profile as a lab would write it
// for the variant: its expected dEC.P and rmP.U, and SP.RAT's unit.
func euroProfile(t *testing.T, v euroVariant) *profile.Profile {
	t.Helper()
	s := string(configs.Profiles()["profiles/eurotherm-3200.yaml"])
	for _, r := range [][2]string{
		{"address: 525, equals: 1", fmt.Sprintf("address: 525, equals: %d", v.dec)},
		{"address: 531, equals: 0", fmt.Sprintf("address: 531, equals: %d", rampRaw[v.ramp])},
		{"unit: celsius_per_minute, range: [0, 3000]", "unit: " + rampUnit[v.ramp] + ", range: [0, 3000]"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("the shipped profile no longer has %q", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	p, err := profile.Parse("configs/profiles/eurotherm-3200-"+v.String()+".yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func startEuro(t *testing.T, v euroVariant) *sim {
	t.Helper()
	return startRigOpts(t, rig.Opts{TimeScale: 1, FurnaceModel: plant.FurnaceEurotherm3200, RelayWatchdog: 0,
		Eurotherm: &plant.EurothermConfig{Decimals: v.dec, RampUnits: v.ramp}})
}

// TestEurothermVerifyRefusesAnotherConfiguration: Verify of the shipped
// profile (one decimal, ramp per minute) on each variant finds exactly the
// settings that differ, named as the manual names them; it writes nothing.
func TestEurothermVerifyRefusesAnotherConfiguration(t *testing.T) {
	for _, v := range euroVariants {
		t.Run(v.String(), func(t *testing.T) {
			s := startEuro(t, v)
			p := euroProfile(t, euroVariant{1, plant.EuroPerMinute})
			c, err := regmap.NewController(s.bus(modbus.TransportTCP, 2*time.Second, 0), p, regmap.ControllerOpts{Name: "furnace", Unit: 1})
			if err != nil {
				t.Fatal(err)
			}
			before := len(s.p.Writes(0))
			fs, err := c.Verify(ctxFor(t))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(s.p.Writes(0)); n != before {
				t.Fatalf("Verify wrote %d times", n-before)
			}
			var bad []string
			for _, f := range device.Mismatches(fs) {
				bad = append(bad, f.Setting)
			}
			var want []string
			if v.dec != 1 {
				want = append(want, "decimal point (dEC.P)")
			}
			if v.ramp != plant.EuroPerMinute {
				want = append(want, "ramp units (rmP.U)")
			}
			if strings.Join(bad, ",") != strings.Join(want, ",") {
				t.Fatalf("mismatches %q, want %q (findings %v)", bad, want, fs)
			}
			if err := device.MismatchError(fs); (err != nil) != (len(want) > 0) {
				t.Fatalf("MismatchError %v", err)
			}
		})
	}
}

// TestEurothermVariantsDriven drives each variant through the profile
// written for it: Verify passes, readings match the plant in °C whatever
// the decimals, a 600 °C setpoint reaches the unit as 600 °C (never 6000
// or 60), and a 10 K/min ramp is written in the unit's ramp units.
func TestEurothermVariantsDriven(t *testing.T) {
	for _, v := range euroVariants {
		t.Run(v.String(), func(t *testing.T) {
			s := startEuro(t, v)
			b := s.bus(modbus.TransportTCP, 2*time.Second, 0)
			c, err := regmap.NewController(b, euroProfile(t, v), regmap.ControllerOpts{Name: "furnace", Unit: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxFor(t)
			fs, err := c.Verify(ctx)
			if err != nil || device.MismatchError(fs) != nil {
				t.Fatalf("Verify: %v, %v", fs, err)
			}
			if _, err := c.Init(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.SetSetpoint(ctx, device.Celsius(600)); err != nil {
				t.Fatal(err)
			}
			if err := c.SetRampRate(ctx, device.KelvinPerMinute(10)); err != nil {
				t.Fatal(err)
			}
			e := s.p.Snapshot().Furnace.Eurotherm
			if math.Abs(e.CommsSetpointC-600) > 1e-3 || !e.RemoteSelected || e.Manual {
				t.Fatalf("the unit holds Rm.SP %v °C (remote %t, manual %t), want 600 °C, remote, auto", e.CommsSetpointC, e.RemoteSelected, e.Manual)
			}
			wantRate := map[plant.EuroRampUnit]float64{plant.EuroPerMinute: 10, plant.EuroPerHour: 600, plant.EuroPerSecond: 10.0 / 60}[v.ramp]
			if math.Abs(e.SetpointRate-wantRate) > 1e-4*wantRate {
				t.Fatalf("SP.RAT %v per %s, want %v", e.SetpointRate, v.ramp, wantRate)
			}
			// The 16-bit region the technician's tools read follows dEC.P.
			if v.dec < 2 {
				w, err := b.ReadHoldingRegisters(ctx, 1, 26, 1)
				if err != nil || int(w[0]) != 600*int(math.Pow10(v.dec)) {
					t.Fatalf("16-bit Rm.SP %v, %v; want %d", w, err, 600*int(math.Pow10(v.dec)))
				}
			}
			snap, err := c.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pv := *s.p.Snapshot().Furnace.PVC
			if math.Abs(snap.ProcessValue.Celsius()-pv) > 0.5 || math.Abs(snap.Setpoint.Celsius()-600) > 1e-3 ||
				math.Abs(snap.RampRate.KelvinPerMinute()-10) > 1e-3 {
				t.Fatalf("snapshot PV %v (plant %v), SP %v, ramp %v", snap.ProcessValue, pv, snap.Setpoint, snap.RampRate)
			}
		})
	}
}

// TestADAMVerify: the ADAM-6052's identity (Module Name 1, 0x6052) is read
// and matches the profile; nothing is written.
func TestADAMVerify(t *testing.T) {
	s := startRigOpts(t, rig.Opts{TimeScale: 1, DIOModel: plant.DIOADAM6052})
	p, err := profile.Parse("configs/profiles/adam-6052.yaml", configs.Profiles()["profiles/adam-6052.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	m, err := regmap.NewModule(s.bus(modbus.TransportTCP, 2*time.Second, 0), p, regmap.ModuleOpts{Name: "dio", Unit: 2})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := m.Verify(ctxFor(t))
	if err != nil || len(fs) != 1 || !fs[0].OK || fs[0].Found != "0x6052" {
		t.Fatalf("findings %v, %v", fs, err)
	}
	if n := len(s.p.Writes(0)); n != 0 {
		t.Fatalf("Verify wrote %d times", n)
	}
}

// TestEurothermStartOnAConfiguredUnit: on a 3216 the technician left in
// auto on the comms setpoint, the agent's Init writes no non-volatile
// parameter but OP.HI (the halt), and a second Init writes nothing.
func TestEurothermStartOnAConfiguredUnit(t *testing.T) {
	s := startRigOpts(t, rig.Opts{TimeScale: 1, FurnaceModel: plant.FurnaceEurotherm3200,
		Eurotherm: &plant.EurothermConfig{Decimals: 1, RampUnits: plant.EuroPerMinute, RemoteSP: true}})
	c, err := regmap.NewController(s.bus(modbus.TransportTCP, 2*time.Second, 0), euroProfile(t, euroVariant{1, plant.EuroPerMinute}), regmap.ControllerOpts{Name: "furnace", Unit: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	for i := 0; i < 2; i++ {
		if _, err := c.Init(ctx); err != nil {
			t.Fatal(err)
		}
	}
	nv := s.p.Snapshot().Furnace.Eurotherm.NVWrites
	if len(nv) != 1 || nv["output_high_limit"] != 1 {
		t.Fatalf("two starts wrote non-volatile %v; want output_high_limit 1 (the first halt) and nothing else", nv)
	}
}
