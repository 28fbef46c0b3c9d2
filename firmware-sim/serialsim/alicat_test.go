package serialsim

import (
	"context"
	"regexp"
	"testing"
	"time"
)

func startMFC(t *testing.T, p *fakePlant, gas string) *client {
	t.Helper()
	m, err := NewMFC(context.Background(), p, MFCOpts{Link: linkIn(t, "mfc-"+gas), Gas: gas, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return dial(t, m.Link())
}

func TestMFCCommands(t *testing.T) {
	p := newFakePlant()
	c := startMFC(t, p, "ar")
	const bad = "A ?\r"
	tests := []struct {
		name   string
		send   string
		want   string
		writes []write
	}{
		{"poll", "A\r", "A +014.70 +025.00 +000.00 +000.00 +000.00 Ar\r", nil},
		{"setpoint no space", "AS50\r", "A +014.70 +025.00 +050.00 +050.00 +050.00 Ar\r",
			[]write{{"mfc-ar", "serial", "setpoint", 50, true}}},
		{"setpoint with space", "AS 25.5\r", "A +014.70 +025.00 +025.50 +025.50 +025.50 Ar\r",
			[]write{{"mfc-ar", "serial", "setpoint", 25.5, true}}},
		{"setpoint full scale", "AS500\r", "A +014.70 +025.00 +500.00 +500.00 +500.00 Ar\r",
			[]write{{"mfc-ar", "serial", "setpoint", 500, true}}},
		{"setpoint leading point", "AS.5\r", "A +014.70 +025.00 +000.50 +000.50 +000.50 Ar\r",
			[]write{{"mfc-ar", "serial", "setpoint", 0.5, true}}},
		{"lower case", "as10\r", "A +014.70 +025.00 +010.00 +010.00 +010.00 Ar\r",
			[]write{{"mfc-ar", "serial", "setpoint", 10, true}}},
		{"setpoint negative", "AS-1\r", bad, []write{{"mfc-ar", "serial", "setpoint", -1, false}}},
		{"setpoint above full scale", "AS500.01\r", bad, []write{{"mfc-ar", "serial", "setpoint", 500.01, false}}},
		{"setpoint not a number", "ASabc\r", bad, []write{{"mfc-ar", "serial", "setpoint", badValue, false}}},
		{"setpoint exponent", "AS1e2\r", bad, []write{{"mfc-ar", "serial", "setpoint", badValue, false}}},
		{"setpoint nan", "ASNaN\r", bad, []write{{"mfc-ar", "serial", "setpoint", badValue, false}}},
		{"setpoint empty", "AS\r", bad, []write{{"mfc-ar", "serial", "setpoint", badValue, false}}},
		{"setpoint two spaces", "AS  5\r", bad, []write{{"mfc-ar", "serial", "setpoint", badValue, false}}},
		{"setpoint two points", "AS1.2.3\r", bad, []write{{"mfc-ar", "serial", "setpoint", badValue, false}}},
		{"hold", "AHC\r", "A +014.70 +025.00 +000.00 +000.00 +010.00 Ar HLD\r",
			[]write{{"mfc-ar", "serial", "hold", 1, true}}},
		{"setpoint while held", "AS20\r", "A +014.70 +025.00 +000.00 +000.00 +020.00 Ar HLD\r",
			[]write{{"mfc-ar", "serial", "setpoint", 20, true}}},
		{"cancel hold", "AC\r", "A +014.70 +025.00 +020.00 +020.00 +020.00 Ar\r",
			[]write{{"mfc-ar", "serial", "hold", 0, true}}},
		{"version", "AVE\r", "A 10v05.0-R24\r", nil},
		{"unknown", "AX\r", bad, nil},
		{"space before command", "A S5\r", bad, nil},
		{"trailing garbage", "AHCX\r", bad, nil},
		{"stray LF", "A\r\n", "A +014.70 +025.00 +020.00 +020.00 +020.00 Ar\r", nil},
		{"leading LF", "\nA\r", "A +014.70 +025.00 +020.00 +020.00 +020.00 Ar\r", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			c.send(tt.send)
			if got := c.readTo('\r'); got != tt.want {
				t.Fatalf("reply %q, want %q", got, tt.want)
			}
			if got := p.takeWrites(); !equalWrites(got, tt.writes) {
				t.Fatalf("writes %+v, want %+v", got, tt.writes)
			}
		})
	}
}

func TestMFCIgnoresOtherUnitsAndBlankLines(t *testing.T) {
	p := newFakePlant()
	c := startMFC(t, p, "h2")
	// B is this controller; A and C commands, blank lines and setpoints for
	// others are not answered and not executed.
	c.send("A\rAS10\r\r\n\rCHC\rB\r")
	if got, want := c.readTo('\r'), "B +014.70 +025.00 +000.00 +000.00 +000.00 H2\r"; got != want {
		t.Fatalf("reply %q, want %q", got, want)
	}
	if w := p.takeWrites(); len(w) != 0 {
		t.Fatalf("writes %+v", w)
	}
	c.expectNothing(50 * time.Millisecond)
}

func TestMFCOverlongLine(t *testing.T) {
	p := newFakePlant()
	c := startMFC(t, p, "h2s")
	long := make([]byte, 3*maxLine)
	for i := range long {
		long[i] = '1'
	}
	c.send("CS" + string(long) + "\r")
	if got := c.readTo('\r'); got != "C ?\r" {
		t.Fatalf("reply %q", got)
	}
	c.send("C\r")
	if got, want := c.readTo('\r'), "C +014.70 +025.00 +000.00 +000.00 +000.00 H2S\r"; got != want {
		t.Fatalf("reply %q, want %q", got, want)
	}
}

func TestMFCStuckOpenShowsMOV(t *testing.T) {
	p := newFakePlant()
	p.set(func(p *fakePlant) {
		m := p.mfcs["h2s"]
		m.StuckOpen, m.FlowSCCM = true, 61.3
	})
	c := startMFC(t, p, "h2s")
	c.send("C\r")
	if got, want := c.readTo('\r'), "C +014.70 +025.00 +061.30 +061.30 +000.00 H2S MOV\r"; got != want {
		t.Fatalf("reply %q, want %q", got, want)
	}
	c.send("CHC\r")
	if got, want := c.readTo('\r'), "C +014.70 +025.00 +061.30 +061.30 +000.00 H2S HLD MOV\r"; got != want {
		t.Fatalf("reply %q, want %q", got, want)
	}
}

func TestMFCSilentFault(t *testing.T) {
	p := newFakePlant()
	c := startMFC(t, p, "ar")
	p.setFault("silent", "mfc-ar", true)
	c.send("AS10\rA\r")
	c.expectNothing(100 * time.Millisecond)
	if w := p.takeWrites(); len(w) != 0 {
		t.Fatalf("silent controller executed %+v", w)
	}
	p.setFault("silent", "mfc-ar", false)
	c.send("A\r")
	if got, want := c.readTo('\r'), "A +014.70 +025.00 +000.00 +000.00 +000.00 Ar\r"; got != want {
		t.Fatalf("after clear: %q, want %q", got, want)
	}
}

// frameRE is how a careful client validates a data frame.
var frameRE = regexp.MustCompile(`^[A-Z]( [+-]\d{3}\.\d{2}){5} [A-Za-z0-9]+( (HLD|MOV|OVR))*\r$`)

func TestMFCCorruptFault(t *testing.T) {
	p := newFakePlant()
	c := startMFC(t, p, "ar")
	c.send("A\r")
	if got := c.readTo('\r'); !frameRE.MatchString(got) {
		t.Fatalf("clean frame %q fails the format check", got)
	}
	p.setFault("corrupt", "mfc-ar", true)
	for i := range 20 {
		c.send("A\r")
		got := c.readTo('\r')
		if frameRE.MatchString(got) {
			t.Fatalf("corrupted frame %d %q passes the format check", i, got)
		}
		if len(got) != len("A +014.70 +025.00 +000.00 +000.00 +000.00 Ar\r") {
			t.Fatalf("corruption changed the length: %q", got)
		}
	}
	c.send("AQ\r")
	if got := c.readTo('\r'); got == "A ?\r" {
		t.Fatal("error reply not corrupted")
	}
}

func TestMFCNumber(t *testing.T) {
	tests := []struct {
		name string
		v    float64
		want string
	}{
		{"pressure", 14.696, "+014.70"},
		{"negative noise", -0.12, "-000.12"},
		{"full scale", 500, "+500.00"},
		{"too wide", 1234.5, "+1234.50"},
		{"negative rounds to zero", -0.001, "+000.00"},
		{"zero", 0, "+000.00"},
		{"negative wide", -1234.567, "-1234.57"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mfcNumber(tt.v, 2, false); got != tt.want {
				t.Fatalf("mfcNumber(%v) = %q, want %q", tt.v, got, tt.want)
			}
		})
	}
}

func TestNewMFCOpts(t *testing.T) {
	p := newFakePlant()
	for _, o := range []MFCOpts{
		{Link: linkIn(t, "x"), Gas: ""},
		{Link: linkIn(t, "x"), Gas: "n2"},              // no default unit id
		{Link: linkIn(t, "x"), Gas: "ar", UnitID: 'a'}, // not a capital
	} {
		if m, err := NewMFC(context.Background(), p, o); err == nil {
			m.Close()
			t.Fatalf("NewMFC(%+v) succeeded", o)
		}
	}
	// A gas the plant does not know answers "?" to everything.
	m, err := NewMFC(context.Background(), p, MFCOpts{Link: linkIn(t, "mfc-n2"), Gas: "n2", UnitID: 'D'})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := dial(t, m.Link())
	c.send("D")
	if got := c.readTo('\r'); got != "D ?\r" {
		t.Fatalf("reply %q", got)
	}
}
