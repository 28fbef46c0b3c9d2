package envelope

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"hcp-edge/device"
	"hcp-edge/device/rig"
)

// MonitorOpts tunes a Monitor.
type MonitorOpts struct {
	FurnaceEvery time.Duration    // furnace poll period, default 50 ms (20 Hz)
	OtherEvery   time.Duration    // gauge, flows, switches, inputs, default 100 ms (10 Hz)
	KickEvery    time.Duration    // furnace comms-watchdog kick period, default 1 s; 0 disables
	Clock        func() time.Time // the interlock's clock if nil
	Logger       *slog.Logger     // the interlock's logger if nil
	// OnPoll, when set, observes every instrument read of the pollers (for
	// metrics): the poller's name ("furnace", "gauge", "flow.<gas>",
	// "switch.<name>", "input.<name>"), how long the read took (wall clock,
	// monotonic: not Clock) and its error (a gauge's sensor status is not
	// one). A bank's read (device.LevelBank) is observed once for each
	// member it read, by the member's name, with the bank read's duration
	// and error. It runs on the poller's goroutine right after the read, so it
	// must be quick, must not block and must not call the Monitor; the
	// monitor allocates nothing to call it. A read cut short by Close is not
	// reported. nil: nothing is measured.
	OnPoll func(name string, took time.Duration, err error)
}

// MonitorMinProcs is the GOMAXPROCS an agent running a Monitor should have
// at least. It was 4 when the serial drivers blocked an OS thread, and the
// P it held, in select(2) (go.bug.st/serial's Read) for up to their poll
// period: with only two Ps on a 2-core host, the runtime took up to ~20 ms to
// hand a P back, and the furnace poll and the trip procedure waited that long
// (measured then: trip latency p99 62 ms with 2 Ps, 43 ms with 4, poll
// period 50 ms). The ASCII serial drivers' reads now wait in the netpoller
// (drivers/serialline.Port), and only the Modbus RTU transport still blocks
// a thread, one per bus at a time: two Ps leave one free for the monitor
// while it does. Every P above the host's cores only cost the idle agent
// wake-ups (an idle P is woken to spin at every goroutine made ready): on
// the 2-core development VM 2 Ps instead of 4 measured the same trip
// latency, 5 alternating runs each, and ~10 % less idle CPU
// (docs/FOOTPRINT.md, "Fourth round"). cmd/hcp-edge raises GOMAXPROCS to
// this unless GOMAXPROCS is set in the environment; a host with more cores
// keeps one P per core.
const MonitorMinProcs = 2

// DefaultMonitorOpts returns the defaults: the furnace at 20 Hz, everything
// else at 10 Hz, the furnace watchdog kicked every second.
func DefaultMonitorOpts() MonitorOpts {
	return MonitorOpts{FurnaceEvery: 50 * time.Millisecond, OtherEvery: 100 * time.Millisecond, KickEvery: time.Second}
}

// MonitorStatus is what the monitor knows now.
type MonitorStatus struct {
	Readings    Readings
	Latched     bool
	LatchReason string
	Trips       []TripEvent     // trips since start, newest last (bounded)
	Margins     []Margin        // for each limited channel with a reading
	Healthy     map[string]bool // instrument name -> read within its comms timeout
}

// maxTripHistory bounds MonitorStatus.Trips.
const maxTripHistory = 64

// reassertEvery bounds how often the monitor halts again while a trip
// condition persists and an output it halted reads unsafe.
const reassertEvery = 500 * time.Millisecond

