package serialsim

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hcp-edge/firmware-sim/plant"
)

// fakePlant is a Plant with settable state and a write log.
type fakePlant struct {
	mu       sync.Mutex
	mfcs     map[string]*plant.MFCState
	pressure float64
	layers   float64 // of MoS2
	ws2      float64 // layers of WS2
	scale    float64
	faults   map[string]bool
	spectrum plant.SpectrumFaults
	writes   []write
}

type write struct {
	device, via, channel string
	value                float64
	accepted             bool
}

func newFakePlant() *fakePlant {
	mk := func(gas string, id byte, fs float64) *plant.MFCState {
		return &plant.MFCState{Gas: gas, UnitID: id, FullScaleSCCM: fs, PressurePSIA: 14.696, TempC: 25}
	}
	return &fakePlant{
		mfcs: map[string]*plant.MFCState{
			"ar": mk("Ar", 'A', 500), "h2": mk("H2", 'B', 200), "h2s": mk("H2S", 'C', 50),
		},
		pressure: 0.834, // Pa = 8.34E-03 mbar
		scale:    300,
		faults:   map[string]bool{},
	}
}

func (p *fakePlant) MFC(gas string) (plant.MFCState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.mfcs[strings.ToLower(gas)]
	if !ok {
		return plant.MFCState{}, false
	}
	return *m, true
}

func (p *fakePlant) SetMFCSetpoint(gas string, sccm float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.mfcs[gas]
	if !ok || sccm < 0 || sccm > m.FullScaleSCCM {
		return errors.New("fake: bad setpoint")
	}
	m.SetpointSCCM = sccm
	if !m.Hold && !m.StuckOpen {
		m.FlowSCCM = sccm
	}
	return nil
}

func (p *fakePlant) SetMFCHold(gas string, hold bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.mfcs[gas]
	if !ok {
		return errors.New("fake: no such mfc")
	}
	m.Hold = hold
	switch {
	case m.StuckOpen:
	case hold:
		m.FlowSCCM = 0
	default:
		m.FlowSCCM = m.SetpointSCCM
	}
	return nil
}

func (p *fakePlant) ChamberPressure() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pressure
}

func (p *fakePlant) Film() plant.Film {
	p.mu.Lock()
	defer p.mu.Unlock()
	return plant.Film{MoS2: p.layers, WS2: p.ws2}
}

func (p *fakePlant) SimElapsed() time.Duration { return 0 }

func (p *fakePlant) TimeScale() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.scale
}

func (p *fakePlant) FaultActive(name, target string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults[name+"/"+target]
}

func (p *fakePlant) RecordWrite(device, via, channel string, value float64, accepted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = append(p.writes, write{device, via, channel, value, accepted})
}

func (p *fakePlant) setFault(name, target string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[name+"/"+target] = on
}

func (p *fakePlant) set(f func(p *fakePlant)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// takeWrites returns and clears the write log.
func (p *fakePlant) takeWrites() []write {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.writes
	p.writes = nil
	return w
}

// client is a test's end of a pty cable.
type client struct {
	t *testing.T
	f *os.File
	r *bufio.Reader
}

func dial(t *testing.T, link string) *client {
	t.Helper()
	f, err := os.OpenFile(link, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &client{t: t, f: f, r: bufio.NewReader(f)}
}

func (c *client) send(s string) {
	c.t.Helper()
	if _, err := c.f.WriteString(s); err != nil {
		c.t.Fatal(err)
	}
}

// readTo reads up to and including the byte delim (hang guard 3 s).
func (c *client) readTo(delim byte) string {
	c.t.Helper()
	_ = c.f.SetReadDeadline(time.Now().Add(3 * time.Second))
	s, err := c.r.ReadString(delim)
	if err != nil {
		c.t.Fatalf("read: %v (got %q)", err, s)
	}
	return s
}

// expectNothing checks that no byte arrives within d (a hang-up counts as
// nothing).
func (c *client) expectNothing(d time.Duration) {
	c.t.Helper()
	_ = c.f.SetReadDeadline(time.Now().Add(d))
	b, err := c.r.ReadByte()
	if err == nil {
		c.t.Fatalf("unexpected byte %q", b)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EIO) {
		c.t.Fatal(err)
	}
}

func linkIn(t *testing.T, name string) string {
	return filepath.Join(t.TempDir(), name)
}

func equalWrites(a, b []write) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (p *fakePlant) SpectrumFaults() plant.SpectrumFaults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spectrum
}
