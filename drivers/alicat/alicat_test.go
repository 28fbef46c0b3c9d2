package alicat_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hcp-edge/configs"
	"hcp-edge/device"
	"hcp-edge/drivers/alicat"
	"hcp-edge/drivers/profile"
	"hcp-edge/drivers/serialline"
	"hcp-edge/drivers/serialline/serialtest"
)

// fakeMFC is a scripted controller written from the protocol document: unit
// C, H2S, 50 sccm full scale.
type fakeMFC struct {
	mu       sync.Mutex
	setpoint float64
	held     bool
	flags    string // extra flags appended verbatim
	override func(req string) (string, bool)
	got      []string
}

func (f *fakeMFC) frame() string {
	flow := f.setpoint
	if f.held {
		flow = 0
	}
	s := fmt.Sprintf("C +014.70 +025.00 %+07.2f %+07.2f %+07.2f H2S", flow, flow, f.setpoint)
	if f.held {
		s += " HLD"
	}
	return s + f.flags
}

func (f *fakeMFC) handle(req []byte) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := string(req)
	f.got = append(f.got, r)
	if f.override != nil {
		if reply, ok := f.override(r); ok {
			if reply == "" {
				return nil
			}
			return []byte(reply + "\r")
		}
	}
	if !strings.HasPrefix(r, "C") {
		return nil
	}
	cmd := r[1:]
	switch {
	case cmd == "":
	case cmd == "HC":
		f.held = true
	case cmd == "C":
		f.held = false
	case cmd == "VE":
		return []byte("C 10v05.0-R24\r")
	case strings.HasPrefix(cmd, "S"):
		v, err := strconv.ParseFloat(strings.TrimSpace(cmd[1:]), 64)
		if err != nil || v < 0 || v > 50 || math.IsNaN(v) {
			return []byte("C ?\r")
		}
		f.setpoint = v
	default:
		return []byte("C ?\r")
	}
	return []byte(f.frame() + "\r")
}

func (f *fakeMFC) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func (f *fakeMFC) set(fn func(f *fakeMFC)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// simProfile is the simulator's shipped profile (configs/profiles/hcp-sim-mfc.yaml),
// which these fakes follow.
var simProfile = func() *profile.Profile {
	p, err := profile.Parse("hcp-sim-mfc.yaml", configs.Profiles()["profiles/hcp-sim-mfc.yaml"])
	if err != nil {
		panic(err)
	}
	return p
}()

func opts() alicat.Opts {
	o := alicat.DefaultOpts()
	o.Profile = simProfile
	o.Name = "mfc-h2s"
	o.UnitID = 'C'
	o.Gas = "H2S"
	o.FullScale = device.SCCM(50)
	// o.Timeout stays the shipped 500 ms: 200 ms measured the machine's load.
	return o
}

func setup(t *testing.T) (*alicat.MFC, *fakeMFC, *serialtest.Peer) {
	t.Helper()
	f := &fakeMFC{}
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn([]byte("\r")), f.handle)
	m, err := alicat.Open(p.Path(), opts())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, f, p
}

func TestReadFlow(t *testing.T) {
	m, f, _ := setup(t)
	f.set(func(f *fakeMFC) { f.setpoint = 12.5 })
	st, err := m.ReadFlow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Gas != "H2S" || st.Flow.SCCM() != 12.5 || st.Setpoint.SCCM() != 12.5 || len(st.Flags) != 0 {
		t.Fatalf("status %+v", st)
	}
	if math.Abs(st.Pressure.Pascal()-14.70*6894.757293168361) > 1e-6 || math.Abs(st.Temperature.Celsius()-25) > 1e-9 {
		t.Fatalf("pressure %v temperature %v", st.Pressure, st.Temperature)
	}
	if st.At.IsZero() || m.String() != "mfc-h2s" || m.FullScale() != device.SCCM(50) {
		t.Fatalf("At %v name %q fs %v", st.At, m, m.FullScale())
	}
	if got := f.requests(); len(got) != 1 || got[0] != "C" {
		t.Fatalf("requests %q", got)
	}
}