// Monitor polls the interlock's rig, caches the newest readings, evaluates
// the trip conditions after every update and runs the emergency procedure
// (Interlock.Trip) once per onset. It kicks the furnace's comms watchdog.
// Start launches its goroutines; Close stops them and waits.
type Monitor struct {
	il   *Interlock
	env  *Envelope
	opts MonitorOpts
	log  *slog.Logger
	// evalMu serialises evaluations: each poller evaluates after its own
	// update, on its own goroutine, and the evaluator after a silence.
	evalMu sync.Mutex
	// silence fires when no evaluation has run for FurnaceEvery (set by Start).
	silence *time.Timer

	mu        sync.Mutex // guards the fields below
	r         Readings   // cache; r.At unused
	lastOK    map[string]time.Time
	names     []string // instruments polled, sorted
	startedAt time.Time
	active    map[string]TripEvent // conditions that held at the last evaluation, by trip kind
	// scratch is the evaluator's copy of the cache, its maps reused from one
	// evaluation to the next (evaluate runs about 190 times a second; cloning
	// the maps each time was half of the idle daemon's garbage). Only
	// evaluate uses it, under evalMu (and under mu while it is filled).
	scratch  Readings
	trips    []TripEvent
	subs     map[chan TripEvent]struct{}
	reassert map[Procedure]time.Time // last re-assertion started (wall clock)
	running  map[Procedure]bool      // a re-assertion or trip in flight
	started  bool
	closed   bool
	// unread counts the pollers without a successful read yet; ready is
	// closed when it reaches zero (WaitFirstReadings).
	unread int
	ready  chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewMonitor returns a monitor of il's rig. It polls nothing until Start.
func NewMonitor(il *Interlock, opts MonitorOpts) (*Monitor, error) {
	if il == nil {
		return nil, errors.New("envelope: NewMonitor needs an interlock")
	}
	def := DefaultMonitorOpts()
	if opts.FurnaceEvery <= 0 {
		opts.FurnaceEvery = def.FurnaceEvery
	}
	if opts.OtherEvery <= 0 {
		opts.OtherEvery = def.OtherEvery
	}
	if opts.KickEvery < 0 {
		return nil, fmt.Errorf("envelope: monitor: negative watchdog kick period %v", opts.KickEvery)
	}
	ct := il.env.CommsTimeout()
	if opts.FurnaceEvery >= ct || opts.OtherEvery >= ct {
		return nil, fmt.Errorf("envelope: monitor: poll periods %v and %v must be shorter than the comms timeout %v",
			opts.FurnaceEvery, opts.OtherEvery, ct)
	}
	if opts.Clock == nil {
		opts.Clock = il.opts.Clock
	}
	if opts.Logger == nil {
		opts.Logger = il.log
	}
	m := &Monitor{il: il, env: il.env, opts: opts, log: opts.Logger,
		r:       Readings{Flows: map[string]device.FlowStatus{}, Switches: map[string]Level{}, Inputs: map[string]Level{}},
		scratch: Readings{Flows: map[string]device.FlowStatus{}, Switches: map[string]Level{}, Inputs: map[string]Level{}},
		lastOK:  map[string]time.Time{}, active: map[string]TripEvent{}, subs: map[chan TripEvent]struct{}{},
		reassert: map[Procedure]time.Time{}, running: map[Procedure]bool{}}
	for _, z := range il.env.zones[min(1, len(il.env.zones)):] { // the zones after the first: Readings.Zones
		if m.r.Zones == nil {
			m.r.Zones = map[string]device.FurnaceStatus{}
		}
		m.r.Zones[z.name] = device.FurnaceStatus{}
	}
	for _, p := range m.pollers() {
		m.names = append(m.names, p.healthNames()...)
	}
	il.mu.Lock()
	il.observe = m.merge
	il.mu.Unlock()
	il.setPollPeriods(opts.FurnaceEvery, opts.OtherEvery)
	sort.Strings(m.names)
	m.unread, m.ready = len(m.names), make(chan struct{})
	if m.unread == 0 {
		close(m.ready)
	}
	return m, nil
}

// WaitFirstReadings blocks until every instrument the monitor polls has
// been read successfully once since Start, or ctx ends (its error is
// returned). Whoever judges the rig from the monitor's cache right after
// start — session recovery — waits for it first: a channel not read yet
// is not a lost one. Bound ctx by the envelope's comms timeout: past it, a
// channel never read is a comms loss indeed.
func (m *Monitor) WaitFirstReadings(ctx context.Context) error {
	select {
	case <-m.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("envelope: monitor: first readings: %w", ctx.Err())
	}
}

// Start launches the monitor's goroutines: one poller per instrument or
// bank of them (each read bounded by the interlock's ReadTimeout, so a silent
// instrument stalls only its own poller; each evaluates the trips after its
// update), the evaluator for silences and the watchdog kicker. They run
// until ctx ends or Close. Start may be called once.
func (m *Monitor) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("envelope: monitor: %w", device.ErrClosed)
	}
	if m.started {
		return errors.New("envelope: monitor already started")
	}
	m.started = true
	m.startedAt = m.opts.Clock()
	m.silence = time.NewTimer(m.opts.FurnaceEvery)
	ctx, m.cancel = context.WithCancel(ctx)
	// Phase the pollers: the furnace keeps phase 0, and every other poller
	// shares one phase, half a furnace period later. Waking from idle is what
	// an idle agent pays for, not the exchanges (~0.3 ms of CPU per wake-up
	// on the development VM, ~60 µs per exchange when they come together:
	// docs/FOOTPRINT.md, "Third round"), so the others come in one burst per
	// OtherEvery instead of one wake-up each; the burst lands midway between
	// two furnace polls, so it never delays one. (The first version spread
	// the others evenly over their period; before that, started together
	// with the furnace, a burst of a dozen reads whose serial reads each held
	// a thread in select(2) landed on every other furnace poll and delayed it
	// by up to 20 ms on a 2-core host. The serial reads now wait in the
	// netpoller, and the DIO banks are one exchange each.)
	ps := m.pollers()
	for _, p := range ps {
		var phase time.Duration
		if !p.zone {
			phase = m.opts.FurnaceEvery / 2
		}
		m.wg.Add(1)
		go m.poll(ctx, p, phase)
	}
	m.wg.Add(1)
	go m.evaluator(ctx)
	if m.opts.KickEvery > 0 {
		m.wg.Add(1)
		go m.kicker(ctx)
	}
	return nil
}

