package serialsim

import (
	"context"
	"regexp"
	"testing"
	"time"
)

const (
	ack = "\x06\r\n"
	nak = "\x15\r\n"
	enq = "\x05"
)

func startGauge(t *testing.T, p *fakePlant) *client {
	t.Helper()
	g, err := NewGauge(context.Background(), p, GaugeOpts{Link: linkIn(t, "gauge"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	return dial(t, g.Link())
}

func TestGaugeCommands(t *testing.T) {
	p := newFakePlant()
	c := startGauge(t, p)
	tests := []struct {
		name     string
		pressure float64 // Pa; 0 keeps the previous one
		send     string
		want     string // ACK/NAK and, after ENQ, the data ("" when no ENQ is sent)
		data     string
		writes   []write
	}{
		{name: "ENQ before any command answers the error word", send: enq, want: "0000\r\n"},
		{name: "pressure mbar", pressure: 0.834, send: "PR1\r", want: ack, data: "0,+8.3400E-03\r\n"},
		{name: "pressure with LF", send: "PR1\r\n", want: ack, data: "0,+8.3400E-03\r\n"},
		{name: "logarithmic gauge: 3rd and 4th decimal 0", pressure: 0.83456, send: "PR1\r", want: ack, data: "0,+8.3500E-03\r\n"},
		{name: "gauge 2 of a TPG 261: no sensor", send: "PR2\r", want: ack, data: "5,2.0000E-2\r\n"},
		{name: "both gauges", pressure: 0.834, send: "PRX\r", want: ack, data: "0,+8.3400E-03,5,2.0000E-2\r\n"},
		{name: "read unit", send: "UNI\r", want: ack, data: "0\r\n"},
		{name: "set Torr", send: "UNI,1\r", want: ack, data: "1\r\n",
			writes: []write{{"gauge", "serial", "unit", 1, true}}},
		{name: "pressure Torr", send: "PR1\r", want: ack, data: "0,+6.2600E-03\r\n"},
		{name: "set Pa with space", send: "UNI, 2\r", want: ack, data: "2\r\n",
			writes: []write{{"gauge", "serial", "unit", 2, true}}},
		{name: "pressure Pa", send: "PR1\r", want: ack, data: "0,+8.3400E-01\r\n"},
		{name: "underrange Pa", pressure: 1e-8, send: "PR1\r", want: ack, data: "1,+5.0000E-07\r\n"},
		{name: "set unit out of range", send: "UNI,3\r", want: nak,
			writes: []write{{"gauge", "serial", "unit", 3, false}}},
		{name: "set unit not a digit", send: "UNI,x\r", want: nak,
			writes: []write{{"gauge", "serial", "unit", badValue, false}}},
		{name: "set unit empty", send: "UNI,\r", want: nak,
			writes: []write{{"gauge", "serial", "unit", badValue, false}}},
		{name: "set mbar", send: "UNI,0\r", want: ack, data: "0\r\n",
			writes: []write{{"gauge", "serial", "unit", 0, true}}},
		{name: "underrange mbar", send: "PR1\r", want: ack, data: "1,+5.0000E-09\r\n"},
		{name: "overrange mbar", pressure: 2e5, send: "PR1\r", want: ack, data: "2,+1.0000E+03\r\n"},
		{name: "atmosphere is overrange", pressure: 101325, send: "PR1\r", want: ack, data: "2,+1.0000E+03\r\n"},
		{name: "identification: a field per connector", send: "TID\r", want: ack, data: "PKR,noSEn\r\n"},
		{name: "error status after refused strings: syntax", send: "ERR\r", want: ack, data: "0001\r\n"},
		{name: "error status is cancelled when read", send: "ERR\r", want: ack, data: "0000\r\n"},
		{name: "unknown mnemonic", send: "PR3\r", want: nak},
		{name: "lower case", send: "pr1\r", want: nak},
		{name: "empty line", send: "\r", want: nak},
		{name: "ETX clears input", send: "XX\x03TID\r", want: ack, data: "PKR,noSEn\r\n"},
		{name: "ENQ after a refused string answers the error word", send: "XYZ\r", want: nak},
		{name: "...0001", send: enq, want: "0001\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			if tt.pressure != 0 {
				p.set(func(p *fakePlant) { p.pressure = tt.pressure })
			}
			c.send(tt.send)
			if got := c.readTo('\n'); got != tt.want {
				t.Fatalf("reply %q, want %q", got, tt.want)
			}
			if got := p.takeWrites(); !equalWrites(got, tt.writes) {
				t.Fatalf("writes %+v, want %+v", got, tt.writes)
			}
			if tt.data == "" {
				return
			}
			c.send(enq)
			if got := c.readTo('\n'); got != tt.data {
				t.Fatalf("data %q, want %q", got, tt.data)
			}
		})
	}
}

// TestGaugeRepeatedENQ: each ENQ sends the last accepted command's data
// again (p. 67); a refused string leaves no valid request, and ENQ then
// answers the ERROR word [ours], never NAK.
func TestGaugeRepeatedENQ(t *testing.T) {
	p := newFakePlant()
	c := startGauge(t, p)
	c.send("PR1\r")
	if got := c.readTo('\n'); got != ack {
		t.Fatalf("reply %q", got)
	}
	for _, pa := range []float64{0.834, 12.5, 3e4} {
		p.set(func(p *fakePlant) { p.pressure = pa })
		c.send(enq)
		want := formatPressure(pa, unitMbar) + "\r\n"
		if got := c.readTo('\n'); got != want {
			t.Fatalf("ENQ at %g Pa: %q, want %q", pa, got, want)
		}
	}
	c.send("BAD\r")
	if got := c.readTo('\n'); got != nak {
		t.Fatalf("reply %q", got)
	}
	c.send(enq)
	if got, want := c.readTo('\n'), "0001\r\n"; got != want {
		t.Fatalf("ENQ after NAK: %q, want %q", got, want)
	}
}

func TestGaugeSilentFault(t *testing.T) {
	p := newFakePlant()
	c := startGauge(t, p)
	p.setFault("silent", "gauge", true)
	c.send("UNI,1\r" + enq)
	c.expectNothing(100 * time.Millisecond)
	if w := p.takeWrites(); len(w) != 0 {
		t.Fatalf("silent gauge executed %+v", w)
	}
	p.setFault("silent", "gauge", false)
	c.send("UNI\r")
	if got := c.readTo('\n'); got != ack {
		t.Fatalf("reply %q", got)
	}
	c.send(enq)
	if got := c.readTo('\n'); got != "0\r\n" {
		t.Fatalf("unit %q: the silent UNI,1 was executed", got)
	}
}

// pressureRE is how a careful client validates PR1 data.
var pressureRE = regexp.MustCompile(`^[0-6],[+-]\d\.\d{4}E[+-]\d{2}\r\n$`)

func TestGaugeCorruptFault(t *testing.T) {
	p := newFakePlant()
	c := startGauge(t, p)
	c.send("PR1\r")
	if got := c.readTo('\n'); got != ack {
		t.Fatalf("reply %q", got)
	}
	p.setFault("corrupt", "gauge", true)
	for i := range 20 {
		c.send(enq)
		if got := c.readTo('\n'); pressureRE.MatchString(got) {
			t.Fatalf("corrupted data %d %q passes the format check", i, got)
		}
	}
	c.send("TID\r")
	if got := c.readTo('\n'); got == ack || len(got) != len(ack) {
		t.Fatalf("corrupted ACK %q", got)
	}
}

func TestFormatPressure(t *testing.T) {
	tests := []struct {
		name string
		pa   float64
		unit int
		want string
	}{
		{"signed mantissa", 0.834, unitMbar, "0,+8.3400E-03"},
		{"low limit is ok", 5e-7, unitMbar, "0,+5.0000E-09"},
		{"underrange Torr", 0, unitTorr, "1,+3.7500E-09"},
		{"high limit is ok", 1e5, unitMbar, "0,+1.0000E+03"},
		{"overrange Pa", 1e6, unitPa, "2,+1.0000E+05"},
		{"negative is underrange", -3, unitMbar, "1,+5.0000E-09"},
		{"rounding up a decade", 0.09996, unitMbar, "0,+1.0000E-03"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatPressure(tt.pa, tt.unit); got != tt.want {
				t.Fatalf("formatPressure(%g, %d) = %q, want %q", tt.pa, tt.unit, got, tt.want)
			}
		})
	}
}

