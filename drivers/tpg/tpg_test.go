package tpg_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/serialline/serialtest"
	"hcp-edge/drivers/tpg"
)

// simProfile is the simulator's shipped profile (configs/profiles/hcp-sim-gauge.yaml),
// which these fakes follow.
var simProfile = func() *profile.Profile {
	p, err := profile.Parse("hcp-sim-gauge.yaml", configs.Profiles()["profiles/hcp-sim-gauge.yaml"])
	if err != nil {
		panic(err)
	}
	return p
}()

func opts() tpg.Opts {
	o := tpg.DefaultOpts()
	o.Profile = simProfile
	return o
}

func model(t testing.TB) *tpg.Model {
	m, err := tpg.NewModel(simProfile)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const (
	ackLine = "\x06\r\n"
	nakLine = "\x15\r\n"
)

// split separates an ENQ (a single byte) from CR-terminated mnemonics.
func split(data []byte, atEOF bool) (int, []byte, error) {
	if len(data) > 0 && data[0] == 0x05 {
		return 1, data[:1], nil
	}
	if i := bytes.IndexByte(data, '\r'); i >= 0 {
		return i + 1, data[:i], nil
	}
	return 0, nil, nil
}

// fakeGauge follows the manual (BG 5195 BEN section 5): pending data per
// accepted command, the error word to ENQ when none is pending, TID with a
// field per connector.
type fakeGauge struct {
	mu       sync.Mutex
	unit     int
	pr       string // PR1 data in mbar-free form: status and value in the current unit
	pending  string
	havePend bool
	override func(req string) (string, bool)
	got      []string
}

func (g *fakeGauge) handle(req []byte) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := string(req)
	g.got = append(g.got, r)
	if g.override != nil {
		if reply, ok := g.override(r); ok {
			return []byte(reply)
		}
	}
	if r == "\x05" {
		if !g.havePend {
			return []byte("0000\r\n")
		}
		g.havePend = false
		return []byte(g.pending + "\r\n")
	}
	set := func(d string) []byte { g.pending, g.havePend = d, true; return []byte(ackLine) }
	switch {
	case r == "PR1":
		return set(g.pr)
	case r == "UNI":
		return set(strconv.Itoa(g.unit))
	case strings.HasPrefix(r, "UNI,") && len(r) == 5 && r[4] >= '0' && r[4] <= '2':
		g.unit = int(r[4] - '0')
		return set(r[4:])
	case r == "TID":
		return set("PKR,noSEn")
	case r == "ERR":
		return set("0000")
	}
	g.havePend = false
	return []byte(nakLine)
}

func (g *fakeGauge) set(fn func(g *fakeGauge)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(g)
}

func (g *fakeGauge) requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.got...)
}

