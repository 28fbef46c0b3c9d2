package tpg_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/tpg"
)

// frame is one corpus entry of testdata/frames.tsv.
type frame struct {
	line                          int
	command, reply, parse, expect string
	source                        string
}

func loadCorpus(t testing.TB) []frame {
	t.Helper()
	f, err := os.Open("testdata/frames.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []frame
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := strings.Split(l, "\t")
		if len(c) != 5 || c[4] == "" {
			t.Fatalf("frames.tsv:%d: want 5 tab-separated columns with a source, got %q", n, l)
		}
		reply, err := strconv.Unquote(c[1])
		if err != nil {
			t.Fatalf("frames.tsv:%d: reply %s: %v", n, c[1], err)
		}
		out = append(out, frame{n, c[0], reply, c[2], c[3], c[4]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func shippedModel(t testing.TB, name string) *tpg.Model {
	t.Helper()
	p, err := profile.Parse(name, configs.Profiles()["profiles/"+name])
	if err != nil {
		t.Fatal(err)
	}
	m, err := tpg.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var meaningStatus = map[string]device.GaugeStatus{
	"ok": device.GaugeOK, "underrange": device.GaugeUnderrange, "overrange": device.GaugeOverrange,
	"sensor_error": device.GaugeSensorError, "sensor_off": device.GaugeSensorOff,
	"no_sensor": device.GaugeNoSensor, "identification_error": device.GaugeSensorError,
}

// checkGauge checks one gauge's reading against "<meaning>:<value>" (the
// value in mbar, the unit code '0').
func checkGauge(t *testing.T, r device.PressureReading, err error, want string) {
	t.Helper()
	meaning, value, _ := strings.Cut(want, ":")
	v, perr := strconv.ParseFloat(value, 64)
	st, ok := meaningStatus[meaning]
	if perr != nil || !ok {
		t.Fatalf("bad expectation %q", want)
	}
	fault := st > device.GaugeOverrange
	if errors.Is(err, device.ErrFrame) || (err != nil) != fault || (fault && !errors.Is(err, device.ErrSensor)) {
		t.Fatalf("error %v, want a fault: %v", err, fault)
	}
	if r.Status != st || !near(r.Pressure.Millibar(), v) {
		t.Fatalf("reading %v %v, want %v %g mbar", r.Status, r.Pressure, st, v)
	}
}

// TestCorpus parses every real (and manual-constructed) reply of the
// corpus: a value where the unit gave one, a typed fault where it reported
// one, never a frame error on a frame a unit sends.
func TestCorpus(t *testing.T) {
	frames := loadCorpus(t)
	if len(frames) < 12 {
		t.Fatalf("corpus has %d entries", len(frames))
	}
	m := shippedModel(t, "pfeiffer-tpg-262.yaml")
	for _, f := range frames {
		t.Run(strconv.Itoa(f.line)+"/"+f.command, func(t *testing.T) {
			data := []byte(f.reply)
			switch f.parse {
			case "pressure":
				r, err := m.ParsePressure(data, '0')
				checkGauge(t, r, err, f.expect)
			case "pressures":
				rs, errs, err := m.ParsePressures(data, '0')
				want := strings.Split(f.expect, ";")
				if err != nil || len(rs) != len(want) {
					t.Fatalf("%q: %v, %d readings", f.reply, err, len(rs))
				}
				for i := range want {
					checkGauge(t, rs[i], errs[i], want[i])
				}
			case "ident":
				ids, err := tpg.ParseIdent(data)
				if err != nil || strings.Join(ids, ",") != f.expect {
					t.Fatalf("%q: %v, %v", f.reply, ids, err)
				}
			case "unit":
				u, err := m.ParseUnit(data)
				if f.expect == "mismatch" {
					if !errors.Is(err, device.ErrMismatch) {
						t.Fatalf("%q: %v, want a mismatch", f.reply, err)
					}
					return
				}
				if err != nil || m.UnitName(u) != f.expect {
					t.Fatalf("%q: %c (%s), %v", f.reply, u, m.UnitName(u), err)
				}
			case "errword":
				w, err := tpg.ParseErrorWord(data)
				if err != nil || string(w) != f.expect {
					t.Fatalf("%q: %v, %v", f.reply, w, err)
				}
			case "control":
				want := map[string]string{"ack": "\x06\r\n", "nak": "\x15\r\n"}[f.expect]
				if f.reply != want {
					t.Fatalf("%q is not %s CR LF", f.reply, f.expect)
				}
			default:
				t.Fatalf("unknown parse %q", f.parse)
			}
		})
	}
}

// TestCorpusThroughTheDriver serves every pressure reply of the corpus to
// the driver over a pty: ReadPressure returns the value or the typed
// fault, never a frame error (the PKR's range check makes the negative
// linear-gauge value a fault, not a frame error).
func TestCorpusThroughTheDriver(t *testing.T) {
	for _, f := range loadCorpus(t) {
		if f.parse != "pressure" {
			continue
		}
		gauge, g, _ := setup(t)
		g.set(func(g *fakeGauge) { g.pr = f.reply })
		_, err := gauge.ReadPressure(t.Context())
		if errors.Is(err, device.ErrFrame) || errors.Is(err, device.ErrRejected) || errors.Is(err, device.ErrTimeout) {
			t.Errorf("frames.tsv:%d %q: %v", f.line, f.reply, err)
		}
	}
}

// TestCorpusCount checks the count line at the top of testdata/frames.tsv
// against its entries: a source beginning "constructed" was written here
// from the manual's grammar, one beginning "sibling" is verbatim from a unit
// of the same protocol that is not a TPG 261/262, every other is verbatim
// from a TPG 26x source.
func TestCorpusCount(t *testing.T) {
	b, err := os.ReadFile("testdata/frames.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var verbatim, sibling, constructed int
	for _, f := range loadCorpus(t) {
		switch {
		case strings.HasPrefix(f.source, "constructed"):
			constructed++
		case strings.HasPrefix(f.source, "sibling"):
			sibling++
		default:
			verbatim++
		}
	}
	want := fmt.Sprintf("# Count: %d verbatim entries (TPG 261/262 sources), %d verbatim from sibling units, %d constructed.\n", verbatim, sibling, constructed)
	if !strings.HasPrefix(string(b), want) {
		t.Fatalf("frames.tsv must open with %q", want)
	}
}