func TestSetFlow(t *testing.T) {
	tests := []struct {
		name    string
		flow    device.Flow
		want    error
		wantReq string
	}{
		{"mid", device.SCCM(25.5), nil, "CS25.50"},
		{"zero", device.SCCM(0), nil, "CS0.00"},
		{"full scale", device.SCCM(50), nil, "CS50.00"},
		{"rounded", device.SCCM(12.345), nil, "CS12.35"},
		{"negative", device.SCCM(-1), device.ErrOutOfRange, ""},
		{"above full scale", device.SCCM(50.01), device.ErrOutOfRange, ""},
		{"NaN", device.Flow(math.NaN()), device.ErrOutOfRange, ""},
		{"Inf", device.Flow(math.Inf(1)), device.ErrOutOfRange, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, f, _ := setup(t)
			err := m.SetFlow(context.Background(), tc.flow)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			got := f.requests()
			if tc.wantReq == "" {
				if len(got) != 0 {
					t.Fatalf("sent %q for a refused value", got)
				}
				return
			}
			if len(got) != 1 || got[0] != tc.wantReq {
				t.Fatalf("requests %q, want %q", got, tc.wantReq)
			}
		})
	}
}

func TestErrorReplies(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  error
	}{
		{"rejected", "C ?", device.ErrRejected},
		{"wrong readback", "C +014.70 +025.00 +000.00 +000.00 +020.00 H2S", device.ErrReadback},
		{"other unit", "A +014.70 +025.00 +000.00 +000.00 +010.00 H2S", device.ErrFrame},
		{"wrong gas", "C +014.70 +025.00 +000.00 +000.00 +010.00 Ar", device.ErrFrame},
		{"not a status code", "C +014.70 +025.00 +000.00 +000.00 +010.00 H2S xyz", device.ErrFrame},
		{"flipped digit", "C +014.70 +025.00 +000.00 +0x0.00 +010.00 H2S", device.ErrFrame},
		{"missing field", "C +014.70 +025.00 +000.00 +010.00 H2S", device.ErrFrame},
		{"garbage", "\x00\xff#!", device.ErrFrame},
		{"silence", "", device.ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, f, _ := setup(t)
			f.set(func(f *fakeMFC) {
				f.override = func(string) (string, bool) { return tc.reply, true }
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			err := m.SetFlow(ctx, device.SCCM(10))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "mfc-h2s:") {
				t.Fatalf("error %q does not name the instrument", err)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatal("did not honour the exchange timeout")
			}
			if tc.want != device.ErrRejected && tc.want != device.ErrReadback {
				if _, err := m.ReadFlow(ctx); !errors.Is(err, tc.want) {
					t.Fatalf("ReadFlow err = %v, want %v", err, tc.want)
				}
			}
		})
	}
}

func TestFlags(t *testing.T) {
	m, f, _ := setup(t)
	f.set(func(f *fakeMFC) { f.flags = " MOV OVR" })
	st, err := m.ReadFlow(context.Background())
	if err != nil || strings.Join(st.Flags, ",") != "MOV,OVR" {
		t.Fatalf("flags %q, %v", st.Flags, err)
	}
}

func TestHalt(t *testing.T) {
	m, f, _ := setup(t)
	ctx := context.Background()
	if err := m.SetFlow(ctx, device.SCCM(20)); err != nil {
		t.Fatal(err)
	}
	if err := m.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := m.ReadFlow(ctx)
	if err != nil || st.Setpoint != 0 || st.Flow != 0 || strings.Join(st.Flags, ",") != "HLD" {
		t.Fatalf("after halt %+v, %v", st, err)
	}
	if err := m.Halt(ctx); err != nil {
		t.Fatalf("second halt: %v", err)
	}
	// Setting a flow after a halt resumes control.
	if err := m.SetFlow(ctx, device.SCCM(5)); err != nil {
		t.Fatal(err)
	}
	want := []string{"CS20.00", "CHC", "CS0.00", "C", "CHC", "CS0.00", "CS5.00", "CC"}
	if got := f.requests(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("requests %q, want %q", got, want)
	}
}