func setup(t *testing.T) (*tpg.Gauge, *fakeGauge, *serialtest.Peer) {
	t.Helper()
	g := &fakeGauge{pr: "0,+8.3400E-03"}
	p := serialtest.NewPeer(t)
	p.Serve(split, g.handle)
	o := opts()
	// The shipped exchange timeout (500 ms): a shorter one measured the machine's
	// load, not the protocol (TestReadPressureConvertsUnit timed out under load).
	gauge, err := tpg.Open(p.Path(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gauge.Close() })
	return gauge, g, p
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestReadPressureReadsUnit: the driver reads the unit (UNI, no
// parameter) and converts from it; it never sets it (the old driver sent
// UNI,2, switching a real controller's display to pascal).
func TestReadPressureReadsUnit(t *testing.T) {
	gauge, g, _ := setup(t)
	g.set(func(g *fakeGauge) { g.unit = 2; g.pr = "0,+1.2340E+02" })
	r, err := gauge.ReadPressure(context.Background())
	if err != nil || r.Status != device.GaugeOK || !near(r.Pressure.Pascal(), 123.4) || r.At.IsZero() {
		t.Fatalf("reading %+v, %v", r, err)
	}
	if _, err := gauge.ReadPressure(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "UNI \x05 PR1 \x05 PR1 \x05"
	if got := strings.Join(g.requests(), " "); got != want {
		t.Fatalf("requests %q, want %q", got, want)
	}
	if gauge.String() != "gauge" || gauge.Halt(context.Background()) != nil {
		t.Fatal("name or halt")
	}
}

func TestReadPressureConvertsUnit(t *testing.T) {
	tests := []struct {
		name string
		unit int
		want float64 // Pa for 1.0000E+00
	}{
		{"mbar", 0, 100},
		{"Torr", 1, 101325.0 / 760},
		{"Pa", 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gauge, g, _ := setup(t)
			g.set(func(g *fakeGauge) { g.unit = tc.unit; g.pr = "0,+1.0000E+00" })
			r, err := gauge.ReadPressure(context.Background())
			if err != nil || !near(r.Pressure.Pascal(), tc.want) {
				t.Fatalf("reading %+v, %v", r, err)
			}
			if g.requests()[0] != "UNI" {
				t.Fatalf("requests %q", g.requests())
			}
		})
	}
}

func TestStatuses(t *testing.T) {
	tests := []struct {
		data   string
		status device.GaugeStatus
		err    error
	}{
		{"0,+8.3400E-03", device.GaugeOK, nil},
		{"1,+5.0000E-09", device.GaugeUnderrange, nil},
		{"2,+1.0000E+03", device.GaugeOverrange, nil},
		{"3,+0.0000E+00", device.GaugeSensorError, device.ErrSensor},
		{"4,+0.0000E+00", device.GaugeSensorOff, device.ErrSensor},
		{"5,2.0000E-2", device.GaugeNoSensor, device.ErrSensor},
		{"6,+0.0000E+00", device.GaugeSensorError, device.ErrSensor},
	}
	for _, tc := range tests {
		t.Run(tc.status.String()+"/"+tc.data[:1], func(t *testing.T) {
			gauge, g, _ := setup(t)
			g.set(func(g *fakeGauge) { g.pr = tc.data })
			r, err := gauge.ReadPressure(context.Background())
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || r.Status != tc.status {
				t.Fatalf("reading %+v, %v", r, err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "gauge:") {
				t.Fatalf("error %q does not name the gauge", err)
			}
		})
	}
}

func TestErrorReplies(t *testing.T) {
	tests := []struct {
		name string
		over func(req string) (string, bool)
		want error
	}{
		{"NAK", func(r string) (string, bool) { return nakLine, r == "PR1" }, device.ErrRejected},
		{"NAK to ENQ", func(r string) (string, bool) {
			if r == "PR1" {
				return ackLine, true
			}
			return nakLine, r == "\x05"
		}, device.ErrRejected},
		{"error word to ENQ", func(r string) (string, bool) {
			if r == "PR1" {
				return ackLine, true
			}
			return "0001\r\n", r == "\x05"
		}, device.ErrRejected},
		{"garbage ack", func(r string) (string, bool) { return "\x07\x07\r\n", r == "PR1" }, device.ErrFrame},
		{"garbage data", func(r string) (string, bool) {
			if r == "PR1" {
				return ackLine, true
			}
			return "0,+8.34O0E-03\r\n", true
		}, device.ErrFrame},
		{"flipped status", func(r string) (string, bool) {
			if r == "PR1" {
				return ackLine, true
			}
			return "9,+8.3400E-03\r\n", true
		}, device.ErrFrame},
		{"silence", func(r string) (string, bool) { return "", r == "PR1" }, device.ErrTimeout},
		{"silence after ENQ", func(r string) (string, bool) {
			if r == "PR1" {
				return ackLine, true
			}
			return "", true
		}, device.ErrTimeout},
		{"no LF", func(r string) (string, bool) { return "\x06\r", r == "PR1" }, device.ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gauge, g, _ := setup(t)
			if _, err := gauge.ReadPressure(context.Background()); err != nil {
				t.Fatal(err)
			}
			g.set(func(g *fakeGauge) { g.override = tc.over })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err := gauge.ReadPressure(ctx)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatal("exchange timeout not honoured")
			}
			// Recovery: the gauge behaves again, the unit is re-established.
			g.set(func(g *fakeGauge) { g.override = nil; g.unit = 0; g.pr = "0,+1.0000E+00" })
			r, err := gauge.ReadPressure(context.Background())
			if err != nil {
				t.Fatalf("after recovery: %v", err)
			}
			if !near(r.Pressure.Pascal(), 100) {
				t.Fatalf("unit not re-established: %v", r.Pressure)
			}
		})
	}
}

func TestUnitNotAccepted(t *testing.T) {
	gauge, g, _ := setup(t)
	g.set(func(g *fakeGauge) {
		g.override = func(r string) (string, bool) { return nakLine, strings.HasPrefix(r, "UNI") }
	})
	if _, err := gauge.ReadPressure(context.Background()); !errors.Is(err, device.ErrRejected) {
		t.Fatalf("err = %v", err)
	}
}

func TestReplug(t *testing.T) {
	gauge, _, p := setup(t)
	if _, err := gauge.ReadPressure(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Replace()
	var err error
	for range 5 {
		if _, err = gauge.ReadPressure(context.Background()); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("after replug: %v", err)
	}
}

func TestIdent(t *testing.T) {
	gauge, _, _ := setup(t)
	if id, err := gauge.Ident(context.Background()); err != nil || id != "PKR,noSEn" {
		t.Fatalf("ident %q, %v", id, err)
	}
}

func TestPlayback(t *testing.T) {
	rec := []serialtest.Exchange{
		{Req: "UNI", Reply: ackLine},
		{Req: "\x05", Reply: "2\r\n"},
		{Req: "PR1", Reply: ackLine},
		{Req: "\x05", Reply: "0,+8.3400E+01\r\n"},
	}
	p := serialtest.NewPeer(t)
	p.Serve(split, serialtest.NewScript(t, rec).Handler)
	gauge, err := tpg.Open(p.Path(), opts())
	if err != nil {
		t.Fatal(err)
	}
	defer gauge.Close()
	r, err := gauge.ReadPressure(context.Background())
	if err != nil || !near(r.Pressure.Pascal(), 83.4) {
		t.Fatalf("reading %+v, %v", r, err)
	}
}

func TestParseUnit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want tpg.Unit
		ok   bool
	}{{"0", '0', true}, {"1", '1', true}, {"2", '2', true}, {"3", 0, false}, {"", 0, false}, {"22", 0, false}} {
		u, err := model(t).ParseUnit([]byte(tc.in))
		if (err == nil) != tc.ok || u != tc.want {
			t.Errorf("ParseUnit(%q) = %v, %v", tc.in, u, err)
		}
	}
}

