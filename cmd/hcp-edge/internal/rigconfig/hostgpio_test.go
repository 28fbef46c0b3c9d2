package rigconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/gpio/gpiotest"
	"periph.io/x/host/v3"

	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/rigbuild"
	"hcp-edge/drivers/simgpio"
)

// hangGuard bounds the waits for the input watchers: a guard against
// hangs, never a performance assertion.
const hangGuard = 10 * time.Second

// hostYAML replaces the simulator's GPIO line of sim.yaml, and its time
// scale with a real rig's.
func hostYAML(t *testing.T, pins string) File {
	t.Helper()
	const sim, scale = `gpio: {source: sim, socket: "${sim_dir}/control.sock"}`, "  time_scale: 300 "
	base := string(configs.SimYAML)
	if !strings.Contains(base, sim) || !strings.Contains(base, scale) {
		t.Fatalf("fixture: %q or %q not in sim.yaml", sim, scale)
	}
	base = strings.Replace(base, scale, "  time_scale: 1 ", 1)
	f, err := Parse(strings.NewReader(strings.Replace(base, sim, "gpio: {source: host, "+pins+"}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestHostInit: periph's host drivers initialise on this machine, or fail
// cleanly; a second Init returns the same state.
func TestHostInit(t *testing.T) {
	s1, err := host.Init()
	if err != nil {
		t.Fatalf("host.Init: %v", err)
	}
	s2, err := host.Init()
	if err != nil || s1 != s2 {
		t.Fatalf("second host.Init: %v (state %p, first %p)", err, s2, s1)
	}
	for _, d := range s1.Loaded {
		t.Logf("loaded: %s", d)
	}
	for _, d := range append(s1.Skipped, s1.Failed...) {
		t.Logf("not loaded: %s", d)
	}
	t.Logf("%d GPIO pins registered", len(gpioreg.All()))
}

// TestHostGPIOUnknownPin: pins this host does not have fail the build with
// one typed error per key, naming the key and the pin; StartInputs, Relay
// and Rig refuse with it.
func TestHostGPIOUnknownPin(t *testing.T) {
	f := hostYAML(t, "estop_pin: HCPNOPE17, leak_pin: HCPNOPE27, relay_pin: HCPNOPE22, relay_feedback_pin: HCPNOPE23")
	in := BuildPartial(f.Rig)
	defer in.Close()
	if in.GPIO != nil || in.HostGPIO() {
		t.Fatal("gpio lines built from pins that do not exist")
	}
	err := in.Unreachable["gpio"]
	var pe *rigbuild.PinError
	if !errors.As(err, &pe) || !errors.Is(err, rigbuild.ErrNoSuchPin) {
		t.Fatalf("Unreachable[gpio] = %v, want a *rigbuild.PinError wrapping rigbuild.ErrNoSuchPin", err)
	}
	msg := err.Error()
	t.Logf("%s", msg)
	for key, pin := range map[string]string{"gpio.estop_pin": "HCPNOPE17", "gpio.leak_pin": "HCPNOPE27",
		"gpio.relay_pin": "HCPNOPE22", "gpio.relay_feedback_pin": "HCPNOPE23"} {
		re := regexp.MustCompile(regexp.QuoteMeta(key+": "+pin+": no such pin on this host (periph found ") + `\d+ pins`)
		if !re.MatchString(msg) {
			t.Errorf("the error does not say %s: %s: no such pin on this host (periph found N pins...):\n%s", key, pin, msg)
		}
	}
	if err := in.StartInputs(context.Background()); !errors.Is(err, rigbuild.ErrNoSuchPin) || !strings.Contains(err.Error(), "gpio.estop_pin") {
		t.Fatalf("StartInputs: %v", err)
	}
	if _, err := in.Relay(); !errors.Is(err, rigbuild.ErrNoSuchPin) || !strings.Contains(err.Error(), "gpio.relay_pin") {
		t.Fatalf("Relay: %v", err)
	}
	if _, err := InterlockRig(in); err == nil {
		t.Fatal("Rig without gpio lines")
	}
	if _, err := Build(f.Rig); !errors.Is(err, rigbuild.ErrNoSuchPin) {
		t.Fatalf("Build: %v, want rigbuild.ErrNoSuchPin among its errors", err)
	}
}

// TestPinErrorMessage: the found pins are named (at most 8), else the
// drivers that did not load.
func TestPinErrorMessage(t *testing.T) {
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("GPIO%d", i))
	}
	for _, tt := range []struct {
		e    rigbuild.PinError
		want string
	}{
		{rigbuild.PinError{Key: "gpio.leak_pin", Pin: "GPIO99", Found: many},
			"gpio.leak_pin: GPIO99: no such pin on this host (periph found 12 pins: GPIO0, GPIO1, GPIO2, GPIO3, GPIO4, GPIO5, GPIO6, GPIO7, …)"},
		{rigbuild.PinError{Key: "gpio.estop_pin", Pin: "GPIO17", Drivers: []string{"ioctl-gpio: no GPIO chips found"}},
			"gpio.estop_pin: GPIO17: no such pin on this host (periph found 0 pins; GPIO drivers not loaded: ioctl-gpio: no GPIO chips found)"},
		{rigbuild.PinError{Key: "gpio.relay_pin", Pin: "GPIO5", Found: many[:2]},
			"gpio.relay_pin: GPIO5: no such pin on this host (periph found 2 pins: GPIO0, GPIO1)"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

// recPin is a periph test pin that records how it is configured.
type recPin struct {
	*gpiotest.Pin
	mu  sync.Mutex
	ins []string // "pull edge" of every In
}

func (p *recPin) In(pull pgpio.Pull, edge pgpio.Edge) error {
	p.mu.Lock()
	p.ins = append(p.ins, pull.String()+" "+edge.String())
	p.mu.Unlock()
	return p.Pin.In(pull, edge)
}

func (p *recPin) configured() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ins...)
}

// registerPins registers periph test pins under names of this test in
// gpioreg, where host pins are found; edges says which take edge
// detection.
func registerPins(t *testing.T, edges map[string]bool) map[string]*recPin {
	t.Helper()
	out := map[string]*recPin{}
	for _, line := range []string{simgpio.EStop, simgpio.Leak, simgpio.Relay, simgpio.RelayFB} {
		p := &recPin{Pin: &gpiotest.Pin{N: "HCPTEST-" + t.Name() + "-" + line, Num: -1}}
		if edges[line] {
			p.EdgesChan = make(chan pgpio.Level, 4)
		}
		if err := gpioreg.Register(p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = gpioreg.Unregister(p.N) })
		out[line] = p
	}
	return out
}

func pinsYAML(pins map[string]*recPin) string {
	return fmt.Sprintf("estop_pin: %s, leak_pin: %s, relay_pin: %s, relay_feedback_pin: %s",
		pins[simgpio.EStop].N, pins[simgpio.Leak].N, pins[simgpio.Relay].N, pins[simgpio.RelayFB].N)
}

// waitRead polls in.Read until it reports want (hang guard).
func waitRead(t *testing.T, name string, read func(context.Context) (bool, error), want bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		got, err := read(context.Background())
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never read %t (last %t, %v)", name, want, got, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHostGPIOLines: the host path over pins found in gpioreg (periph's
// test pins stand in for a Raspberry Pi's): the relay driven safe when
// built, its read-back from the feedback pin; the e-stop and leak inputs
// active low and pulled down (a broken wire reads pressed and leaking),
// relay_fb pulled up (a broken wire never confirms a halt),
// debounced, with edges (e-stop) or polled (leak, no edge detection);
// relay_fb configured once for both its users, with its edges kept.
func TestHostGPIOLines(t *testing.T) {
	for _, relayFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("relay_first=%t", relayFirst), func(t *testing.T) {
			pins := registerPins(t, map[string]bool{simgpio.EStop: true, simgpio.RelayFB: true})
			_ = pins[simgpio.Relay].Out(pgpio.High) // energised before the agent starts
			in := BuildPartial(hostYAML(t, pinsYAML(pins)).Rig)
			defer in.Close()
			if err := in.Unreachable["gpio"]; err != nil || !in.HostGPIO() || in.GPIO != nil {
				t.Fatalf("host gpio: %v", err)
			}
			relay := func() {
				t.Helper()
				out, err := in.Relay()
				if err != nil {
					t.Fatal(err)
				}
				if l := pins[simgpio.Relay].Read(); l != pgpio.Low {
					t.Fatalf("relay pin %s after Relay, want Low (de-energised)", l)
				}
				if out2, _ := in.Relay(); out2 != out {
					t.Fatal("Relay built a second output")
				}
			}
			if relayFirst {
				relay()
			}
			if err := in.StartInputs(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !relayFirst {
				relay()
			}
			for line, want := range map[string][]string{
				simgpio.EStop:   {"PullDown BothEdges"},
				simgpio.Leak:    {"PullDown BothEdges", "PullDown NoEdge"}, // no edge detection: polled
				simgpio.RelayFB: {"PullUp BothEdges"},                      // once, whoever came first
				simgpio.Relay:   nil,
			} {
				if got := pins[line].configured(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s configured %q, want %q", line, got, want)
				}
			}

			// Pulled down, nothing wired: e-stop pressed, leak detected.
			waitRead(t, "estop", in.EStop.Read, true)
			waitRead(t, "leak", in.Leak.Read, true)
			// The e-stop's contact closes (High): released; opens again: pressed.
			pins[simgpio.EStop].EdgesChan <- pgpio.High
			waitRead(t, "estop", in.EStop.Read, false)
			pins[simgpio.EStop].EdgesChan <- pgpio.Low
			waitRead(t, "estop", in.EStop.Read, true)
			_ = pins[simgpio.Leak].Out(pgpio.High)
			waitRead(t, "leak", in.Leak.Read, false)

			// The relay reads back from relay_fb (active high), not from its
			// own pin. Pulled up, a broken feedback wire reads energised: a
			// halt is never falsely confirmed.
			ctx := context.Background()
			waitRead(t, "relay_fb", in.RelayFB.Read, true)
			if err := in.RelayOut.Halt(ctx); !errors.Is(err, device.ErrReadback) {
				t.Fatalf("Halt with relay_fb unwired (pulled up): %v, want ErrReadback", err)
			}
			pins[simgpio.RelayFB].EdgesChan <- pgpio.Low
			waitRead(t, "relay_fb", in.RelayFB.Read, false)
			if err := in.RelayOut.Halt(ctx); err != nil {
				t.Fatalf("Halt with relay_fb Low: %v", err)
			}
			if err := in.RelayOut.Set(ctx, true); !errors.Is(err, device.ErrReadback) {
				t.Fatalf("Set(true) with relay_fb stuck Low: %v, want ErrReadback", err)
			}
			pins[simgpio.RelayFB].EdgesChan <- pgpio.High
			waitRead(t, "relay_fb", in.RelayFB.Read, true)
			if err := in.RelayOut.Set(ctx, true); err != nil {
				t.Fatalf("Set(true) with relay_fb High: %v", err)
			}
			if l := pins[simgpio.Relay].Read(); l != pgpio.High {
				t.Fatalf("relay pin %s after Set(true)", l)
			}
			if _, err := InterlockRig(in); err == nil {
				t.Fatal("Rig without the serial instruments") // the rest of the rig is not here
			}
		})
	}
}

// TestSimGPIOSourceUnchanged: without source host no periph host driver is
// involved: the simulator's client is built (its socket is only dialled on
// use).
func TestSimGPIOSourceUnchanged(t *testing.T) {
	f, err := Parse(bytes.NewReader(configs.SimYAML))
	if err != nil {
		t.Fatal(err)
	}
	in := BuildPartial(f.Rig)
	defer in.Close()
	if in.HostGPIO() {
		t.Fatal("host gpio built for source sim")
	}
	if err := in.Unreachable["gpio"]; err != nil || in.GPIO == nil {
		t.Fatalf("sim gpio: %v", err)
	}
	p, err := in.GPIOPin(simgpio.RelayFB)
	if err != nil || p.Name() != simgpio.RelayFB {
		t.Fatalf("sim relay_fb pin: %v %v", p, err)
	}
}