func TestHaltNotConfirmed(t *testing.T) {
	m, f, _ := setup(t)
	// A controller that ignores the hold (stuck open) must not look halted.
	f.set(func(f *fakeMFC) {
		f.override = func(req string) (string, bool) {
			if req == "CHC" {
				return "C +014.70 +025.00 +060.00 +060.00 +000.00 H2S MOV", true
			}
			return "", false
		}
	})
	err := m.Halt(context.Background())
	if !errors.Is(err, device.ErrReadback) {
		t.Fatalf("err = %v, want ErrReadback", err)
	}
	// The frame without HLD is checked by a poll (the fake still shows no
	// hold), and the setpoint is zeroed all the same.
	if got := f.requests(); strings.Join(got, ",") != "CHC,C,CS0.00" {
		t.Fatalf("halt did not poll and still zero the setpoint: %q", got)
	}
}

func TestHaltSilent(t *testing.T) {
	m, f, _ := setup(t)
	f.set(func(f *fakeMFC) { f.override = func(string) (string, bool) { return "", true } })
	err := m.Halt(context.Background())
	if !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

func TestRecovery(t *testing.T) {
	m, f, p := setup(t)
	ctx := context.Background()
	f.set(func(f *fakeMFC) { f.override = func(string) (string, bool) { return "", true } })
	if _, err := m.ReadFlow(ctx); !errors.Is(err, device.ErrTimeout) {
		t.Fatalf("silent: %v", err)
	}
	// A late reply from the silent period must not be taken for the next one.
	p.Write([]byte("C +014.70 +025.00 +099.00 +099.00 +099.00 H2S\r"))
	f.set(func(f *fakeMFC) { f.override = nil; f.setpoint = 1 })
	st, err := m.ReadFlow(ctx)
	if err != nil || st.Setpoint.SCCM() != 1 {
		t.Fatalf("after recovery: %+v, %v", st, err)
	}
	// The cable is unplugged and plugged again.
	p.Replace()
	var lastErr error
	for range 5 {
		if _, lastErr = m.ReadFlow(ctx); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("after replug: %v", lastErr)
	}
}

func TestVersion(t *testing.T) {
	m, _, _ := setup(t)
	v, err := m.Version(context.Background())
	if err != nil || v != "10v05.0-R24" {
		t.Fatalf("version %q, %v", v, err)
	}
}

func TestPlayback(t *testing.T) {
	// Recorded against the scripted controller, replayed byte for byte.
	rec := []serialtest.Exchange{
		{Req: "C", Reply: "C +014.70 +025.00 -000.12 -000.12 +000.00 H2S\r"},
		{Req: "CS5.00", Reply: "C +014.70 +025.00 +004.98 +004.98 +005.00 H2S\r"},
		{Req: "CHC", Reply: "C +014.70 +025.00 +000.00 +000.00 +005.00 H2S HLD\r"},
		{Req: "CS0.00", Reply: "C +014.70 +025.00 +000.00 +000.00 +000.00 H2S HLD\r"},
	}
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn([]byte("\r")), serialtest.NewScript(t, rec).Handler)
	m, err := alicat.Open(p.Path(), opts())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	st, err := m.ReadFlow(ctx)
	if err != nil || st.Flow.SCCM() != -0.12 {
		t.Fatalf("poll %+v, %v", st, err)
	}
	if err := m.SetFlow(ctx, device.SCCM(5)); err != nil {
		t.Fatal(err)
	}
	if err := m.Halt(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestNewValidates(t *testing.T) {
	p := serialtest.NewPeer(t)
	bad := []struct {
		name string
		edit func(o *alicat.Opts)
	}{
		{"lower-case id", func(o *alicat.Opts) { o.UnitID = 'a' }},
		{"no gas", func(o *alicat.Opts) { o.Gas = "" }},
		{"zero full scale", func(o *alicat.Opts) { o.FullScale = 0 }},
		{"NaN full scale", func(o *alicat.Opts) { o.FullScale = device.Flow(math.NaN()) }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			o := opts()
			tc.edit(&o)
			if m, err := alicat.Open(p.Path(), o); err == nil {
				m.Close()
				t.Fatal("accepted")
			}
		})
	}
}

var numberRE = regexp.MustCompile(`^[+-]?[0-9]+\.[0-9]+$`)

var codeRE = regexp.MustCompile(`^[A-Z0-9]{3}$`)

func FuzzParseFrame(f *testing.F) {
	model, err := alicat.NewModel(simProfile)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"A +014.70 +025.00 +050.00 +050.00 +050.00 Ar",
		"A +014.70 +025.00 +000.00 +000.00 +050.00 Ar HLD",
		"A +014.70 +025.00 +600.00 +600.00 +1000.00 Ar MOV OVR",
		"A -000.12 +025.00 +000.00 +000.00 +050.00 Ar",
		"A ?",
		"B +014.70 +025.00 +050.00 +050.00 +050.00 Ar",
		"A +014.70 +025.00 +050.00 +050.00 +050.00 H2",
		"A +1e+002 +025.00 +050.00 +050.00 +050.00 Ar",
		"A +0x1.p3 +025.00 +050.00 +050.00 +050.00 Ar",
		"A  +014.70 +025.00 +050.00 +050.00 +050.00 Ar",
		"A +014.62 +021.89 +000.00 +000.00 +078.95     Ar P2O COM GTA",
		"A +014.52 +021.50 +0000.1 +0000.2 0116.3      Ar",
		"A +014.62 +021.89 +000.00 +000.00 +078.95 +0001234.5     Ar",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := model.ParseFrame(b, 'A', "Ar")
		if err != nil {
			if !errors.Is(err, device.ErrFrame) && !errors.Is(err, device.ErrRejected) {
				t.Fatalf("error %v wraps neither ErrFrame nor ErrRejected", err)
			}
			return
		}
		// An accepted frame is exactly: A, five well-formed numbers (an
		// optional sign), a sixth for a totalizer, Ar, status codes of
		// three capital letters or digits, fields separated by runs of
		// spaces; every value is the decimal value of its field.
		fields := strings.Fields(string(b))
		gas := 6
		if fr.HasTotal {
			gas = 7
		}
		if len(fields) < gas+1 || fields[0] != "A" || fields[gas] != "Ar" {
			t.Fatalf("accepted %q", b)
		}
		if strings.ContainsAny(string(b), "\t\r\n") {
			t.Fatalf("accepted a control character in %q", b)
		}
		vals := []float64{fr.Pressure, fr.Temperature, fr.VolFlow, fr.MassFlow, fr.Setpoint}
		for i, v := range vals {
			if !numberRE.MatchString(fields[1+i]) {
				t.Fatalf("accepted field %q in %q", fields[1+i], b)
			}
			want, _ := strconv.ParseFloat(fields[1+i], 64)
			if v != want || !device.Finite(v) {
				t.Fatalf("field %q parsed as %v", fields[1+i], v)
			}
		}
		for _, fl := range fields[gas+1:] {
			if !codeRE.MatchString(fl) {
				t.Fatalf("accepted flag %q", fl)
			}
		}
	})
}

