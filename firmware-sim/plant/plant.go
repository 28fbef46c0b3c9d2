package plant

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Physical constants and model parameters.
const (
	AmbientC        = 25.0     // ambient temperature, °C
	AtmospherePa    = 101325.0 // atmospheric pressure, Pa
	maxSubstep      = 0.1      // s of sim time per physics substep
	furnaceGainC    = 1275.0   // °C above ambient at 100 % output, steady state
	furnaceTauS     = 900.0    // work-zone time constant, s
	elementTauS     = 40.0     // heater-element lag, s
	chamberVolumeM3 = 0.05     // 50 L
	pumpSpeedM3s    = 5e-3     // 5 L/s roughing pump
	pumpUltimatePa  = 0.5      // ultimate pressure of the pump
	leakPam3s       = 2.5e-3   // chamber leak rate at vacuum, Pa·m³/s
	ventCondM3s     = 5e-3     // vent valve conductance
	vacLossCondM3s  = 2e-3     // vacuum-loss fault conductance
	maxPressurePa   = 130000.0 // relief valve
	sccmToPam3s     = 101325e-6 / 60
	mfcTauS         = 0.5 // MFC response time constant, s
	scrubberDelayS  = 2.0 // exhaust OK after the scrubber ran this long, s sim
	stuckOpenFactor = 1.2 // stuck-open flow as a fraction of full scale
)

// Opts configures a Plant.
type Opts struct {
	// TimeScale is sim seconds per wall second (default 300).
	TimeScale float64
	// Tick is the wall-clock period of the physics goroutine (default 10 ms).
	Tick time.Duration
	// Now is the wall clock (default time.Now); tests inject a fake one.
	Now func() time.Time
	// Seed seeds the sensor noise (0: fixed default seed).
	Seed uint64
	// RelayEnergised starts with the interlock relay energised (default false:
	// de-energised, as a relay without power).
	RelayEnergised bool
	// RelayWatchdog is the timeout of the relay watchdog module between the
	// GPIO header and the relay's coil (relaywatchdog.go): with it > 0 the
	// coil drops when no edge is seen on the heartbeat pin for that long,
	// wall clock. 0, the default, fits no watchdog; negative is refused.
	RelayWatchdog time.Duration
	// MaxWrites bounds the write log (default 100000).
	MaxWrites int
	// Precursor is what the precursor boat holds at start: MoO3 (the
	// default, "" too) grows MoS2, WO3 grows WS2. SetPrecursor changes it.
	Precursor Precursor
	// FurnaceModel is the controller on unit 1 ("" is FurnaceSim).
	FurnaceModel FurnaceModel
	// DIOModel is the digital I/O module on unit 2 ("" is DIOSim).
	DIOModel DIOModel
	// Rig is the rig simulated ("" is RigMoS2; rigs.go).
	Rig Rig
	// Eurotherm is the front-panel configuration of the eurotherm3200
	// model (nil: DefaultEurothermConfig).
	Eurotherm *EurothermConfig
}

// DefaultOpts returns the defaults of configs/rig-protocols.md.
func DefaultOpts() Opts {
	return Opts{TimeScale: 300, Tick: 10 * time.Millisecond, Now: time.Now, Seed: 1, MaxWrites: 100000, Precursor: MoO3}
}

// Gas indices.
const (
	gasAr = iota
	gasH2
	gasH2S
	numGases
)

type mfc struct {
	MFCState
	flowTrue float64
}

