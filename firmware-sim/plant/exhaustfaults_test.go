package plant

import (
	"testing"
	"time"
)

// TestScrubberTripAndExhaustLost: scrubber-trip drops the scrubber's output
// (and exhaust_ok with it) and keeps it off until cleared and switched on
// anew; exhaust-lost drops exhaust_ok with the scrubber still on.
func TestScrubberTripAndExhaustLost(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p, err := New(Opts{RelayEnergised: true, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	exhaust := func() bool {
		var in [NumInputs]bool
		if err := p.DIOReadInputs(0, in[:]); err != nil {
			t.Fatal(err)
		}
		return in[DIExhaustOK]
	}
	if err := p.DIOWriteCoils("test", CoilScrubber, []bool{true}); err != nil {
		t.Fatal(err)
	}
	p.Step(3 * time.Second) // the scrubber has run 2 s: exhaust OK
	if !exhaust() {
		t.Fatal("exhaust_ok not on with the scrubber running")
	}

	if err := p.Inject(FaultExhaustLost, ""); err != nil {
		t.Fatal(err)
	}
	if exhaust() || !p.Coil(CoilScrubber) {
		t.Fatalf("exhaust-lost: exhaust_ok %v, scrubber %v; want false, true", exhaust(), p.Coil(CoilScrubber))
	}
	if err := p.Clear(FaultExhaustLost, ""); err != nil {
		t.Fatal(err)
	}
	if !exhaust() {
		t.Fatal("exhaust_ok not back once exhaust-lost cleared")
	}

	if err := p.Inject(FaultScrubberTrip, ""); err != nil {
		t.Fatal(err)
	}
	if p.Coil(CoilScrubber) || exhaust() {
		t.Fatalf("scrubber-trip: scrubber %v, exhaust_ok %v; want both off", p.Coil(CoilScrubber), exhaust())
	}
	if err := p.DIOWriteCoils("test", CoilScrubber, []bool{true}); err != nil {
		t.Fatal(err)
	}
	if p.Coil(CoilScrubber) {
		t.Fatal("a tripped scrubber switched on again")
	}
	if err := p.Clear(FaultScrubberTrip, ""); err != nil {
		t.Fatal(err)
	}
	if p.Coil(CoilScrubber) {
		t.Fatal("the scrubber restarted by itself when the fault cleared")
	}
	if err := p.DIOWriteCoils("test", CoilScrubber, []bool{true}); err != nil {
		t.Fatal(err)
	}
	if !p.Coil(CoilScrubber) {
		t.Fatal("scrubber not on after the fault cleared and a switch-on")
	}
	if exhaust() {
		t.Fatal("exhaust_ok at once on a restarted scrubber")
	}
	p.Step(3 * time.Second)
	if !exhaust() {
		t.Fatal("exhaust_ok not back on the restarted scrubber")
	}
	if err := p.Inject(FaultScrubberTrip, "coil6"); err == nil {
		t.Fatal("scrubber-trip took a target")
	}
}