// TestHaltChecksAFrameWithoutHLDByPolling: a reply to the hold without HLD
// (a late poll frame, say) is checked by a fresh poll; only a controller
// that still shows no hold fails the halt.
func TestHaltChecksAFrameWithoutHLDByPolling(t *testing.T) {
	noHLD := "C +014.70 +025.00 +000.00 +000.00 +005.00 H2S\r"
	held := "C +014.70 +025.00 +000.00 +000.00 +005.00 H2S HLD\r"
	for _, tc := range []struct {
		name  string
		poll  string
		fails bool
	}{{"held after all", held, false}, {"not held", noHLD, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := []serialtest.Exchange{
				{Req: "CHC", Reply: noHLD},
				{Req: "C", Reply: tc.poll},
				{Req: "CS0.00", Reply: "C +014.70 +025.00 +000.00 +000.00 +000.00 H2S HLD\r"},
			}
			p := serialtest.NewPeer(t)
			p.Serve(serialtest.SplitOn([]byte("\r")), serialtest.NewScript(t, rec).Handler)
			m, err := alicat.Open(p.Path(), opts())
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			err = m.Halt(context.Background())
			if tc.fails != (err != nil) || (err != nil && !errors.Is(err, device.ErrReadback)) {
				t.Fatalf("halt: %v (want failure %v)", err, tc.fails)
			}
		})
	}
}

