package engine

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"hcp-edge/envelope"
	"hcp-edge/session/audit"
	"hcp-edge/session/executor"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

// A session's risk events (execution_summary.risk_events, L4) are read
// from the audit log, the durable and hash-chained record every one of
// them is already written to, in the state file the session lives in: so
// they survive a restart, and the list is what the audit log says, not a
// second account of it. Each is one string (L4's type), "TIME CODE:
// DETAIL", TIME in the wire's timestamp format (docs/PROTOCOL-NOTES.md):
//
//   - trip_{trip} — an emergency procedure ran (envelope.DecisionTripped)
//     while the session existed; rig-wide, so listed for every physical
//     session of that time;
//   - safe_state — the e-stop path ran (envelope.DecisionHalted), likewise;
//   - refused_{rule} — an action of the session the interlock refused;
//   - action_failed — an action of the session the instrument did not
//     carry out or whose read-back did not match;
//   - interlock_hold — the session was held after a restart because the
//     rig was not ready (the interlock relay de-energised);
//   - latched — the run ended on a latched interlock whose trip or e-stop
//     the audit log does not hold yet (its record follows the halts).

// Risk event codes.
const (
	riskTripPrefix    = "trip_"
	riskSafeState     = "safe_state"
	riskRefusedPrefix = "refused_"
	riskActionFailed  = "action_failed"
	riskHold          = "interlock_hold"
	riskLatched       = "latched"
)

// holdReason prefixes the PAUSED transition of a session recovery held for
// a rig that is not ready (Decide).
const holdReason = "held after restart: "

// interlockDetail is the part of an interlock audit entry's detail
// (envelope.Entry as JSON) the risk events read.
type interlockDetail struct {
	SessionID string            `json:"session_id"`
	Decision  envelope.Decision `json:"decision"`
	Rule      string            `json:"rule"`
	Trip      string            `json:"trip"`
	Reason    string            `json:"reason"`
}

// transitionDetail is the part of a transition audit entry's detail the
// risk events read.
type transitionDetail struct {
	To     lifecycle.State `json:"to"`
	Reason string          `json:"reason"`
}

// riskEventsLocked lists l's risk events, oldest first (l.mu held). runErr
// is how the run ended (nil: completed, or not run in this process). A
// failure to read the audit log is logged and lists what was read: the
// result is not withheld for it.
func (e *Engine) riskEventsLocked(l *live, runErr error) []string {
	ctx, cancel := storeCtx()
	defer cancel()
	log := e.cfg.Store.Audit()
	own, err := log.Query(ctx, audit.Query{SessionID: l.id, Kinds: []audit.Kind{audit.KindInterlock, audit.KindToolCall, audit.KindTransition}})
	if err != nil {
		e.log.Error("risk events: the session's audit entries", "session", l.id, "err", err)
	}
	var rig []audit.Entry
	physical := l.capab == nil || l.capab.Safety.InvolvesPhysicalResources
	if physical && !l.sess.CreatedAt.IsZero() {
		rig, err = log.Query(ctx, audit.Query{Since: l.sess.CreatedAt, Kinds: []audit.Kind{audit.KindInterlock}})
		if err != nil {
			e.log.Error("risk events: the rig's audit entries", "session", l.id, "err", err)
		}
	}
	all := append(own, rig...)
	sort.Slice(all, func(i, j int) bool { return all[i].Seq < all[j].Seq }) // chain order
	var out []string
	tripped := false
	for i, ent := range all {
		if i > 0 && all[i-1].Seq == ent.Seq {
			continue // found by both queries
		}
		code, detail := riskOf(ent, l.id)
		if code == "" {
			continue
		}
		if strings.HasPrefix(code, riskTripPrefix) || code == riskSafeState {
			tripped = true
		}
		out = append(out, riskEvent(wire.FormatTimestamp(ent.At), code, detail))
	}
	if !tripped && physical && errors.Is(runErr, executor.ErrLatched) {
		if latched, why := e.cfg.Rig.Latched(); latched {
			out = append(out, riskEvent(wire.FormatTimestamp(e.cfg.Now()), riskLatched, "the run stopped on the latched interlock: "+why))
		}
	}
	return out
}

// riskOf is the code and detail of ent as a risk event of session id ("":
// not one).
func riskOf(ent audit.Entry, id string) (code, detail string) {
	switch ent.Kind {
	case audit.KindInterlock, audit.KindToolCall:
		var d interlockDetail
		if json.Unmarshal([]byte(ent.Detail), &d) != nil {
			return "", ""
		}
		switch {
		case d.Decision == envelope.DecisionTripped && d.SessionID == "":
			return riskTripPrefix + d.Trip, d.Reason
		case d.Decision == envelope.DecisionHalted && d.SessionID == "":
			return riskSafeState, d.Reason
		case d.Decision == envelope.DecisionRefused && d.SessionID == id:
			rule := d.Rule
			if rule == "" {
				rule = "action"
			}
			return riskRefusedPrefix + rule, d.Reason
		case d.Decision == envelope.DecisionFailed && d.SessionID == id:
			return riskActionFailed, d.Reason
		}
	case audit.KindTransition:
		var d transitionDetail
		if ent.SessionID == id && json.Unmarshal([]byte(ent.Detail), &d) == nil &&
			d.To == lifecycle.Paused && strings.HasPrefix(d.Reason, holdReason) {
			return riskHold, strings.TrimPrefix(d.Reason, holdReason)
		}
	}
	return "", ""
}

// riskEvent is one risk event's string.
func riskEvent(at, code, detail string) string {
	if detail == "" {
		return at + " " + code
	}
	return at + " " + code + ": " + detail
}

// latchRecordWait bounds how long a run that ended on a latched interlock
// waits for the audit record of the trip or e-stop that latched it: the
// interlock writes it once its halts are done (each within its
// HaltTimeout, twice when an action was in flight).
const latchRecordWait = 10 * time.Second

// awaitLatchRecord is called as a run ends with runErr, before its end is
// recorded: when it ended on a latched interlock whose trip or e-stop the
// audit log does not hold yet, it waits (latchRecordWait at most, or until
// the engine stops) for that record, so the session's risk events name
// the trip rather than the latch alone. It does not hold l.mu.
func (e *Engine) awaitLatchRecord(l *live, runErr error) {
	if !errors.Is(runErr, executor.ErrLatched) {
		return
	}
	l.mu.Lock()
	since := l.sess.CreatedAt
	l.mu.Unlock()
	deadline := time.Now().Add(latchRecordWait)
	for {
		ctx, cancel := storeCtx()
		ents, err := e.cfg.Store.Audit().Query(ctx, audit.Query{Since: since, Kinds: []audit.Kind{audit.KindInterlock}})
		cancel()
		if err != nil {
			return
		}
		for _, ent := range ents {
			if code, _ := riskOf(ent, l.id); strings.HasPrefix(code, riskTripPrefix) || code == riskSafeState {
				return
			}
		}
		if time.Now().After(deadline) || !sleepCtx(e.base, 25*time.Millisecond) {
			return
		}
	}
}
