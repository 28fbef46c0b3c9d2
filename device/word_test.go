package device

import (
	"strings"
	"testing"
)

func TestWord(t *testing.T) {
	for s, want := range map[string]bool{
		"growth": true, "zone_2": true, "a": true, strings.Repeat("x", 64): true,
		"": false, "Growth": false, "zone-2": false, "zone 2": false, "été": false, strings.Repeat("x", 65): false,
	} {
		if Word(s) != want {
			t.Errorf("Word(%q) = %v, want %v", s, !want, want)
		}
	}
}
