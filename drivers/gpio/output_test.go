package gpio

import (
	"context"
	"errors"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
	"periph.io/x/conn/v3/physic"

	"hcp-edge/device"
	"hcp-edge/device/devicetest"
)

// relayPin is an output whose feedback contact follows the coil, unless stuck.
type relayPin struct {
	gpiotest.Pin
	fb       *gpiotest.Pin
	inverted bool
	stuck    *pgpio.Level // feedback level when the contact is welded
	outErr   error
}

func (r *relayPin) Out(l pgpio.Level) error {
	if r.outErr != nil {
		return r.outErr
	}
	_ = r.Pin.Out(l)
	fb := pgpio.Level(bool(l) != r.inverted)
	if r.stuck != nil {
		fb = *r.stuck
	}
	setLevel(r.fb, fb)
	return nil
}

func TestOutputSetAndState(t *testing.T) {
	tests := []struct {
		name      string
		feedback  bool
		activeLow bool
		inverted  bool
		on        bool
		wantPin   pgpio.Level
	}{
		{"feedback on", true, false, false, true, pgpio.High},
		{"feedback off", true, false, false, false, pgpio.Low},
		{"feedback inverted on", true, false, true, true, pgpio.High},
		{"feedback active-low on", true, true, false, true, pgpio.Low},
		{"self on", false, false, false, true, pgpio.High},
		{"self active-low on", false, true, false, true, pgpio.Low},
		{"self active-low off", false, true, false, false, pgpio.High},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &gpiotest.Pin{N: "relay_fb"}
			// The contact follows "on"; an inverted contact reads the opposite.
			relay := &relayPin{Pin: gpiotest.Pin{N: "relay"}, fb: fb, inverted: tt.activeLow != tt.inverted}
			opts := DefaultOutputOpts("relay")
			opts.ActiveLow, opts.FeedbackInverted, opts.Settle = tt.activeLow, tt.inverted, 0
			var fbPin pgpio.PinIn
			if tt.feedback {
				fbPin = fb
			}
			o, err := NewOutput(relay, fbPin, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			if err := o.Set(ctx, tt.on); err != nil {
				t.Fatalf("Set(%t): %v", tt.on, err)
			}
			if got := relay.Read(); got != tt.wantPin {
				t.Fatalf("pin level %v; want %v", got, tt.wantPin)
			}
			if got, err := o.State(ctx); err != nil || got != tt.on {
				t.Fatalf("State = %t, %v; want %t", got, err, tt.on)
			}
		})
	}
}

