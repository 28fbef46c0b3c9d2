package alert

import (
	"net/http/httptest"
	"testing"
)

// BenchmarkNotify is the cost the interlock's trip and e-stop paths pay for
// an alert: one Notify (a channel send, or a counted drop when full).
func BenchmarkNotify(b *testing.B) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	a, err := New(openDB(b), testConfig(srv.URL), Opts{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	al := leak()
	b.ReportAllocs()
	for b.Loop() {
		a.Notify(al)
	}
}
