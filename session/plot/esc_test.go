package plot

import (
	"bytes"
	"encoding/xml"
	"testing"
)

// TestEscAsXML: esc writes what encoding/xml's EscapeText writes.
func TestEscAsXML(t *testing.T) {
	for _, s := range []string{"", "plain", `a<b>&"c"'d'`, "tab\tnl\ncr\r", "°C cm⁻¹ MoS₂", "bad\xffutf8", "ctl\x01\x1f", "\uFFFE\uFFFF", "\U0001F600", "\u2028"} {
		var b bytes.Buffer
		_ = xml.EscapeText(&b, []byte(s))
		if got := esc(s); got != b.String() {
			t.Errorf("esc(%q) = %q, EscapeText %q", s, got, b.String())
		}
	}
}

func FuzzEscAsXML(f *testing.F) {
	f.Add("a<b>")
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		_ = xml.EscapeText(&b, []byte(s))
		if got := esc(s); got != b.String() {
			t.Fatalf("esc(%q) = %q, EscapeText %q", s, got, b.String())
		}
	})
}
