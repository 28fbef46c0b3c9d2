package safestate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
)

// TestCheckUnreachable: a fallback e-stop on a rig none of whose
// instruments could be opened reports each one, relay first, as not
// reachable with its error, never skips one, and is not confirmed safe.
func TestCheckUnreachable(t *testing.T) {
	in := &rigconfig.Instruments{Unreachable: map[string]error{
		"gpio": errors.New("no gpio chip"), "furnace": errors.New("connection refused"),
		"dio": errors.New("connection refused"), "mfc-h2": errors.New("device or resource busy"),
	}}
	r := Report{Via: "fallback", Operator: "ada", Outputs: Check(context.Background(), in, true)}
	r.Finish()
	var names []string
	for _, o := range r.Outputs {
		names = append(names, o.Instrument)
		if o.Confirmed || !strings.HasPrefix(o.Error, "not reachable: ") {
			t.Errorf("%s: %+v", o.Instrument, o)
		}
	}
	if got := strings.Join(names, ","); got != "relay,furnace,dio,mfc-h2" {
		t.Fatalf("outputs %s, want relay,furnace,dio,mfc-h2", got)
	}
	if r.AllConfirmed {
		t.Fatal("confirmed safe with every instrument unreachable")
	}
	if !strings.Contains(r.Outputs[3].Error, "held exclusively by another process") {
		t.Fatalf("a busy port is not explained: %q", r.Outputs[3].Error)
	}
	var b strings.Builder
	Print(&b, r)
	if !strings.Contains(b.String(), "NOT ALL OUTPUTS CONFIRMED SAFE") || !strings.Contains(b.String(), "e-stop via fallback (operator ada)") {
		t.Fatalf("printed:\n%s", b.String())
	}
}

// TestFinish: confirmed only with outputs, every one of them read back
// safe.
func TestFinish(t *testing.T) {
	tests := []struct {
		name    string
		outputs []Output
		want    bool
	}{
		{"no outputs", nil, false},
		{"all safe", []Output{{Instrument: "relay", Confirmed: true}, {Instrument: "furnace", Confirmed: true}}, true},
		{"one not safe", []Output{{Instrument: "relay", Confirmed: true}, {Instrument: "furnace"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Report{Outputs: tt.outputs, AllConfirmed: !tt.want}
			r.Finish()
			if r.AllConfirmed != tt.want {
				t.Fatalf("AllConfirmed = %v, want %v", r.AllConfirmed, tt.want)
			}
		})
	}
}