// Plant is the simulated rig. All methods are safe for concurrent use.
type Plant struct {
	opts Opts
	now  func() time.Time

	gasKeys   [numGases]string // the rig's gas keys, lower case
	coilNames [NumCoils]string // the rig's coil names
	start     time.Time

	simNanos atomic.Int64 // sim time since start, mirrored for lock-free readers

	mu  sync.Mutex
	rng *rand.Rand
	sim float64 // sim seconds since start

	// furnace: the thermal zone of unit 1 (the growth zone of a two-zone
	// rig); its controller's state of the eurotherm3200 model is its euro
	thermalZone
	setpoint    int16  // 0.1 °C
	rampRate    uint16 // 0.1 °C/min
	heaterOn    bool   // HR 2
	wdTimeoutMs uint16
	wdKick      uint16
	alarmLimit  int16 // 0.1 °C
	lastKick    time.Time
	wdChecked   time.Time    // the last watchdog check that found it within its timeout
	wdTrip      WatchdogTrip // the last expiry
	wdExpired   bool

	// chamber
	pressurePa float64

	// digital I/O
	coils        [NumCoils]bool
	scrubberFrom float64 // sim time the scrubber was switched on

	// gases
	mfcs [numGases]mfc

	// growth
	graphene   grapheneGrowth // the graphene rig's foil
	precursor  Precursor      // what the precursor boat holds
	film       Film           // layers grown per material
	h2sExposed float64        // sccm·s of H2S into the chamber, for the status

	// the two-zone rig's sulfur zone and its sources (twozone.go)
	sulfur thermalZone
	solid  solidSources

	// digital output 7 of the adam6052 model (not wired to the plant)
	adamDO7 bool

	// gpio
	relay    bool // the relay's coil: energised (heater and valve power permitted)
	relayOut bool // the relay output as the agent last wrote it
	rwd      relayWatchdog
	pins     [numPins]*Pin

	// faults
	faults map[faultKey]time.Time

	log writeLog

	closedCh  chan struct{}
	closeOnce sync.Once

	// running: the physics loop runs, so readers of the chamber pressure
	// bring it up to their own instant first (catchUpLocked); wallAt is the
	// wall instant the physics has reached.
	running bool
	wallAt  time.Time

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

// New builds a plant in its power-on state: furnace cold with the defaults of
// the register map, chamber at atmosphere, all coils off, no gas.
func New(opts Opts) (*Plant, error) {
	d := DefaultOpts()
	if opts.TimeScale <= 0 || math.IsNaN(opts.TimeScale) || math.IsInf(opts.TimeScale, 0) {
		opts.TimeScale = d.TimeScale
	}
	if opts.Tick <= 0 {
		opts.Tick = d.Tick
	}
	if opts.Now == nil {
		opts.Now = d.Now
	}
	if opts.Seed == 0 {
		opts.Seed = d.Seed
	}
	if opts.MaxWrites <= 0 {
		opts.MaxWrites = d.MaxWrites
	}
	if opts.Precursor == "" {
		opts.Precursor = d.Precursor
	}
	if _, err := opts.Precursor.Material(); err != nil {
		return nil, err
	}
	euroCfg := DefaultEurothermConfig()
	if opts.Eurotherm != nil {
		euroCfg = *opts.Eurotherm
	}
	if err := euroCfg.Validate(); err != nil {
		return nil, err
	}
	var err error
	if opts.FurnaceModel, err = ParseFurnaceModel(string(opts.FurnaceModel)); err != nil {
		return nil, err
	}
	if opts.DIOModel, err = ParseDIOModel(string(opts.DIOModel)); err != nil {
		return nil, err
	}
	if opts.Rig, err = ParseRig(string(opts.Rig)); err != nil {
		return nil, err
	}
	if opts.Rig == RigMoS2TwoZone && opts.FurnaceModel != FurnaceEurotherm3200 {
		return nil, fmt.Errorf("%w: the %s rig's zones are on Eurotherm 3200s (furnace model %s), not %s",
			ErrUnknownModel, opts.Rig, FurnaceEurotherm3200, opts.FurnaceModel)
	}
	if opts.RelayWatchdog < 0 {
		return nil, fmt.Errorf("%w: relay watchdog %v < 0", ErrIllegalValue, opts.RelayWatchdog)
	}
	p := &Plant{
		opts:        opts,
		now:         opts.Now,
		rng:         rand.New(rand.NewPCG(opts.Seed, 0x6863702d726967)),
		thermalZone: newThermalZone("furnace", euroCfg),
		setpoint:    250,
		wdTimeoutMs: 5000,
		alarmLimit:  12500,
		pressurePa:  AtmospherePa,
		relay:       opts.RelayEnergised,
		relayOut:    opts.RelayEnergised,
		precursor:   opts.Precursor,
		faults:      map[faultKey]time.Time{},
	}
	if opts.Rig == RigMoS2TwoZone {
		p.thermalZone.dev = "furnace-growth"
		p.sulfur = newThermalZone("furnace-sulfur", euroCfg)
		p.sulfur.fault = zoneNames[0]
	}
	p.start = p.now()
	p.lastKick = p.start
	p.rwd = relayWatchdog{timeout: opts.RelayWatchdog, lastEdge: p.start}
	p.log.max = opts.MaxWrites
	p.coilNames = coilNames
	for i, m := range rigGases[opts.Rig] {
		p.mfcs[i].MFCState = m
		p.gasKeys[i] = strings.ToLower(m.Gas)
	}
	switch opts.Rig {
	case RigGraphene:
		p.coilNames[CoilH2SValve] = "ch4_valve"
	case RigMoS2TwoZone: // one gas line: the second and third valves' outputs are wired to nothing
		p.coilNames[CoilH2Valve], p.coilNames[CoilH2SValve] = "spare3", "spare4"
	}
	for i := range p.mfcs {
		p.mfcs[i].PressurePSIA = 14.70
		p.mfcs[i].TempC = AmbientC
	}
	p.initPins()
	return p, nil
}

// Start runs the physics in a goroutine owned by the plant until Close.
// Calling it twice is a no-op.
func (p *Plant) Start() error {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.done != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.loop(ctx)
	}()
	return nil
}

// Run steps the physics until ctx is done, then returns ctx.Err(). Use either
// Run or Start/Close, not both.
func (p *Plant) Run(ctx context.Context) error {
	p.loop(ctx)
	return ctx.Err()
}

