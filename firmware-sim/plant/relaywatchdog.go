package plant

import "time"

// The relay watchdog is a module between the GPIO header and the interlock
// relay's coil, of the kind sold as a cycle-monitoring or "dead-man" watchdog
// relay: the Beckhoff KL2692 cycle monitoring terminal, for one, monitors a
// bit the controller toggles every cycle, switches its relay contacts off
// when the toggling stops, and switches them on again only after an explicit
// enable once the toggling is correct again (no automatic restart). Here the
// toggled bit is the heartbeat output and the enable is the relay output
// driven High (configs/rig-protocols.md, Virtual GPIO, "Relay watchdog").
//
// The rule, with timeout T > 0 (Opts.RelayWatchdog), on the wall clock:
//
//   - The heartbeat is alive at instant t when its last edge (a change of
//     level written to the heartbeat pin; plant start counts as one) is less
//     than T before t.
//   - When it stops being alive while the coil is energised, the coil drops
//     (relay_fb Low; heater power and gas valve power removed). The relay
//     output keeps the level the agent wrote: only the coil falls. The drop is
//     recorded in the write log as device gpio, via watchdog, channel relay,
//     value 0.
//   - A write of High to the relay output (a level change or not) energises
//     the coil only if the heartbeat is alive at that instant; otherwise the
//     write is accepted and the coil stays dropped. So after a drop the coil
//     stays dropped, however the heartbeat resumes, until the agent writes
//     relay High again with the heartbeat alive. A write of Low drops the
//     coil, as without the watchdog.
//
// With T = 0 (the default) there is no watchdog: the coil follows the relay
// output, as before.

// RelayWatchdogState is the relay watchdog's state (GET /status,
// "relay_watchdog"; absent when the watchdog is off).
type RelayWatchdogState struct {
	// TimeoutMs is T, the longest gap between heartbeat edges.
	TimeoutMs int64 `json:"timeout_ms"`
	// Alive: the last heartbeat edge is less than T ago.
	Alive bool `json:"alive"`
	// HeartbeatEdges counts the level changes written to the heartbeat pin.
	HeartbeatEdges uint64 `json:"heartbeat_edges"`
	// LastHeartbeatAt is the wall instant of the last heartbeat edge (the
	// plant's start before the first).
	LastHeartbeatAt time.Time `json:"last_heartbeat_at"`
	// Drops counts the times the watchdog dropped an energised coil.
	Drops uint64 `json:"drops"`
	// LastDrop is the last drop's timing (zero before the first).
	LastDrop RelayDrop `json:"last_drop"`
}

// RelayDrop is the timing of one drop of the relay by its watchdog.
type RelayDrop struct {
	// ExpiredAt is when the heartbeat stopped being alive: the last edge + T.
	ExpiredAt time.Time `json:"expired_at"`
	// At is when the plant saw it and dropped the coil (at most one physics
	// tick, or one access, after ExpiredAt).
	At time.Time `json:"at"`
}

// relayWatchdog is the module's state, guarded by Plant.mu.
type relayWatchdog struct {
	timeout  time.Duration // 0: no watchdog
	level    bool          // the heartbeat output's level
	lastEdge time.Time
	edges    uint64
	drops    uint64
	lastDrop RelayDrop
}

// heartbeatAliveLocked reports whether the heartbeat is alive now.
func (p *Plant) heartbeatAliveLocked(now time.Time) bool {
	return now.Sub(p.rwd.lastEdge) < p.rwd.timeout
}

// relayWatchdogLocked drops an energised coil whose heartbeat has stopped
// being alive, records the drop, and reports whether it dropped it. The
// caller updates the pins.
func (p *Plant) relayWatchdogLocked() bool {
	if p.rwd.timeout <= 0 || !p.relay {
		return false
	}
	now := p.now()
	if p.heartbeatAliveLocked(now) {
		return false
	}
	p.relay = false
	p.rwd.drops++
	p.rwd.lastDrop = RelayDrop{ExpiredAt: p.rwd.lastEdge.Add(p.rwd.timeout), At: now}
	p.recordWrite("gpio", "watchdog", PinRelay, 0, true, p.sim)
	return true
}

// outRelayLocked applies a write of the relay output: the output takes the
// level; the coil follows, unless the watchdog is on and the heartbeat is not
// alive, when a High leaves it dropped.
func (p *Plant) outRelayLocked(l bool) {
	p.relayWatchdogLocked()
	p.relayOut = l
	p.relay = l && (p.rwd.timeout <= 0 || p.heartbeatAliveLocked(p.now()))
}

// outHeartbeatLocked applies a write of the heartbeat output: a level change
// is an edge. An expiry that happened before the write drops the relay first.
func (p *Plant) outHeartbeatLocked(l bool) {
	p.relayWatchdogLocked()
	if l == p.rwd.level {
		return
	}
	p.rwd.level = l
	p.rwd.lastEdge = p.now()
	p.rwd.edges++
}

// RelayWatchdog returns the relay watchdog's state, and false when the
// plant runs without one (Opts.RelayWatchdog 0).
func (p *Plant) RelayWatchdog() (RelayWatchdogState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.relayWatchdogLocked() {
		p.updatePinsLocked()
	}
	return p.relayWatchdogStateLocked()
}

func (p *Plant) relayWatchdogStateLocked() (RelayWatchdogState, bool) {
	if p.rwd.timeout <= 0 {
		return RelayWatchdogState{}, false
	}
	return RelayWatchdogState{
		TimeoutMs:       p.rwd.timeout.Milliseconds(),
		Alive:           p.heartbeatAliveLocked(p.now()),
		HeartbeatEdges:  p.rwd.edges,
		LastHeartbeatAt: p.rwd.lastEdge,
		Drops:           p.rwd.drops,
		LastDrop:        p.rwd.lastDrop,
	}, true
}
