package envelope

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"hcp-edge/device"
)

// TestAuditCarriesVersionAndReadings: every entry names the envelope's
// version; a refusal by the check carries the reading its rule named, with
// the limit, then the snapshot; a trip carries the reading that crossed.
func TestAuditCarriesVersionAndReadings(t *testing.T) {
	f := newFixture(t)
	v := f.il.Envelope().Version()
	if !strings.HasPrefix(v, "sha256:") || len(v) != len("sha256:")+16 {
		t.Fatalf("version %q", v)
	}
	f.p.furnace.ProcessValue = device.Celsius(300)
	if _, err := f.il.apply(context.Background(), "ok", SwitchAction("vent_valve", true)); !errors.Is(err, ErrViolation) {
		t.Fatalf("vent while hot: %v", err)
	}
	e := f.audit.last()
	if e.Decision != DecisionRefused || e.Envelope != v {
		t.Fatalf("refusal %+v", e)
	}
	if len(e.Readings) < 2 || e.Readings[0].Limit == nil || e.Readings[0].Channel != "switch.vent_valve" || e.Readings[0].Value != 300 || e.Readings[0].Unit != "celsius" {
		t.Fatalf("refusal readings %+v", e.Readings)
	}
	var temp *Reading
	for i := range e.Readings[1:] {
		if r := &e.Readings[1+i]; r.Channel == "furnace.temperature" && r.Limit == nil {
			temp = r
		}
	}
	if temp == nil || temp.Unit != "K" || temp.Value < 573 || temp.Value > 574 {
		t.Fatalf("snapshot's furnace temperature %+v in %+v", temp, e.Readings)
	}

	at := time.Date(2026, 12, 1, 3, 12, 0, 0, time.UTC)
	if err := f.il.Trip(context.Background(), TripEvent{Trip: TripOverTemperature, Channel: "furnace.temperature",
		Value: 1105, Limit: 1100, Unit: "celsius", Reason: "test", At: at}); err != nil {
		t.Fatal(err)
	}
	e = f.audit.last()
	if e.Decision != DecisionTripped || e.Envelope != v || len(e.Readings) != 1 {
		t.Fatalf("trip %+v", e)
	}
	if r := e.Readings[0]; r.Channel != "furnace.temperature" || r.Value != 1105 || r.Limit == nil || *r.Limit != 1100 || !r.At.Equal(at) {
		t.Fatalf("trip reading %+v", r)
	}

	// A reset refused while the condition holds names the reading too.
	f.p.furnace.ProcessValue = device.Celsius(2000)
	if err := f.il.Reset(context.Background(), "alice"); !errors.Is(err, ErrViolation) {
		t.Fatalf("reset while over temperature: %v", err)
	}
	e = f.audit.last()
	if e.Decision != DecisionRefused || e.Rule != RuleLatched || e.Envelope != v || len(e.Readings) != 1 ||
		e.Readings[0].Channel != "furnace.temperature" || e.Readings[0].Limit == nil {
		t.Fatalf("refused reset %+v", e)
	}
}

// TestVersionFollowsTheConfiguration: the same configuration names the
// same version; a changed limit another.
func TestVersionFollowsTheConfiguration(t *testing.T) {
	f := newFixture(t)
	env := f.il.Envelope()
	again, err := Compile(env.Config(), env.Spec())
	if err != nil {
		t.Fatal(err)
	}
	if again.Version() != env.Version() {
		t.Fatalf("recompiled: %s, was %s", again.Version(), env.Version())
	}
	cfg := env.Config()
	cfg.CommsTimeout *= 2
	other, err := Compile(cfg, env.Spec())
	if err != nil {
		t.Fatal(err)
	}
	if other.Version() == env.Version() {
		t.Fatalf("a changed comms_timeout keeps version %s", env.Version())
	}
}
