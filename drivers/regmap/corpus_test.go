package regmap_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"hcp-edge/drivers/modbus"
	"hcp-edge/drivers/modbus/modbustest"
	"hcp-edge/drivers/regmap/regmaptest"
)

// corpusEntry is one register value of testdata/eurotherm3200.yaml.
type corpusEntry struct {
	Name            string   `yaml:"name"`
	Param           int      `yaml:"param"`
	Region          string   `yaml:"region"`
	Decimals        int      `yaml:"decimals"`
	Address         int      `yaml:"address"`
	Words           []uint16 `yaml:"words"`
	Value           float64  `yaml:"value"`
	Means           string   `yaml:"means"`
	Unrepresentable bool     `yaml:"unrepresentable"`
	Kind            string   `yaml:"kind"`
	Source          string   `yaml:"source"`
	Modicon         int      `yaml:"modicon"`
	Wire            int      `yaml:"wire"`
}

func loadCorpus(t *testing.T) (euro, adam []corpusEntry) {
	t.Helper()
	b, err := os.ReadFile("testdata/eurotherm3200.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Eurotherm []corpusEntry `yaml:"eurotherm"`
		ADAM      []corpusEntry `yaml:"adam"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range append(doc.Eurotherm, doc.ADAM...) {
		if e.Source == "" || (e.Kind != "documented" && e.Kind != "constructed") {
			t.Errorf("%s: every entry cites its source and says whether it is documented or constructed", e.Name)
		}
	}
	return doc.Eurotherm, doc.ADAM
}

// TestCorpusEurotherm3200 decodes every register value of the corpus as
// the encoding it documents, and checks the shipped profile reads the
// analogue parameters where the corpus puts them: in the float region, at
// 0x8000 + 2 × address, whatever the display's decimals.
func TestCorpusEurotherm3200(t *testing.T) {
	euro, _ := loadCorpus(t)
	if len(euro) < 15 {
		t.Fatalf("%d Eurotherm entries, want ≥ 15", len(euro))
	}
	p, err := regmaptest.Profile("eurotherm-3200")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range euro {
		t.Run(e.Name, func(t *testing.T) {
			switch e.Region {
			case "int16":
				spec := modbus.RegisterSpec{Table: modbus.Holding, Address: uint16(e.Param), Type: modbus.Int16, Scale: math.Pow10(-e.Decimals)}
				if e.Unrepresentable {
					if w, err := spec.Encode(e.Value); err == nil {
						t.Fatalf("%v at %d decimals encodes as %04x: a value the 16-bit region cannot carry must be refused", e.Value, e.Decimals, w)
					}
					return
				}
				v, err := spec.Decode(e.Words)
				if err != nil || math.Abs(v-e.Value) > 1e-9 {
					t.Fatalf("%04x at %d decimals = %v, %v; want %v", e.Words, e.Decimals, v, err, e.Value)
				}
				w, err := spec.Encode(e.Value)
				if err != nil || w[0] != e.Words[0] {
					t.Fatalf("%v encodes as %04x, %v; want %04x", e.Value, w, err, e.Words)
				}
			case "float":
				if e.Address != 0x8000+2*e.Param {
					t.Fatalf("address %#x, want 0x8000 + 2 × %d", e.Address, e.Param)
				}
				spec := modbus.RegisterSpec{Table: modbus.Holding, Address: uint16(e.Address), Type: modbus.Float32, Scale: 1}
				v, err := spec.Decode(e.Words)
				if err != nil || math.Abs(v-e.Value) > 1e-4 {
					t.Fatalf("%04x = %v, %v; want %v", e.Words, v, err, e.Value)
				}
				// The shipped profile reads the parameter there, as a float.
				for _, ch := range p.Channels {
					if ch.Address != nil && *ch.Address == e.Param {
						t.Fatalf("profile channel %s reads parameter %d in the 16-bit region", ch.Name, e.Param)
					}
					if ch.Address != nil && *ch.Address == e.Address && ch.Type != "float32" {
						t.Fatalf("profile channel %s at %#x is %s, not float32", ch.Name, e.Address, ch.Type)
					}
				}
			case "enum":
				if len(e.Words) != 1 || float64(e.Words[0]) != e.Value {
					t.Fatalf("words %v, value %v", e.Words, e.Value)
				}
				for _, x := range p.Expect {
					if *x.Address == e.Param && !strings.Contains(x.Describe(int64(e.Words[0])), e.Means) {
						t.Fatalf("the profile names %d at %d %q, the corpus %q", e.Words[0], e.Param, x.Describe(int64(e.Words[0])), e.Means)
					}
				}
			default:
				t.Fatalf("region %q", e.Region)
			}
		})
	}
}

// TestCorpusADAM checks the ADAM-6000 family's Modicon numbering against
// the wire addresses (0x: modicon − 1; 4x: modicon − 40001) and the
// shipped adam-6052 profile's outputs.
func TestCorpusADAM(t *testing.T) {
	_, adam := loadCorpus(t)
	p, err := regmaptest.Profile("adam-6052")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range adam {
		want := e.Modicon - 1
		if e.Modicon >= 40001 {
			want = e.Modicon - 40001
		}
		if e.Wire != want {
			t.Errorf("%s: wire %d, want %d", e.Name, e.Wire, want)
		}
		if e.Modicon == 17 {
			ch, ok := p.Channel("do0")
			if !ok || *ch.Address != e.Wire || ch.Table != "coil" {
				t.Errorf("%s: profile do0 is %+v", e.Name, ch)
			}
		}
	}
}

// TestCorpusThroughTheProfile reads a 3216 whose float region holds the
// corpus' words through the shipped profile: 800 °C reads 800 °C (not 80,
// not 8000), and a 600 °C setpoint is written as the float 600.0.
func TestCorpusThroughTheProfile(t *testing.T) {
	hold := make([]uint16, 0x8050)
	set := func(addr int, w ...uint16) { copy(hold[addr:], w) }
	set(0x8002, 0x4448, 0) // PV 800.0
	set(0x8004, 0x4416, 0) // TG.SP 600.0
	set(0x8008, 0x4236, 0) // WRK.OP 45.5
	set(0x800A, 0x4448, 0) // WKG.SP 800.0
	set(0x801A, 0x44A2, 0x8000)
	set(0x8034, 0x4416, 0) // Rm.SP 600.0
	set(0x803C, 0x42C8, 0) // OP.HI 100.0
	set(0x8046, 0x4120, 0) // SP.RAT 10.0
	srv, c := eurothermInMemory(t, hold)
	s, err := c.Snapshot(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.ProcessValue.Celsius(), 800) || !near(s.Setpoint.Celsius(), 600) || !near(float64(s.OutputPower), 45.5) ||
		!near(s.RampRate.KelvinPerMinute(), 10) || !s.HeaterEnabled {
		t.Fatalf("snapshot %+v", s.FurnaceStatus)
	}
	if err := c.SetSetpoint(ctxT(t), s.Setpoint); err != nil {
		t.Fatal(err)
	}
	var got []uint16
	srv.Do(func(u map[byte]*modbustest.Unit) { got = append(got, u[1].Holding[0x8034:0x8036]...) })
	if got[0] != 0x4416 || got[1] != 0 {
		t.Fatalf("600 °C written as %04x, want the float 600.0 (4416 0000)", got)
	}
}

// TestCorpusCount checks the count line at the top of
// testdata/eurotherm3200.yaml against its entries (verbatim: kind
// documented).
func TestCorpusCount(t *testing.T) {
	b, err := os.ReadFile("testdata/eurotherm3200.yaml")
	if err != nil {
		t.Fatal(err)
	}
	euro, adam := loadCorpus(t)
	count := func(es []corpusEntry, kind string) (n int) {
		for _, e := range es {
			if e.Kind == kind {
				n++
			}
		}
		return n
	}
	want := fmt.Sprintf("# Count: %d verbatim Eurotherm entries, %d verbatim ADAM entries, %d constructed (verbatim = kind: documented).\n",
		count(euro, "documented"), count(adam, "documented"), count(euro, "constructed")+count(adam, "constructed"))
	if !strings.HasPrefix(string(b), want) {
		t.Fatalf("eurotherm3200.yaml must open with %q", want)
	}
}