func FuzzParsePressure(f *testing.F) {
	for _, s := range []string{
		"0,+8.3400E-03", "1,+5.0000E-09", "2,+1.0000E+03", "3,+0.0000E+00", "6,+1.0000E-01",
		"5,2.0000E-2", "0,-1.2000E-03", "0,8.3400E-03",
		"0,8.34E-03", "0,+8.3400e-03", "7,+8.3400E-03", "0;+8.3400E-03", "", "\x15",
		"0,-.3400E-03", "0,+8.3400E+99", "0,+8.3400E+999", "0,+1.0E+1000", "0,+Inf", "0, 1.0E-03",
	} {
		f.Add([]byte(s))
	}
	m := model(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := m.ParsePressure(b, '0')
		if err != nil && !errors.Is(err, device.ErrFrame) && !errors.Is(err, device.ErrSensor) {
			t.Fatalf("error %v wraps neither ErrFrame nor ErrSensor", err)
		}
		if err != nil && errors.Is(err, device.ErrFrame) {
			return
		}
		// Accepted (or a sensor status): a status digit, a comma and a
		// number in the family's exponential form, and the value is the
		// decimal value of the text, in mbar.
		s := string(b)
		if len(s) < 5 || len(s) > 18 || s[1] != ',' || s[0] < '0' || s[0] > '6' || !strings.Contains(s, "E") ||
			strings.ContainsAny(s[2:], " eIiNn_xXpP") {
			t.Fatalf("accepted %q", s)
		}
		v, perr := strconv.ParseFloat(s[2:], 64)
		if perr != nil || !near(r.Pressure.Millibar(), v) || !device.Finite(float64(r.Pressure)) {
			t.Fatalf("%q parsed as %v", s, r.Pressure)
		}
		if (s[0] >= '3') != (err != nil) {
			t.Fatalf("%q: status %v with error %v", s, r.Status, err)
		}
	})
}

// TestOutsideMeasuringRange: a value the gauge reports as a measurement but
// outside the profile's measuring range (5e-9..1000 mbar) is a fault of the
// gauge, never a reading; the limits themselves (underrange, overrange, as
// the gauge prints them, in any unit) are readings.
func TestOutsideMeasuringRange(t *testing.T) {
	for _, tc := range []struct {
		unit, data string
		fault      bool
	}{
		{"2", "0,+1.0130E+05", true},  // 1013 mbar, status ok
		{"0", "0,+1.0000E-09", true},  // below 5e-9 mbar
		{"0", "0,-1.2000E-03", true},  // a negative value (a linear gauge's offset) is no pressure
		{"0", "2,+1.0000E+03", false}, // overrange at the limit
		{"1", "2,+7.5006E+02", false}, // the same limit in Torr
		{"2", "1,+5.0000E-07", false}, // underrange at the limit, in Pa
	} {
		rec := []serialtest.Exchange{
			{Req: "UNI", Reply: ackLine}, {Req: "\x05", Reply: tc.unit + "\r\n"},
			{Req: "PR1", Reply: ackLine}, {Req: "\x05", Reply: tc.data + "\r\n"},
		}
		p := serialtest.NewPeer(t)
		p.Serve(split, serialtest.NewScript(t, rec).Handler)
		gauge, err := tpg.Open(p.Path(), opts())
		if err != nil {
			t.Fatal(err)
		}
		r, err := gauge.ReadPressure(context.Background())
		gauge.Close()
		if errors.Is(err, device.ErrSensor) != tc.fault || (!tc.fault && err != nil) {
			t.Errorf("%s in unit %s: %+v, %v; want fault %v", tc.data, tc.unit, r, err, tc.fault)
		}
	}
}