func startGaugeVariant(t *testing.T, p *fakePlant, v GaugeVariant) *client {
	t.Helper()
	g, err := NewGauge(context.Background(), p, GaugeOpts{Link: linkIn(t, "gauge"), Seed: 1, Variant: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	return dial(t, g.Link())
}

// TestGaugeTPG262: two gauges, both on the chamber; TID reports both.
func TestGaugeTPG262(t *testing.T) {
	p := newFakePlant()
	p.set(func(p *fakePlant) { p.pressure = 0.834 })
	c := startGaugeVariant(t, p, GaugeVariant{Model: TPG262})
	for _, tc := range []struct{ send, data string }{
		{"TID\r", "PKR,PKR\r\n"},
		{"PR2\r", "0,+8.3400E-03\r\n"},
		{"PRX\r", "0,+8.3400E-03,0,+8.3400E-03\r\n"},
	} {
		c.send(tc.send)
		if got := c.readTo('\n'); got != ack {
			t.Fatalf("%q: %q", tc.send, got)
		}
		c.send(enq)
		if got := c.readTo('\n'); got != tc.data {
			t.Fatalf("%q: data %q, want %q", tc.send, got, tc.data)
		}
	}
}

var continuousRE = regexp.MustCompile(`^[0-6],[+-]\d\.\d{4}E[+-]\d{2},([0-6],[+-]\d\.\d{4}E[+-]\d{2}|5,2\.0000E-2)\r\n$`)

// TestGaugeContinuousOutput: a controller left in continuous output mode
// sends both gauges' data unasked at its interval (p. 72).
func TestGaugeContinuousOutput(t *testing.T) {
	p := newFakePlant()
	p.set(func(p *fakePlant) { p.pressure = 0.834 })
	c := startGaugeVariant(t, p, GaugeVariant{Continuous: true, ContinuousMode: 0})
	start := time.Now()
	for range 3 {
		if got := c.readTo('\n'); !continuousRE.MatchString(got) {
			t.Fatalf("continuous output %q", got)
		}
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("3 lines at 100 ms took %v", d)
	}
}

// TestGaugeCOMStartsContinuousOutput: COM,0 is acknowledged and starts the
// output; it is a setting, recorded in the write log.
func TestGaugeCOMStartsContinuousOutput(t *testing.T) {
	p := newFakePlant()
	c := startGauge(t, p)
	c.send("COM,0\r")
	if got := c.readTo('\n'); got != ack {
		t.Fatalf("reply %q", got)
	}
	if got := c.readTo('\n'); !continuousRE.MatchString(got) {
		t.Fatalf("continuous output %q", got)
	}
	if w := p.takeWrites(); !equalWrites(w, []write{{"gauge", "serial", "continuous", 0, true}}) {
		t.Fatalf("writes %+v", w)
	}
	c.send("COM,7\r")
	for {
		got := c.readTo('\n')
		if got == nak {
			break
		}
		if !continuousRE.MatchString(got) {
			t.Fatalf("reply %q", got)
		}
	}
}

func TestParseGaugeModel(t *testing.T) {
	for in, want := range map[string]GaugeModel{"": TPG261, "tpg261": TPG261, "TPG262": TPG262} {
		if got, err := ParseGaugeModel(in); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	if _, err := ParseGaugeModel("tpg361"); err == nil {
		t.Error("tpg361 accepted")
	}
}