func TestOutputReadbackMismatch(t *testing.T) {
	fb := &gpiotest.Pin{N: "relay_fb"}
	low := pgpio.Low
	relay := &relayPin{Pin: gpiotest.Pin{N: "relay"}, fb: fb, stuck: &low}
	opts := DefaultOutputOpts("relay")
	opts.Settle = 0
	o, err := NewOutput(relay, fb, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if err := o.Set(ctx, true); !errors.Is(err, device.ErrReadback) {
		t.Fatalf("Set(true) with a stuck contact: %v; want ErrReadback", err)
	}
	if err := o.Halt(ctx); err != nil {
		t.Fatalf("Halt: %v", err)
	}
	high := pgpio.High
	relay.stuck = &high // welded closed: Halt cannot confirm the safe state
	if err := o.Halt(ctx); !errors.Is(err, device.ErrReadback) {
		t.Fatalf("Halt with a welded contact: %v; want ErrReadback", err)
	}
}

func TestOutputHaltAndInitialState(t *testing.T) {
	fb := &gpiotest.Pin{N: "relay_fb"}
	relay := &relayPin{Pin: gpiotest.Pin{N: "relay", L: pgpio.High}, fb: fb}
	opts := DefaultOutputOpts("relay")
	opts.Settle = 0
	o, err := NewOutput(relay, fb, opts)
	if err != nil {
		t.Fatal(err)
	}
	if relay.Read() != pgpio.Low {
		t.Fatal("NewOutput did not drive the safe (Low) level")
	}
	ctx := testCtx(t)
	if err := o.Set(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := o.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	if relay.Read() != pgpio.Low || o.SafeState() {
		t.Fatal("Halt did not de-energise the relay")
	}
	if o.String() != "relay" {
		t.Fatalf("String = %q", o.String())
	}
}

func TestOutputSettle(t *testing.T) {
	clk := devicetest.NewFakeClock(time.Unix(0, 0))
	fb := &gpiotest.Pin{N: "relay_fb"}
	out := &gpiotest.Pin{N: "relay"} // the contact does not move by itself
	opts := DefaultOutputOpts("relay")
	opts.Clock, opts.Settle = clk, 20*time.Millisecond
	o, err := NewOutput(out, fb, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	done := make(chan error, 1)
	go func() { done <- o.Set(ctx, true) }()
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	setLevel(fb, pgpio.High) // the contact closes within the settle time
	clk.Advance(20 * time.Millisecond)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Set: %v", err)
		}
	case <-time.After(hang):
		t.Fatal("Set did not return after the settle time")
	}
}

func TestOutputErrors(t *testing.T) {
	t.Run("context done", func(t *testing.T) {
		fb := &gpiotest.Pin{N: "relay_fb"}
		o, err := NewOutput(&relayPin{Pin: gpiotest.Pin{N: "relay"}, fb: fb}, fb, DefaultOutputOpts("relay"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := o.Set(ctx, true); !errors.Is(err, device.ErrTimeout) {
			t.Fatalf("Set: %v; want ErrTimeout", err)
		}
	})
	t.Run("write fails", func(t *testing.T) {
		fb := &gpiotest.Pin{N: "relay_fb"}
		boom := errors.New("boom")
		_, err := NewOutput(&relayPin{Pin: gpiotest.Pin{N: "relay"}, fb: fb, outErr: boom}, fb, DefaultOutputOpts("relay"))
		if !errors.Is(err, boom) {
			t.Fatalf("NewOutput: %v; want the write error", err)
		}
	})
	t.Run("no read-back", func(t *testing.T) {
		if _, err := NewOutput(outOnly{pgpio.INVALID}, nil, DefaultOutputOpts("relay")); err == nil {
			t.Fatal("NewOutput without any read-back succeeded")
		}
	})
	t.Run("nil pin", func(t *testing.T) {
		if _, err := NewOutput(nil, nil, DefaultOutputOpts("relay")); err == nil {
			t.Fatal("NewOutput(nil) succeeded")
		}
	})
}

// outOnly hides the PinIn half of a pin.
type outOnly struct{ p pgpio.PinIO }

func (o outOnly) String() string                         { return o.p.String() }
func (o outOnly) Halt() error                            { return nil }
func (o outOnly) Name() string                           { return o.p.Name() }
func (o outOnly) Number() int                            { return o.p.Number() }
func (o outOnly) Function() string                       { return "" }
func (o outOnly) Out(l pgpio.Level) error                { return nil }
func (o outOnly) PWM(pgpio.Duty, physic.Frequency) error { return nil }

// TestOutputConfirmsOnceStable: a read-back that follows the write is
// confirmed once it has agreed for Stable (2 ms), not after the whole
// Settle (20 ms); a contact that bounces back starts the Stable period
// again. The e-stop's relay halt waited the full 20 ms before (issue 25).
func TestOutputConfirmsOnceStable(t *testing.T) {
	clk := devicetest.NewFakeClock(time.Unix(0, 0))
	fb := &gpiotest.Pin{N: "relay_fb"}
	opts := DefaultOutputOpts("relay")
	opts.Clock = clk
	o, err := NewOutput(&gpiotest.Pin{N: "relay"}, fb, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	done := make(chan error, 1)
	start := clk.Now()
	go func() { done <- o.Set(ctx, true) }()
	step := func(level pgpio.Level) {
		t.Helper()
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		setLevel(fb, level)
		clk.Advance(SettlePoll)
	}
	step(pgpio.High) // closes: agrees from the next read
	step(pgpio.Low)  // bounces open: not yet
	step(pgpio.High)
	step(pgpio.High)
	step(pgpio.High)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Set: %v", err)
		}
	case <-time.After(hang):
		t.Fatal("Set did not confirm a read-back that agreed for Stable")
	}
	if took := clk.Since(start); took >= opts.Settle || took < opts.Stable {
		t.Fatalf("confirmed after %v; want at least Stable %v and under Settle %v", took, opts.Stable, opts.Settle)
	}
}
