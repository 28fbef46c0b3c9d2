package alicat

import (
	"bytes"
	"errors"
	"testing"

	"hcp-edge/device"
)

// FuzzParseReplies: the query replies' parsers (VE, LSS, DCU, ??D*) never
// panic, and refuse with an error wrapping device.ErrFrame or
// device.ErrRejected; ??D* gets the input split in lines.
func FuzzParseReplies(f *testing.F) {
	for _, s := range []string{
		"A   10v20.0-R24 Jan  9 2025,15:04:07", "A U", "A 12 SCCM", "A ?", "",
		"A D00 ID_ NAME___ TYPE___ WIDTH NOTES___\nA D05 005 Mass Flow  s decimal  7/2 012 02 SCCM\nA D08 701 *Error  string  3 ADC",
		"A  D00 NAME_______ TYPE_____ MinVal_  MaxVal_  UNITS__\nA  D05 Mass  signed  +0000.0  +0500.0  SCCM",
		"A D00\nA D01 s", "A  D00 NAME\nA  D01 x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ok := func(err error) {
			if err != nil && !errors.Is(err, device.ErrFrame) && !errors.Is(err, device.ErrRejected) {
				t.Fatalf("error %v wraps neither ErrFrame nor ErrRejected", err)
			}
		}
		_, err := ParseVersion(b, 'A')
		ok(err)
		_, err = ParseSetpointSource(b, 'A')
		ok(err)
		_, _, err = ParseEngineeringUnit(b, 'A')
		ok(err)
		_, err = ParseDescription(bytes.Split(b, []byte("\n")), 'A')
		ok(err)
	})
}
