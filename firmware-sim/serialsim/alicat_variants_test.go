package serialsim

import (
	"context"
	"strings"
	"testing"
)

func startMFCVariant(t *testing.T, p *fakePlant, gas string, v MFCVariant) (*MFC, *client) {
	t.Helper()
	m, err := NewMFC(context.Background(), p, MFCOpts{Link: linkIn(t, "mfc-"+gas), Gas: gas, Seed: 1, Variant: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m, dial(t, m.Link())
}

// TestMFCVariantFrames: each variant's frames have the shape of the real
// replies in drivers/alicat/testdata/corpus.txt (named in each case).
func TestMFCVariantFrames(t *testing.T) {
	tests := []struct {
		v        MFCVariant
		set      string // the setpoint command for 50 sccm
		frame    string // the poll's reply after it
		version  string
		lss, dcu string
	}{
		// The simulator's historic controller.
		{MFCDefault, "AS50", "A +014.70 +025.00 +050.00 +050.00 +050.00 Ar", "A 10v05.0-R24", "A U", "A 12 SCCM"},
		// poll-mc-10v20-padded, version-10v20.
		{MFCPadded, "AS50", "A +014.70 +025.00 +050.00 +050.00 +050.00     Ar", "A   10v20.0-R24 Jan  9 2025,15:04:07", "A U", "A 12 SCCM"},
		// poll-mc-5v12-unsigned: flows with one decimal, the setpoint unsigned; no LSS, no DCU.
		{MFCPre6v, "AS50", "A +014.70 +025.00 +0050.0 +0050.0 0050.0      Ar", "A   5v12.0-R22", "A ?", "A ?"},
		// poll-mcr-8v17-slpm: SLPM, three decimals; no LSS, no DCU on 8v17.
		{MFCSLPM, "AS0.05", "A +014.70 +025.00 +00.050 +00.050 +00.050     Ar", "A   8v17.0-R23 Nov 27 2019,15:28:45", "A ?", "A ?"},
		// Analog source: S is not accepted, the setpoint stays 0.
		{MFCAnalogSetpoint, "AS50", "A +014.70 +025.00 +000.00 +000.00 +000.00     Ar", "A   10v20.0-R24 Jan  9 2025,15:04:07", "A A", "A 12 SCCM"},
		{MFCSavedSetpoint, "AS50", "A +014.70 +025.00 +050.00 +050.00 +050.00     Ar", "A   10v20.0-R24 Jan  9 2025,15:04:07", "A S", "A 12 SCCM"},
	}
	for _, tt := range tests {
		t.Run("variant "+string(tt.v), func(t *testing.T) {
			p := newFakePlant()
			m, c := startMFCVariant(t, p, "ar", tt.v)
			c.t = t
			for _, x := range []struct{ send, want string }{
				{tt.set + "\r", tt.frame + "\r"},
				{"A\r", tt.frame + "\r"},
				{"AVE\r", tt.version + "\r"},
				{"ALSS\r", tt.lss + "\r"},
				{"ADCU 5\r", tt.dcu + "\r"},
				{"ALSS U\r", "A ?\r"}, // set forms are refused: nothing here changes a setting
				{"ADCU 5 7\r", "A ?\r"},
			} {
				c.send(x.send)
				if got := c.readTo('\r'); got != x.want {
					t.Fatalf("%q: reply %q, want %q", x.send, got, x.want)
				}
			}
			wantNVM := int64(0)
			if tt.v == MFCSavedSetpoint {
				wantNVM = 1
			}
			if got := m.NVMWrites(); got != wantNVM {
				t.Fatalf("NVM writes %d, want %d", got, wantNVM)
			}
		})
	}
}

// TestMFCVariantTotalizer: the totalizer column sits between the setpoint
// and the gas and grows while gas flows.
func TestMFCVariantTotalizer(t *testing.T) {
	p := newFakePlant()
	_, c := startMFCVariant(t, p, "ar", MFCTotalizer)
	c.send("AS500\r")
	first := strings.Fields(c.readTo('\r'))
	if len(first) != 8 || first[6] != "+0000000.0" || first[7] != "Ar" {
		t.Fatalf("frame %q", first)
	}
}

// TestMFCVariantDescriptions: ??D* answers in the dialect of the variant's
// firmware, line for line as the captures (corpus describe-mc-10v20,
// describe-mcr-8v17, describe-mc-5v12-legacy).
func TestMFCVariantDescriptions(t *testing.T) {
	tests := []struct {
		v          MFCVariant
		lines      int
		first, mid string
	}{
		{MFCPadded, 22, "A D00 ID_ NAME______________________ TYPE_______ WIDTH NOTES___________________", "A D05 005 Mass Flow                  s decimal     7/2 012 02 SCCM"},
		{MFCSLPM, 20, "A D00 ID_ NAME______________________ TYPE_______ WIDTH NOTES___________________", "A D05 005 Mass Flow                  s decimal     7/3 007 02 SLPM"},
		{MFCPre6v, 15, "A  D00 NAME_______ TYPE_____ MinVal_  MaxVal_  UNITS__", "A  D05 Mass        signed    +0000.0  +0500.0     SCCM"},
		{MFCTotalizer, 23, "A D00 ID_ NAME______________________ TYPE_______ WIDTH NOTES___________________", "A D05 005 Mass Flow                  s decimal     7/2 012 02 SCCM"},
	}
	for _, tt := range tests {
		t.Run(string(tt.v), func(t *testing.T) {
			p := newFakePlant()
			_, c := startMFCVariant(t, p, "ar", tt.v)
			c.t = t
			c.send("A??D*\r")
			var got []string
			for i := 0; i < tt.lines; i++ {
				got = append(got, strings.TrimSuffix(c.readTo('\r'), "\r"))
			}
			if got[0] != tt.first || got[5] != tt.mid {
				t.Fatalf("lines 0 and 5:\n%q\n%q", got[0], got[5])
			}
			if !strings.HasSuffix(got[len(got)-1], "LCK") && !strings.HasSuffix(got[len(got)-1], "MOV       na") {
				t.Fatalf("last line %q", got[len(got)-1])
			}
		})
	}
}

func TestParseMFCVariant(t *testing.T) {
	for _, s := range MFCVariants() {
		if _, err := ParseMFCVariant(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := ParseMFCVariant("bogus"); err == nil {
		t.Error("accepted bogus")
	}
}

// TestMFCVariantManufacturing: ??M* answers M00..M09 as the captures do, the
// model number stating the full scale in the variant's unit.
func TestMFCVariantManufacturing(t *testing.T) {
	for _, tt := range []struct {
		v    MFCVariant
		m04  string
		last string
	}{
		{MFCPadded, "A  M04 Model Number MC-500SCCM-D", "A  M09 Software Revision 10v20.0-R24"},
		{MFCPre6v, "A  M04 Model Number  MC-500SCCM-D", "A  M09 Software Revision 5v12.0-R22"},
		{MFCSLPM, "A  M04 Model Number MCR-0.5SLPM-D", "A  M09 Software Revision 8v17.0-R23"},
	} {
		t.Run(string(tt.v), func(t *testing.T) {
			p := newFakePlant()
			_, c := startMFCVariant(t, p, "ar", tt.v)
			c.t = t
			c.send("A??M*\r")
			var got []string
			for i := 0; i < 10; i++ {
				got = append(got, strings.TrimSuffix(c.readTo('\r'), "\r"))
			}
			if got[0] != "A  M00 ALICAT SCIENTIFIC" || got[4] != tt.m04 || got[9] != tt.last {
				t.Fatalf("??M*: %q", got)
			}
		})
	}
}
