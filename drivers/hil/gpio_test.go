package hil

import (
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"

	"hcp-edge/drivers/gpio"
	"hcp-edge/drivers/simgpio"
)

// TestGPIOOverControlSocket drives the rig's virtual GPIO through drivers/gpio
// on drivers/simgpio pins, i.e. across the control socket as the agent does
// from another process: e-stop and leak edges delivered as events on inject
// and clear, and the interlock relay with read-back through relay_fb.
func TestGPIOOverControlSocket(t *testing.T) {
	s := startRig(t, 300)
	ctx := ctxFor(t)
	c := s.gpioClient()

	for _, in := range []struct{ pin, fault string }{{simgpio.EStop, "estop"}, {simgpio.Leak, "gas-leak"}} {
		t.Run(in.pin, func(t *testing.T) {
			o := gpio.DefaultInputOpts(in.pin)
			o.Wait = 200 * time.Millisecond
			o.ReadTimeout = 2 * time.Second
			input, err := gpio.NewInput(c.Pin(in.pin), o)
			if err != nil {
				t.Fatal(err)
			}
			if err := input.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer input.Close()
			events, cancel := input.Subscribe()
			defer cancel()
			if active, err := input.Read(ctx); err != nil || active {
				t.Fatalf("%s at rest: active=%v, %v", in.pin, active, err)
			}
			wait := func(want bool) time.Duration {
				t.Helper()
				t0 := time.Now()
				for {
					select {
					case ev := <-events:
						if ev.Err != nil {
							t.Fatalf("%s event error: %v", in.pin, ev.Err)
						}
						if ev.Active == want {
							return time.Since(t0)
						}
					case <-ctx.Done():
						t.Fatalf("%s: no event active=%v", in.pin, want)
					}
				}
			}
			if err := s.ctl.Inject(ctx, in.fault, ""); err != nil {
				t.Fatal(err)
			}
			dOn := wait(true)
			if active, err := input.Read(ctx); err != nil || !active {
				t.Fatalf("%s after inject: active=%v, %v", in.pin, active, err)
			}
			if lvl, _ := s.p.GPIOLevel(in.pin); lvl {
				t.Fatalf("simulator %s level High while %s is injected (want Low, active-low)", in.pin, in.fault)
			}
			if err := s.ctl.Clear(ctx, in.fault, ""); err != nil {
				t.Fatal(err)
			}
			dOff := wait(false)
			t.Logf("%s: edge on inject after %v, on clear after %v", in.pin, dOn, dOff)
		})
	}

	t.Run("relay", func(t *testing.T) {
		r := s.relay(c)
		if r.SafeState() {
			t.Fatal("relay safe state is energised")
		}
		m := s.mark()
		if err := r.Set(ctx, true); err != nil {
			t.Fatal(err)
		}
		if on, err := r.State(ctx); err != nil || !on {
			t.Fatalf("relay state %v, %v", on, err)
		}
		if lvl, err := c.Level(ctx, simgpio.RelayFB); err != nil || lvl != pgpio.High {
			t.Fatalf("relay_fb %v, %v", lvl, err)
		}
		if !s.p.Relay() {
			t.Fatal("simulator relay not energised")
		}
		if err := r.Halt(ctx); err != nil {
			t.Fatal(err)
		}
		if on, err := r.State(ctx); err != nil || on || s.p.Relay() {
			t.Fatalf("after Halt: state %v, %v, simulator %v", on, err, s.p.Relay())
		}
		s.expectWrites(m, []w{{"gpio", "gpio", "relay", 1, true}, {"gpio", "gpio", "relay", 0, true}})
		// An input cannot be driven: the simulator refuses and logs it.
		m = s.mark()
		if err := c.SetLevel(ctx, simgpio.EStop, pgpio.High); err == nil {
			t.Fatal("driving the estop input succeeded")
		}
		s.expectWrites(m, []w{{"gpio", "gpio", "estop", 1, false}})
	})
}