// TestTripGoesBeforeQueuedPollsOnASharedLine: two controllers, A (Ar) and C
// (H2S), share one RS-485 line. While A's poll is on the line, A's next poll
// and C's poll wait; then a trip halts both (urgent, as the interlock's halts
// are). Once the poll on the line ends, the halts' four exchanges (hold
// closed, setpoint 0, of each) go before both waiting polls, which follow in
// their order of arrival. With the line's sync.Mutex before the lane, the
// polls could go first, each up to the exchange timeout on a silent line.
func TestTripGoesBeforeQueuedPollsOnASharedLine(t *testing.T) {
	p := serialtest.NewPeer(t)
	lo := serialline.DefaultOpts()
	lo.Mode.BaudRate = 19200
	lo.Settle = true // as alicat.Open sets it
	line, err := serialline.Open(p.Path(), lo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { line.Close() })
	newMFC := func(id byte, gas string, fs float64) *alicat.MFC {
		o := alicat.DefaultOpts()
		o.Profile = simProfile
		o.Name, o.UnitID, o.Gas, o.FullScale = "mfc-"+strings.ToLower(gas), id, gas, device.SCCM(fs)
		// The waits in the queue count against each exchange's time;
		// the test holds the first poll on the line for a while.
		o.Timeout = 5 * time.Second
		m, err := alicat.New(line, o)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ar, h2s := newMFC('A', "Ar", 500), newMFC('C', "H2S", 50)

	onLine, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // a failed test must not leave the first poll on the line
	var mu sync.Mutex
	var order []string
	held := map[byte]bool{}
	setpoint := map[byte]float64{'A': 100, 'C': 5}
	gas := map[byte]string{'A': "Ar", 'C': "H2S"}
	halts := 0
	p.Serve(serialtest.SplitOn([]byte("\r")), func(req []byte) []byte {
		r := string(req)
		mu.Lock()
		first := len(order) == 0
		order = append(order, r)
		id, cmd := r[0], r[1:]
		switch {
		case cmd == "HC":
			held[id] = true
		case strings.HasPrefix(cmd, "S"):
			setpoint[id], _ = strconv.ParseFloat(cmd[1:], 64)
		}
		if cmd != "" {
			halts++
		}
		flow, s := setpoint[id], ""
		if held[id] {
			flow, s = 0, " HLD"
		}
		reply := fmt.Sprintf("%c +014.70 +025.00 %+07.2f %+07.2f %+07.2f %s%s\r", id, flow, flow, setpoint[id], gas[id], s)
		last := halts == 4
		mu.Unlock()
		if first {
			close(onLine)
			<-release
		}
		// On the rig a reply takes ~25 ms on the wire at 19200 baud, and a
		// halt's next exchange is waiting long before it ends; over a pty
		// the reply is at once, so each halt exchange but the last waits
		// here until the next is queued.
		if cmd != "" && !last {
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if u, _ := line.Waiting(); u > 0 {
					break
				}
			}
		}
		return []byte(reply)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	queued := func(urgent, routine int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			u, r := line.Waiting()
			if u == urgent && r == routine {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting: %d urgent, %d routine; want %d, %d", u, r, urgent, routine)
			}
		}
	}
	poll := func(m *alicat.MFC) func() error {
		return func() error { _, err := m.ReadFlow(ctx); return err }
	}
	run("poll A", poll(ar))
	<-onLine
	run("poll A again", poll(ar))
	queued(0, 1)
	run("poll C", poll(h2s))
	queued(0, 2)
	trip := device.WithUrgent(ctx) // as envelope's halt marks it
	run("halt A", func() error { return ar.Halt(trip) })
	queued(1, 2)
	run("halt C", func() error { return h2s.Halt(trip) })
	queued(2, 2)
	unblock()
	wg.Wait()
	want := []string{"A", "AHC", "CHC", "AS0.00", "CS0.00", "A", "C"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("requests %q, want %q", order, want)
	}
}

// TestReadingOutsideProfileRange: a column outside the profile's range (a
// line pressure of 500 psia, a flow of twice full scale) is a fault of the
// controller, device.ErrSensor, never a reading; so is a status code the
// profile says means sensor_fault.
func TestReadingOutsideProfileRange(t *testing.T) {
	m, f, _ := setup(t)
	for _, frame := range []string{
		"C +500.00 +025.00 +010.00 +010.00 +010.00 H2S",
		"C +014.70 +025.00 +100.00 +100.00 +010.00 H2S MOV",
		"C +014.70 +099.00 +010.00 +010.00 +010.00 H2S",
	} {
		f.set(func(f *fakeMFC) { f.override = func(string) (string, bool) { return frame, true } })
		if st, err := m.ReadFlow(context.Background()); !errors.Is(err, device.ErrSensor) {
			t.Errorf("%s: %+v, %v; want ErrSensor", frame, st, err)
		}
	}
	// The stuck-open valve of the simulator (1.2 × full scale, MOV) is a reading.
	f.set(func(f *fakeMFC) {
		f.override = func(string) (string, bool) { return "C +014.70 +025.00 +060.00 +060.00 +000.00 H2S MOV", true }
	})
	if st, err := m.ReadFlow(context.Background()); err != nil || st.Flow.SCCM() != 60 {
		t.Errorf("stuck open: %+v, %v", st, err)
	}
	p := *simProfile
	p.StatusCodes = map[string]string{"HLD": "valve_held", "ADC": "sensor_fault"}
	model, err := alicat.NewModel(&p)
	if err != nil {
		t.Fatal(err)
	}
	if fr, err := model.ParseFrame([]byte("C +014.70 +025.00 +010.00 +010.00 +010.00 H2S ADC"), 'C', "H2S"); err != nil || len(fr.Flags) != 1 {
		t.Fatalf("%+v, %v", fr, err)
	}
	o := opts()
	o.Profile = &p
	f.set(func(f *fakeMFC) {
		f.override = func(string) (string, bool) { return "C +014.70 +025.00 +010.00 +010.00 +010.00 H2S ADC", true }
	})
	line, err := alicat.Open(f2path(t, f), o)
	if err != nil {
		t.Fatal(err)
	}
	defer line.Close()
	if _, err := line.ReadFlow(context.Background()); !errors.Is(err, device.ErrSensor) {
		t.Errorf("ADC: %v, want ErrSensor", err)
	}
}

// f2path serves f on a new pty and returns its path.
func f2path(t *testing.T, f *fakeMFC) string {
	p := serialtest.NewPeer(t)
	p.Serve(serialtest.SplitOn([]byte("\r")), f.handle)
	return p.Path()
}

// TestFullScaleOutsideProfile: a full scale the model is not made in is
// refused at New, before anything is sent; so is a missing profile.
func TestFullScaleOutsideProfile(t *testing.T) {
	p := serialtest.NewPeer(t)
	for _, edit := range []func(*alicat.Opts){
		func(o *alicat.Opts) { o.FullScale = device.SLM(20) },
		func(o *alicat.Opts) { o.Profile = nil },
	} {
		o := opts()
		edit(&o)
		if m, err := alicat.Open(p.Path(), o); err == nil {
			m.Close()
			t.Errorf("accepted %+v", o)
		}
	}
}
