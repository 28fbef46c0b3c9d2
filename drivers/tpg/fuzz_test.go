package tpg_test

import (
	"errors"
	"strings"
	"testing"

	"hcp-edge/device"
	"hcp-edge/drivers/tpg"
)

// FuzzParsePressures: PRX and continuous-output lines either parse into
// exactly two readings, each with nil or a sensor fault, or fail as a frame
// error with no readings.
func FuzzParsePressures(f *testing.F) {
	for _, s := range []string{
		"0,+8.3400E-03,5,2.0000E-2", "0,+8.3400E-03,0,+1.2000E-05", "1,+5.0000E-09,2,+1.0000E+03",
		"0,+8.3400E-03", "0,+8.3400E-03,9,+1.0E-03", ",,,", "0,+8.3400E-03,5,2.0000E-2,0",
	} {
		f.Add([]byte(s))
	}
	m := model(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, errs, err := m.ParsePressures(b, '0')
		if err != nil {
			if !errors.Is(err, device.ErrFrame) || rs != nil || errs != nil {
				t.Fatalf("%q: %v with %d readings", b, err, len(rs))
			}
			return
		}
		if len(rs) != 2 || len(errs) != 2 || strings.Count(string(b), ",") != 3 {
			t.Fatalf("%q: %d readings", b, len(rs))
		}
		for i, e := range errs {
			if e != nil && !errors.Is(e, device.ErrSensor) || !device.Finite(float64(rs[i].Pressure)) {
				t.Fatalf("%q: gauge %d: %v %v", b, i+1, rs[i].Pressure, e)
			}
		}
	})
}

// FuzzParseIdent: TID's fields are letters and digits, and join back to
// the reply.
func FuzzParseIdent(f *testing.F) {
	for _, s := range []string{"PKR,noSEn", "PKR,PKR", "TPR,noid", "PKR", "", ",", "PKR,,", "P K R", "IKR11,CMR"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := tpg.ParseIdent(b)
		if err != nil {
			if !errors.Is(err, device.ErrFrame) {
				t.Fatalf("%q: %v", b, err)
			}
			return
		}
		if strings.Join(ids, ",") != string(b) {
			t.Fatalf("%q parsed as %q", b, ids)
		}
		for _, id := range ids {
			if id == "" || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
				t.Fatalf("%q: field %q", b, id)
			}
		}
	})
}

// FuzzParseErrorWord: four binary digits, nothing else.
func FuzzParseErrorWord(f *testing.F) {
	for _, s := range []string{"0000", "0001", "1000", "1100", "000", "00000", "0002", "PKR"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := tpg.ParseErrorWord(b)
		ok := len(b) == 4 && strings.Trim(string(b), "01") == ""
		if (err == nil) != ok || (ok && string(w) != string(b)) {
			t.Fatalf("%q: %q, %v", b, w, err)
		}
		if err == nil && (w.String() == "") {
			t.Fatalf("%q: no description", b)
		}
		if err != nil && !errors.Is(err, device.ErrFrame) {
			t.Fatalf("%q: %v", b, err)
		}
	})
}
