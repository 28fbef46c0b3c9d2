package token

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/device"
	"hcp-edge/device/catalog"
	"hcp-edge/device/devicetest"
	"hcp-edge/envelope"
	"hcp-edge/internal/wallclock"
)

// entries is an envelope.Auditor keeping entries in memory.
type entries struct {
	mu  sync.Mutex
	all []envelope.Entry
}

func (a *entries) Record(_ context.Context, e envelope.Entry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.all = append(a.all, e)
	return nil
}

// of returns the decisions recorded for channel, in order.
func (a *entries) of(channel string) []envelope.Entry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []envelope.Entry
	for _, e := range a.all {
		if e.Action != nil && e.Action.Channel() == channel {
			out = append(out, e)
		}
	}
	return out
}

// fakeRig is the simulated rig's spec on devicetest fakes: chamber pumped,
// door closed, exhaust ok, scrubber on, every gas off.
func fakeRig() (envelope.Rig, map[string]*devicetest.FakeFlow) {
	spec := simrig.Spec()
	rig := envelope.Rig{Furnace: devicetest.NewFakeFurnace("furnace"), Flows: map[string]device.FlowController{},
		Switches: map[string]device.Switch{}, Inputs: map[string]device.DigitalInput{},
		Spectrometer: devicetest.NewFakeSpectrometer("raman")}
	g := devicetest.NewFakeGauge("gauge")
	g.SetReading(0.05*device.Millibar, device.GaugeOK)
	rig.Gauge = g
	flows := map[string]*devicetest.FakeFlow{}
	for _, gs := range spec.Gases {
		f := devicetest.NewFakeFlow("mfc-"+gs.Gas, gs.Gas, gs.FullScale)
		flows[gs.Gas] = f
		rig.Flows[gs.Gas] = f
	}
	for _, s := range spec.Switches {
		sw := devicetest.NewFakeSwitch(s.Name, s.SafeState)
		if s.Name == "scrubber" {
			_ = sw.Set(context.Background(), true)
		}
		rig.Switches[s.Name] = sw
	}
	for _, in := range spec.Inputs {
		rig.Inputs[in] = devicetest.NewFakeInput(in, in == "door_closed" || in == "exhaust_ok")
	}
	return rig, flows
}

// TestTowardSafeNeedsNoScope: through the real Authorizer, the tool
// pipeline (Invoker.Act) and the Interlock, a
// token granting only rig.read cannot open a gas valve or set a flow above
// zero (refused for scope, nothing written), but closes the valves, zeroes
// the flows and turns the heater off; every decision is audited, the safe
// ones marked toward_safe. A token that is not authentic moves nothing,
// not even toward safe.
func TestTowardSafeNeedsNoScope(t *testing.T) {
	env := testEnvelope(t, nil)
	a := newAuthority(t, newKey(t), &clock{now: time.Now()})
	a.opts.Clock = wallclock.New()
	rev := NewRevocations(nil)
	z, err := NewAuthorizer(a, env, rev)
	if err != nil {
		t.Fatal(err)
	}
	rig, flows := fakeRig()
	audit := &entries{}
	il, err := envelope.NewInterlock(env, rig, z, audit, envelope.DefaultInterlockOpts())
	if err != nil {
		t.Fatal(err)
	}
	tools, err := catalog.Builtin(simrig.Spec().Lines())
	if err != nil {
		t.Fatal(err)
	}
	iv, err := envelope.NewInvoker(il, tools, envelope.InvokerOpts{}) // the only path to the interlock
	if err != nil {
		t.Fatal(err)
	}
	c := baseClaims(z.Digest(), catalog.PermissionRead)
	c.Capability = "leak-check"
	reader, _, err := a.Issue(c, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other := newAuthority(t, newKey(t), &clock{now: time.Now()})
	other.opts.Clock = wallclock.New()
	forged, _, err := other.Issue(c, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		name   string
		tok    string
		action envelope.Action
		want   error // nil: executed
	}{
		{"open the H2S valve", reader, envelope.SwitchAction("h2s_valve", true), ErrScope},
		{"H2S flow above zero", reader, envelope.FlowAction("H2S", device.SCCM(2)), ErrScope},
		{"H2 flow above zero", reader, envelope.FlowAction("H2", device.SCCM(10)), ErrScope},
		{"heater on", reader, envelope.HeaterAction(true), ErrScope},
		{"pump on", reader, envelope.SwitchAction("pump", true), ErrScope},
		{"scrubber off", reader, envelope.SwitchAction("scrubber", false), ErrScope},
		{"H2S flow to zero", reader, envelope.FlowAction("H2S", 0), nil},
		{"H2S valve closed", reader, envelope.SwitchAction("h2s_valve", false), nil},
		{"H2 flow to zero", reader, envelope.FlowAction("H2", 0), nil},
		{"H2 valve closed", reader, envelope.SwitchAction("h2_valve", false), nil},
		{"heater off", reader, envelope.HeaterAction(false), nil},
		{"scrubber on (its safe level)", reader, envelope.SwitchAction("scrubber", true), nil},
		{"vent valve closed", reader, envelope.SwitchAction("vent_valve", false), nil},
		{"forged token closing a valve", forged, envelope.SwitchAction("h2_valve", false), ErrSignature},
		{"no token zeroing a flow", "", envelope.FlowAction("Ar", 0), ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := tt.action.Channel()
			before := len(audit.of(ch))
			sets := flows["H2S"].Count("SetFlow") + flows["H2"].Count("SetFlow")
			_, err := iv.Act(ctx, tt.tok, tt.action)
			got := audit.of(ch)[before:]
			if tt.want != nil {
				if !errors.Is(err, envelope.ErrUnauthorized) || !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want ErrUnauthorized and %v", err, tt.want)
				}
				if len(got) != 1 || got[0].Decision != envelope.DecisionRefused || got[0].TowardSafe {
					t.Fatalf("audit %+v, want one refusal", got)
				}
				if n := flows["H2S"].Count("SetFlow") + flows["H2"].Count("SetFlow"); n != sets {
					t.Fatalf("a refused action reached an MFC")
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if len(got) != 2 || got[0].Decision != envelope.DecisionAccepted || got[1].Decision != envelope.DecisionExecuted ||
				!got[0].TowardSafe || !got[1].TowardSafe || got[0].SessionID != "s-1" {
				t.Fatalf("audit %+v, want accepted and executed toward safe for s-1", got)
			}
		})
	}
	// The same token still cannot open anything once the gases are off.
	if _, err := iv.Act(ctx, reader, envelope.SwitchAction("h2s_valve", true)); !errors.Is(err, ErrScope) {
		t.Fatalf("open after close: %v", err)
	}
	// A revoked session closes nothing either: revocation is not scope.
	rev.Revoke("s-1", time.Now().Add(time.Hour))
	if _, err := iv.Act(ctx, reader, envelope.FlowAction("H2S", 0)); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked: %v", err)
	}
}
