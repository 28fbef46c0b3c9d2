package alicat

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/profile"
)

// corpusEntry is one entry of testdata/corpus.txt.
type corpusEntry struct {
	id, source, kind, gas string
	unit                  byte
	cmd                   string
	replies               [][]byte
	want                  map[string]string
}

func readCorpus(t *testing.T) []corpusEntry {
	t.Helper()
	f, err := os.Open("testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "## ") {
			out = append(out, corpusEntry{id: l[3:], want: map[string]string{}})
			continue
		}
		if len(out) == 0 {
			continue
		}
		e := &out[len(out)-1]
		switch {
		case strings.HasPrefix(l, "source: "):
			e.source = l[8:]
		case strings.HasPrefix(l, "kind: "):
			e.kind = l[6:]
		case strings.HasPrefix(l, "unit: "):
			e.unit = l[6]
		case strings.HasPrefix(l, "gas: "):
			e.gas = l[5:]
		case strings.HasPrefix(l, "> "):
			e.cmd = l[2:]
		case strings.HasPrefix(l, "< "):
			e.replies = append(e.replies, []byte(l[2:]))
		case strings.HasPrefix(l, "= "):
			for _, kv := range strings.Fields(l[2:]) {
				k, v, _ := strings.Cut(kv, "=")
				e.want[k] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func shippedModel(t *testing.T, name string) *Model {
	t.Helper()
	p, err := profile.Parse(name+".yaml", configs.Profiles()["profiles/"+name+".yaml"])
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCorpus parses every entry of testdata/corpus.txt (real replies of MC
// controllers, cited) as the driver does, through the shipped alicat-mc
// profile: a value where the unit gave one,
// a fault of the controller where it reported one, never a frame error.
func TestCorpus(t *testing.T) {
	entries := readCorpus(t)
	if len(entries) < 15 {
		t.Fatalf("%d entries, want at least 15", len(entries))
	}
	kinds := map[string]int{}
	for _, profileName := range []string{"alicat-mc"} {
		m := shippedModel(t, profileName)
		for _, e := range entries {
			t.Run(profileName+"/"+e.id, func(t *testing.T) {
				if e.source == "" || e.kind == "" || len(e.replies) == 0 || len(e.want) == 0 {
					t.Fatalf("incomplete entry: %+v", e)
				}
				kinds[e.kind]++
				switch e.kind {
				case "frame":
					checkFrameEntry(t, m, e)
				case "version":
					fw, err := ParseVersion(e.replies[0], e.unit)
					if e.want["reject"] == "frame" {
						if !errors.Is(err, device.ErrFrame) {
							t.Fatalf("ParseVersion = %+v, %v; want a frame error", fw, err)
						}
						return
					}
					if err != nil || fw.Raw != e.want["firmware"] || strconv.Itoa(fw.Major) != e.want["major"] || strconv.Itoa(fw.Minor) != e.want["minor"] {
						t.Fatalf("ParseVersion = %+v, %v; want %v", fw, err, e.want)
					}
				case "units":
					code, label, err := ParseEngineeringUnit(e.replies[0], e.unit)
					if err != nil || strconv.Itoa(code) != e.want["code"] || label != e.want["label"] {
						t.Fatalf("ParseEngineeringUnit = %d %q %v; want %v", code, label, err, e.want)
					}
					if u, err := UnitFor(profile.RoleFlow, label); err != nil || u != e.want["unit"] {
						t.Fatalf("UnitFor(flow, %q) = %q, %v; want %s", label, u, err, e.want["unit"])
					}
				case "source":
					src, err := ParseSetpointSource(e.replies[0], e.unit)
					if err != nil || src != e.want["source"] {
						t.Fatalf("ParseSetpointSource = %q, %v; want %s", src, err, e.want["source"])
					}
				case "describe":
					checkDescribeEntry(t, e)
				case "model":
					model, err := ParseModel(e.replies, e.unit)
					if err != nil || model != e.want["model"] {
						t.Fatalf("ParseModel = %q, %v; want %s", model, err, e.want["model"])
					}
					fs, ok := ModelFullScale(model)
					if want, _ := strconv.ParseFloat(e.want["full_scale_sccm"], 64); !ok || math.Abs(fs.SCCM()-want) > 1e-6 {
						t.Fatalf("ModelFullScale(%q) = %v, %v; want %g sccm", model, fs, ok, want)
					}
				default:
					t.Fatalf("unknown kind %q", e.kind)
				}
			})
		}
	}
	for _, k := range []string{"frame", "version", "units", "source", "describe", "model"} {
		if kinds[k] == 0 {
			t.Errorf("no %s entry", k)
		}
	}
}

func checkFrameEntry(t *testing.T, m *Model, e corpusEntry) {
	t.Helper()
	fr, err := m.ParseFrame(e.replies[0], e.unit, e.gas)
	if err != nil {
		t.Fatalf("ParseFrame: %v", err)
	}
	units := Units{col: make([]string, len(m.p.Channels))}
	if u := e.want["units"]; u != "" {
		units.col[m.role[profile.RoleFlow]], units.col[m.role[profile.RoleSetpoint]] = u, u
	}
	near := func(name string, got float64) {
		if w, ok := e.want[name]; ok {
			v, _ := strconv.ParseFloat(w, 64)
			if math.Abs(got-v) > 1e-9 {
				t.Errorf("%s = %g, want %g", name, got, v)
			}
		}
	}
	near("pressure", fr.Pressure)
	near("temperature", fr.Temperature)
	near("volumetric_flow", fr.VolFlow)
	near("flow", fr.MassFlow)
	near("setpoint", fr.Setpoint)
	if w, ok := e.want["total"]; ok {
		v, _ := strconv.ParseFloat(w, 64)
		if !fr.HasTotal || fr.Total != v {
			t.Errorf("total = %g (%v), want %g", fr.Total, fr.HasTotal, v)
		}
	} else if fr.HasTotal {
		t.Errorf("a totalizer column where there is none")
	}
	if w, ok := e.want["flags"]; ok && strings.Join(fr.Flags, ",") != w {
		t.Errorf("flags = %v, want %q", fr.Flags, w)
	}
	if e.want["held"] == "true" != fr.Held() {
		t.Errorf("held = %v, want %s", fr.Held(), e.want["held"])
	}
	// Through ReadFlow's checks at a full scale that holds the values.
	err = m.check(fr, units, device.SCCM(500))
	switch e.want["err"] {
	case "none":
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		st := m.status(fr, units)
		f, _ := device.FlowIn(fr.MassFlow, units.of(m, m.role[profile.RoleFlow]))
		if st.Flow != f {
			t.Errorf("flow %v, want %v", st.Flow, f)
		}
	case "sensor":
		if !errors.Is(err, device.ErrSensor) {
			t.Fatalf("check err = %v, want ErrSensor", err)
		}
	default:
		t.Fatalf("entry has no err=")
	}
}

func checkDescribeEntry(t *testing.T, e corpusEntry) {
	t.Helper()
	d, err := ParseDescription(e.replies, e.unit)
	if err != nil {
		t.Fatal(err)
	}
	if strconv.FormatBool(d.Legacy) != e.want["legacy"] {
		t.Errorf("legacy = %v, want %s", d.Legacy, e.want["legacy"])
	}
	var roles, units []string
	for _, c := range d.Columns {
		roles = append(roles, string(c.Role))
		u := c.Unit
		if u == "" {
			u = "-"
		}
		units = append(units, u)
	}
	for k, got := range map[string]string{"columns": strings.Join(roles, ","), "units": strings.Join(units, ","),
		"errors": strings.Join(d.Errors, ","), "statuses": strings.Join(d.Statuses, ",")} {
		if got != e.want[k] {
			t.Errorf("%s = %q, want %q", k, got, e.want[k])
		}
	}
	for _, c := range d.Columns {
		if c.Unit == "" {
			continue
		}
		if _, err := UnitFor(c.Role, c.Unit); err != nil {
			t.Errorf("column %s: %v", c.Name, err)
		}
	}
}

// TestUnitForRefuses: a unit that cannot belong to a column is refused, never
// converted: a volumetric or normal-condition unit on the mass flow (read as
// another quantity), SCFM (not converted), a gauge pressure for an absolute
// one.
func TestUnitForRefuses(t *testing.T) {
	for _, tc := range []struct {
		role  profile.Role
		label string
	}{
		{profile.RoleFlow, "SCFM"}, {profile.RoleFlow, "LPM"}, {profile.RoleFlow, "CCM"},
		{profile.RoleFlow, "NLPM"}, {profile.RoleSetpoint, "PSIA"}, {profile.RoleVolumetricFlow, "SLPM"},
		{profile.RolePressure, "PSIG"}, {profile.RoleTemperature, "`F"},
	} {
		if u, err := UnitFor(tc.role, tc.label); err == nil {
			t.Errorf("UnitFor(%s, %q) = %q, want a refusal", tc.role, tc.label, u)
		}
	}
	for _, tc := range []struct {
		role        profile.Role
		label, want string
	}{
		{profile.RoleFlow, "SCCM", "sccm"}, {profile.RoleSetpoint, "SLPM", "slpm"},
		{profile.RoleVolumetricFlow, "LPM", "lpm"}, {profile.RoleTemperature, "`C", "celsius"},
	} {
		if u, err := UnitFor(tc.role, tc.label); err != nil || u != tc.want {
			t.Errorf("UnitFor(%s, %q) = %q, %v; want %q", tc.role, tc.label, u, err, tc.want)
		}
	}
}

// TestCorpusCount checks the count line at the top of testdata/corpus.txt
// against the entries: an entry whose source begins "constructed" was
// written here from a manual's grammar, one beginning "synthetic fixture"
// is another project's invented reply, every other is verbatim.
func TestCorpusCount(t *testing.T) {
	b, err := os.ReadFile("testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	var verbatim, constructed, synthetic int
	for _, e := range readCorpus(t) {
		switch {
		case strings.HasPrefix(e.source, "constructed"):
			constructed++
		case strings.HasPrefix(e.source, "synthetic fixture"):
			synthetic++
		default:
			verbatim++
		}
	}
	want := fmt.Sprintf("# Count: %d verbatim entries, %d constructed (and %d synthetic fixture of another project).\n", verbatim, constructed, synthetic)
	if !strings.HasPrefix(string(b), want) {
		t.Fatalf("the corpus must open with %q", want)
	}
}