// Close stops the monitor's goroutines and waits for them (a trip procedure
// in flight is let finish), then closes every subscription.
func (m *Monitor) Close() error {
	m.mu.Lock()
	m.closed = true
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
	m.mu.Lock()
	for ch := range m.subs {
		delete(m.subs, ch)
		close(ch)
	}
	m.mu.Unlock()
	return nil
}

// poll reads p every p.every, the first time after phase.
func (m *Monitor) poll(ctx context.Context, p poller, phase time.Duration) {
	defer m.wg.Done()
	if phase > 0 {
		first := time.NewTimer(phase)
		select {
		case <-ctx.Done():
			first.Stop()
			return
		case <-first.C:
		}
	}
	t := time.NewTicker(p.every)
	defer t.Stop()
	first := true
	for {
		rctx, cancel := context.WithTimeout(ctx, m.il.opts.ReadTimeout)
		var t0 time.Time
		if m.opts.OnPoll != nil {
			t0 = time.Now()
		}
		// A successful read vouches for the instrument as of when it was
		// asked, not when the answer came: a read in flight when the
		// instrument fell silent must not keep it healthy past its
		// readings' age (TestMonitorCommsLoss under load).
		asked := m.opts.Clock()
		err := p.read(rctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if m.opts.OnPoll != nil {
			took := time.Since(t0)
			for _, name := range p.healthNames() {
				m.opts.OnPoll(name, took, err)
			}
		}
		if err != nil {
			m.log.Debug("monitor read failed", "instrument", p.name, "err", err)
		} else {
			m.mu.Lock()
			for _, name := range p.healthNames() {
				if asked.After(m.lastOK[name]) {
					m.lastOK[name] = asked
				}
			}
			if first {
				first = false
				if m.unread -= len(p.healthNames()); m.unread == 0 {
					close(m.ready)
				}
			}
			m.mu.Unlock()
			// Judge the update here, on this goroutine: waking an evaluator
			// goroutine after each of ~110 polls a second cost a goroutine
			// switch (often a futex) each (docs/FOOTPRINT.md).
			if m.evaluateNow(ctx) {
				// This read started a trip. A read that overran its period
				// (a loaded host: the reading that finds a trip is often a
				// slow one) leaves a tick waiting, and reading again at once
				// put this poller's next exchanges on the line before the
				// procedure's halts, which start on goroutines of their own:
				// the heater-off write waited behind the furnace's next two
				// transactions (28 ms, docs/SAFETY.md). The next read waits
				// for the next tick instead.
				select {
				case <-t.C:
				default:
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *Monitor) kicker(ctx context.Context) {
	defer m.wg.Done()
	// Half a furnace period out of phase with the furnace poller: they share a line.
	first := time.NewTimer(m.opts.FurnaceEvery / 2)
	select {
	case <-ctx.Done():
		first.Stop()
		return
	case <-first.C:
	}
	t := time.NewTicker(m.opts.KickEvery)
	defer t.Stop()
	for {
		kctx, cancel := context.WithTimeout(ctx, min(m.opts.KickEvery, m.il.opts.WriteTimeout))
		for i := range m.env.zones { // every zone's controller, one after the other: they may share a line
			if err := m.il.controller(i).KickWatchdog(kctx); err != nil && ctx.Err() == nil {
				m.log.Warn("furnace watchdog kick failed", "zone", m.env.zones[i].name, "err", err)
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// evaluator evaluates the trips when no poller has for FurnaceEvery (every
// instrument silent, or every read failing), so that silence is noticed:
// each successful poll evaluates by itself (evaluateNow) and pushes the
// silence timer back, so at rest this goroutine hardly ever wakes.
func (m *Monitor) evaluator(ctx context.Context) {
	defer m.wg.Done()
	defer m.silence.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.silence.C:
		}
		m.evaluateNow(ctx)
	}
}

// evaluateNow runs one evaluation (at most one at a time) and re-arms the
// silence timer. It reports whether the evaluation started a trip.
func (m *Monitor) evaluateNow(ctx context.Context) bool {
	m.evalMu.Lock()
	tripped := m.evaluate(ctx)
	m.evalMu.Unlock()
	m.silence.Reset(m.opts.FurnaceEvery)
	return tripped
}

// Readings returns the latest cached snapshot; each part keeps the instant it
// was read, and At is now.
func (m *Monitor) Readings() Readings {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readingsLocked()
}

// newerLevel is whichever of two readings of one input was taken later: a
// slow read that began before another must not overwrite it.
func newerLevel(have, got Level) Level {
	if got.At.Before(have.At) {
		return have
	}
	return got
}

// merge takes a snapshot the interlock read for a decision of its own (a
// reset, an arm) into the cache, part by part where it is newer, so that the
// evaluator never judges readings older than that decision saw: a reset
// verified on a clear leak input must not be undone by the poller's earlier
// read of the leak finishing late.
func (m *Monitor) merge(r Readings) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !r.Furnace.At.IsZero() && !r.Furnace.At.Before(m.r.Furnace.At) {
		m.r.Furnace = r.Furnace
	}
	for z, st := range r.Zones {
		if _, ok := m.r.Zones[z]; ok && !st.At.IsZero() && !st.At.Before(m.r.Zones[z].At) {
			m.r.Zones[z] = st
		}
	}
	if !r.Pressure.At.IsZero() && !r.Pressure.At.Before(m.r.Pressure.At) {
		m.r.Pressure = r.Pressure
	}
	for gas, st := range r.Flows {
		if !st.At.IsZero() && !st.At.Before(m.r.Flows[gas].At) {
			m.r.Flows[gas] = st
		}
	}
	for name, l := range r.Switches {
		m.r.Switches[name] = newerLevel(m.r.Switches[name], l)
	}
	for name, l := range r.Inputs {
		m.r.Inputs[name] = newerLevel(m.r.Inputs[name], l)
	}
}

func (m *Monitor) readingsLocked() Readings {
	r := m.r
	r.At = m.opts.Clock()
	r.Flows = maps.Clone(m.r.Flows)
	r.Zones = maps.Clone(m.r.Zones)
	r.Switches = maps.Clone(m.r.Switches)
	r.Inputs = maps.Clone(m.r.Inputs)
	return r
}

// scratchLocked is readingsLocked into m.scratch, whose maps are reused: the
// result is valid until the next call, and only evaluate (under evalMu)
// calls it.
func (m *Monitor) scratchLocked() Readings {
	sc := &m.scratch
	sc.At, sc.Furnace, sc.Pressure = m.opts.Clock(), m.r.Furnace, m.r.Pressure
	if m.r.Zones != nil {
		if sc.Zones == nil {
			sc.Zones = make(map[string]device.FurnaceStatus, len(m.r.Zones))
		}
		maps.Copy(sc.Zones, m.r.Zones) // the same keys every time: the zones after the first
	}
	clear(sc.Flows)
	maps.Copy(sc.Flows, m.r.Flows)
	clear(sc.Switches)
	maps.Copy(sc.Switches, m.r.Switches)
	clear(sc.Inputs)
	maps.Copy(sc.Inputs, m.r.Inputs)
	return *sc
}

// tripKey identifies an onset: a trip kind going from not holding to holding
// (a second channel of a kind already holding is not a new onset).
func tripKey(ev TripEvent) string { return string(ev.Trip) }

// evaluate runs EvaluateTrips on the cache. For each trip with a new onset
// (a condition that did not hold at the last evaluation), or any condition
// while the interlock is not latched (reset while it held), it runs Trip once
// per trip kind, in Trips() order. While a condition persists and the
// interlock stays latched, it halts again the outputs of the procedure that
// the readings show away from their safe state. It reports whether it
// started a trip.
func (m *Monitor) evaluate(ctx context.Context) bool {
	m.mu.Lock()
	r := m.scratchLocked()
	grace := r.At.Sub(m.startedAt) < m.env.CommsTimeout()
	m.mu.Unlock()

	var now []TripEvent
	for _, ev := range m.env.EvaluateTrips(r) {
		if grace && ev.Trip == TripCommsLoss {
			continue // never read yet: comms_loss needs the comms timeout since start
		}
		now = append(now, ev)
	}
	latched, _ := m.il.Latched()

	m.mu.Lock()
	if len(now) == 0 { // the idle case: nothing holds, so nothing to fire or re-assert
		clear(m.active)
		m.mu.Unlock()
		return false
	}
	prev := m.active
	m.active = make(map[string]TripEvent, len(now))
	fire := map[Trip][]TripEvent{}
	holding := map[Procedure]bool{}
	for _, ev := range now {
		k := tripKey(ev)
		m.active[k] = ev
		holding[ev.Procedure] = true
		if _, held := prev[k]; !held || !latched {
			fire[ev.Trip] = append(fire[ev.Trip], ev)
		}
	}
	var toTrip []TripEvent
	for _, t := range Trips() {
		evs := fire[t]
		if len(evs) == 0 {
			continue
		}
		ev := evs[0]
		if len(evs) > 1 {
			chans := make([]string, len(evs))
			for i, e := range evs {
				chans[i] = e.Channel
			}
			ev.Reason += fmt.Sprintf(" (and %d more: %v)", len(evs)-1, chans[1:])
		}
		toTrip = append(toTrip, ev)
		m.trips = append(m.trips, ev)
		if len(m.trips) > maxTripHistory {
			m.trips = slices.Delete(m.trips, 0, len(m.trips)-maxTripHistory)
		}
		m.publishLocked(ev)
	}
	m.mu.Unlock()

	for _, ev := range toTrip {
		// Latch now, so that the next evaluation sees the trip as taken even
		// before the procedure (which latches too) has run.
		m.il.latch(string(ev.Trip))
		m.runProcedure(ctx, ev.Procedure, true, func(ctx context.Context) error { return m.il.Trip(ctx, ev) })
		// Logged once the procedure has started: a log line is a write to
		// stderr (a pipe to the journal), which may block.
		m.log.Warn("trip", "trip", ev.Trip, "procedure", ev.Procedure, "channel", ev.Channel, "reason", ev.Reason)
	}
	if len(toTrip) > 0 {
		return true
	}
	if !latched {
		return false
	}
	for proc := range holding {
		if m.unsafe(proc, r) {
			wall := time.Now() // a rate limit of the links, not process time
			m.mu.Lock()
			due := !m.running[proc] && wall.Sub(m.reassert[proc]) >= reassertEvery
			if due {
				m.reassert[proc] = wall
			}
			m.mu.Unlock()
			if due {
				m.log.Warn("re-asserting the safe state while the trip condition holds", "procedure", proc)
				m.runProcedure(ctx, proc, false, func(ctx context.Context) error { return m.il.reassert(ctx, proc) })
			}
		}
	}
	return false
}

// runProcedure runs f (a trip or a re-assertion) in its own goroutine so that
// an instrument that does not answer its halt delays neither the polling nor
// the next trip; at most one runs per procedure at a time, except that a
// trip always runs. It is not cancelled by Close: a procedure is finished.
func (m *Monitor) runProcedure(ctx context.Context, proc Procedure, trip bool, f func(context.Context) error) {
	m.mu.Lock()
	if m.running[proc] && !trip {
		m.mu.Unlock()
		return // a re-assertion while the same procedure runs is pointless
	}
	m.running[proc] = true
	m.mu.Unlock()
	budget := 2*m.il.opts.HaltTimeout + m.il.opts.WriteTimeout
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
		defer cancel()
		if err := f(pctx); err != nil {
			m.log.Error("emergency procedure incomplete", "procedure", proc, "err", err)
		}
		m.mu.Lock()
		m.running[proc] = false
		m.mu.Unlock()
	}()
}

// unsafe reports whether r shows an output that proc halts away from its
// safe state (a stale reading counts as unsafe).
func (m *Monitor) unsafe(proc Procedure, r Readings) bool {
	roles := procedureRoles(proc)
	has := func(role instrumentRole) bool { return len(roles) == 0 || slices.Contains(roles, role) }
	fresh := func(at time.Time) bool { return m.env.fresh(at, r) }
	if has(roleFurnace) {
		for i := range m.env.zones {
			if f := m.env.zoneReading(r, i); !fresh(f.At) || f.HeaterEnabled {
				return true
			}
		}
	}
	if has(roleFlow) {
		for gas := range m.il.rig.Flows {
			f, ok := r.Flows[gas]
			if !ok || !fresh(f.At) || f.Setpoint != 0 {
				return true
			}
		}
	}
	for _, n := range m.il.instr {
		if n.role == roleFurnace || n.role == roleFlow || !has(n.role) {
			continue
		}
		sw, ok := n.inst.(device.Switch)
		if !ok {
			continue
		}
		l, found := r.Switches[n.name[len("switch."):]]
		if !found || !fresh(l.At) || l.On != sw.SafeState() {
			return true
		}
	}
	return false
}

// Subscribe returns a channel that receives every trip the monitor runs, and
// a function that cancels the subscription. Delivery never blocks the
// monitor: the channel holds one event and a lagging subscriber's undelivered
// event is replaced by the newest, so the newest is never lost. The channel
// is closed by cancel or Close.
func (m *Monitor) Subscribe() (<-chan TripEvent, func()) {
	ch := make(chan TripEvent, 1)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		close(ch)
		return ch, func() {}
	}
	m.subs[ch] = struct{}{}
	m.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if _, ok := m.subs[ch]; ok {
				delete(m.subs, ch)
				close(ch)
			}
		})
	}
}

func (m *Monitor) publishLocked(ev TripEvent) {
	for ch := range m.subs {
		select {
		case ch <- ev:
			continue
		default:
		}
		select { // full: drop the older event
		case <-ch:
		default:
		}
		select {
		case ch <- ev:
		default:
		}
	}
}

// Status returns the cached readings, the latch, the trips since start, the
// margins of every limited channel and each instrument's health.
func (m *Monitor) Status() MonitorStatus {
	latched, why := m.il.Latched()
	m.mu.Lock()
	defer m.mu.Unlock()
	st := MonitorStatus{Readings: m.readingsLocked(), Latched: latched, LatchReason: why,
		Trips: slices.Clone(m.trips), Healthy: map[string]bool{}}
	now := st.Readings.At
	for _, name := range m.names {
		at, ok := m.lastOK[name]
		st.Healthy[name] = ok && now.Sub(at) <= m.env.CommsTimeout()
	}
	st.Margins = m.env.Margins(st.Readings)
	return st
}

// Margins returns, for each limited channel with a fresh reading, its value
// against its hard limits in the configured unit, sorted by channel: the
// process value and the chamber pressure against their trip thresholds, the
// furnace setpoint and ramp rate as the controller holds them, each gas's
// flow setpoint. (The spectrometer integration has no reading.)
func (e *Envelope) Margins(r Readings) []Margin {
	var out []Margin
	act := e.Activity(r)
	add := func(l *limit, v float64) {
		if l == nil || !device.Finite(v) {
			return
		}
		m := Margin{Channel: l.channel, Value: display(l.kind, v, l.unit), Min: display(l.kind, l.min, l.unit),
			Max: display(l.kind, l.max, l.unit), Unit: l.unit, Applies: true}
		ch, heater := l.channel, act.Heater
		if zn, what, ok := strings.Cut(ch, "."); ok && e.zoneIndex(zn) >= 0 {
			ch = ZoneChannel(rig.FurnaceName, what) // a zone's channel: the furnace's context, of its own heater
			f := e.zoneReading(r, e.zoneIndex(zn))
			heater = !f.At.IsZero() && r.At.Sub(f.At) <= e.commsTimeout && f.HeaterEnabled
		}
		switch ch {
		case ChannelPressure:
			if m.Applies = act.InProcess(); m.Applies {
				m.Context = act.String() + ": over_pressure applies"
			} else {
				m.Context = "idle: over_pressure applies only in process (a gas in use or the heater on); a vented chamber at atmosphere is normal"
			}
		case ChannelRampRate:
			if m.Applies = heater; !m.Applies {
				m.Context = "heater off: the limits bound what the agent writes; the controller's 0 means no ramp"
			}
		case ChannelSetpoint:
			m.Context = "limits bound what the agent writes"
		case ChannelTemperature:
			m.Context = "over_temperature trip threshold, always in force"
		default:
			if strings.HasPrefix(l.channel, "flow.") {
				m.Context = "setpoint; limits bound what the agent writes"
			}
		}
		out = append(out, m)
	}
	for i, z := range e.zones {
		if f := e.zoneReading(r, i); e.fresh(f.At, r) {
			if f.Alarms&device.AlarmSensorBreak == 0 {
				add(z.overTemp, float64(f.ProcessValue))
			}
			add(e.limits[ZoneChannel(z.name, ZoneSetpoint)], float64(f.Setpoint))
			add(e.limits[ZoneChannel(z.name, ZoneRampRate)], float64(f.RampRate))
		}
	}
	if p := r.Pressure; e.fresh(p.At, r) && p.Status <= device.GaugeOverrange {
		add(e.overPressure, float64(p.Pressure))
	}
	for _, g := range e.spec.Gases {
		if f, ok := r.Flows[g.Gas]; ok && e.fresh(f.At, r) {
			add(e.limits[FlowChannel(g.Gas)], float64(f.Setpoint))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Channel < out[j].Channel })
	return out
}