// Close stops the physics goroutine started by Start and waits for it. Pins
// blocked in WaitForEdge are woken. The state stays readable.
func (p *Plant) Close() error {
	p.runMu.Lock()
	p.closed = true
	cancel, done := p.cancel, p.done
	p.runMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	p.closeOnce.Do(func() { close(p.closedCh) })
	return nil
}

func (p *Plant) loop(ctx context.Context) {
	t := time.NewTicker(p.opts.Tick)
	defer t.Stop()
	p.mu.Lock()
	p.running, p.wallAt = true, p.now()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running = false
		p.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		p.catchUpLocked()
		p.mu.Unlock()
	}
}

// catchUpLocked advances the physics from wallAt to now. The loop calls it
// every tick; a reader calls it too, so that what it reads is the state at
// the instant of the read, not at the last tick (on a loaded machine the
// loop's goroutine can wait many ticks, and at a time scale of 600 a 10 ms
// wait is 6 s of sim time).
func (p *Plant) catchUpLocked() {
	n := p.now()
	wall := n.Sub(p.wallAt)
	if wall <= 0 {
		return
	}
	p.wallAt = n
	if wall > 2*time.Second { // a suspended process does not make a huge step
		wall = 2 * time.Second
	}
	p.advanceLocked(wall.Seconds() * p.opts.TimeScale)
}

// Step advances the physics by d of sim time (for tests and for callers that
// drive the plant themselves), in substeps of at most 0.1 s.
func (p *Plant) Step(d time.Duration) {
	p.advance(d.Seconds())
}

func (p *Plant) advance(simS float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceLocked(simS)
}

func (p *Plant) advanceLocked(simS float64) {
	p.relayWatchdogLocked() // a relay due to drop powers no step of this advance
	for simS > 1e-12 {
		h := math.Min(simS, maxSubstep)
		p.checkWatchdogLocked()
		p.stepLocked(h)
		simS -= h
	}
	p.checkWatchdogLocked()
	p.updatePinsLocked()
}

// stepLocked advances every model by h seconds of sim time.
func (p *Plant) stepLocked(h float64) {
	p.sim += h
	p.simNanos.Store(int64(p.sim * 1e9))
	p.stepFurnaceLocked(h)
	p.stepGasesLocked(h)
	p.stepChamberLocked(h)
	p.stepGrowthLocked(h)
}

// relaxExact integrates dx/dt = (eq - x)/tau exactly over h.
func relaxExact(x, eq, tau, h float64) float64 {
	return eq + (x-eq)*math.Exp(-h/tau)
}

func (p *Plant) stepGasesLocked(h float64) {
	for i := range p.mfcs {
		m := &p.mfcs[i]
		m.StuckOpen = p.faultActiveLocked(FaultMFCStuckOpen, p.gasKeys[i])
		target := m.SetpointSCCM
		switch {
		case m.StuckOpen:
			target = stuckOpenFactor * m.FullScaleSCCM
		case m.Hold:
			target = 0
		}
		m.flowTrue = relaxExact(m.flowTrue, target, mfcTauS, h)
	}
}

// valveOpenLocked: a line valve passes gas only when its coil is on and the
// relay powers it.
func (p *Plant) valveOpenLocked(gas int) bool {
	return p.relay && p.coils[CoilArValve+gas]
}

// chamberInflowSCCMLocked is the gas flow reaching the chamber per gas.
func (p *Plant) chamberInflowSCCMLocked(gas int) float64 {
	if !p.valveOpenLocked(gas) {
		return 0
	}
	return math.Max(0, p.mfcs[gas].flowTrue)
}

func (p *Plant) stepChamberLocked(h float64) {
	var gas float64
	for i := range p.mfcs {
		gas += p.chamberInflowSCCMLocked(i)
	}
	// V dP/dt = a - b P
	a := gas*sccmToPam3s + leakPam3s
	b := leakPam3s / AtmospherePa
	if p.coils[CoilVent] {
		a += ventCondM3s * AtmospherePa
		b += ventCondM3s
	}
	if c := p.chamberLeakLocked(); c > 0 {
		a += c * AtmospherePa
		b += c
	}
	if p.faultActiveLocked(FaultVacuumLoss, "") {
		a += vacLossCondM3s * AtmospherePa
		b += vacLossCondM3s
	}
	if p.pumpingLocked() && p.pressurePa > pumpUltimatePa {
		a += pumpSpeedM3s * pumpUltimatePa
		b += pumpSpeedM3s
	}
	eq := a / b
	p.pressurePa = relaxExact(p.pressurePa, eq, chamberVolumeM3/b, h)
	if p.pressurePa > maxPressurePa {
		p.pressurePa = maxPressurePa
	}
	if p.pressurePa < 0 {
		p.pressurePa = 0
	}
}

func (p *Plant) pumpingLocked() bool {
	return p.coils[CoilPump] && p.coils[CoilGateValve]
}
