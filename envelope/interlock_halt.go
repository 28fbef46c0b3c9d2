package envelope

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"hcp-edge/device"
)

// latch marks the interlock latched and returns the apply in flight (if any)
// after cancelling it.
func (il *Interlock) latch(reason string) chan struct{} {
	il.mu.Lock()
	defer il.mu.Unlock()
	if !il.latched {
		il.latched, il.latchReason = true, reason
	}
	if il.inflight != nil {
		il.inflight()
	}
	return il.done
}

// halt runs Halt concurrently on the instruments whose role is selected,
// each with HaltTimeout, and joins the failures. The halts are urgent
// (device.WithUrgent): on a line they share with the monitor's polls, the
// watchdog kick or an apply, they go before every routine exchange waiting.
func (il *Interlock) halt(ctx context.Context, roles ...instrumentRole) error {
	ctx = device.WithUrgent(ctx)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, n := range il.instr {
		if len(roles) > 0 && !slices.Contains(roles, n.role) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hctx, cancel := context.WithTimeout(ctx, il.opts.HaltTimeout)
			defer cancel()
			if err := n.inst.Halt(hctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("envelope: halt %s: %w", n.name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// haltTwice halts, and halts again once the apply that was in flight has
// returned, so that its write cannot outlive the halt.
func (il *Interlock) haltTwice(ctx context.Context, done chan struct{}, roles ...instrumentRole) error {
	err := il.halt(ctx, roles...)
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		}
		err = il.halt(ctx, roles...)
	}
	return err
}

// SafeState is the e-stop path: it bypasses authorisation, latches, cancels
// the apply in flight and halts every instrument, then audits. It returns
// once every Halt has confirmed, or with the failures joined.
func (il *Interlock) SafeState(ctx context.Context, reason string) error {
	return il.SafeStateThen(ctx, reason, nil)
}

// SafeStateThen is SafeState with then, if not nil, called once every Halt
// has returned, concurrently with the audit record of the halts: the
// e-stop's read-backs need not wait for that durable write (two fsyncs,
// milliseconds on an SD card). It returns once then and the record have
// both returned, with SafeState's error.
func (il *Interlock) SafeStateThen(ctx context.Context, reason string, then func()) error {
	done := il.latch(reason)
	err := il.haltTwice(ctx, done)
	var wg sync.WaitGroup
	if then != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			then()
		}()
	}
	e := Entry{Decision: DecisionHalted, Reason: reason}
	if err != nil {
		e.Reason += "; halt failures: " + err.Error()
	}
	rerr := il.record(ctx, e)
	wg.Wait()
	return errors.Join(err, rerr)
}

// Trip runs the emergency procedure of ev.Trip, latches and audits, bypassing
// authorisation. immediate_shutdown halts every heated zone's controller
// (its heater off: an over_temperature of any zone halts them all), the interlock relay,
// the flows and the gas line valves; close_all_valves_and_alert halts the
// flows and the gas line valves; safe_state halts everything.
func (il *Interlock) Trip(ctx context.Context, ev TripEvent) error {
	proc := il.env.Procedure(ev.Trip)
	done := il.latch(string(ev.Trip))
	err := il.haltTwice(ctx, done, procedureRoles(proc)...)
	e := Entry{Decision: DecisionTripped, Trip: ev.Trip, Rule: Rule(proc), Reason: fmt.Sprintf("%s on %s: %s", ev.Trip, ev.Channel, ev.Reason),
		Readings: ev.readings()}
	if err != nil {
		e.Reason += "; halt failures: " + err.Error()
	}
	return errors.Join(err, il.record(ctx, e))
}

// procedureRoles are the instruments an emergency procedure halts (none
// listed: all of them).
func procedureRoles(proc Procedure) []instrumentRole {
	switch proc {
	case ProcImmediateShutdown:
		return []instrumentRole{roleFurnace, roleRelay, roleFlow, roleGasValve}
	case ProcCloseValvesAndAlert:
		return []instrumentRole{roleFlow, roleGasValve}
	}
	return nil
}

// reassert halts again the instruments of proc, without latching or
// auditing: the monitor calls it while a trip condition persists and the
// readings show one of those outputs away from its safe state.
func (il *Interlock) reassert(ctx context.Context, proc Procedure) error {
	return il.halt(ctx, procedureRoles(proc)...)
}

// Reset clears the latch; the operator's name is recorded. It is a local
// operation: nothing remote reaches it. It refuses (a *Violation with
// RuleLatched, audited) while a fresh snapshot still shows a trip condition.
func (il *Interlock) Reset(ctx context.Context, operator string) error {
	if operator == "" {
		return errors.New("envelope: reset needs the operator's name")
	}
	if trips := il.env.EvaluateTrips(il.poll(ctx)); len(trips) > 0 {
		v := violation(RuleLatched, trips[0].Channel, "trip condition %s holds: %s", trips[0].Trip, trips[0].Reason)
		if aerr := il.record(ctx, Entry{Decision: DecisionRefused, Operator: operator, Rule: RuleLatched, Trip: trips[0].Trip,
			Reason: "reset refused: " + v.Reason, Readings: trips[0].readings()}); aerr != nil {
			return errors.Join(v, aerr)
		}
		return v
	}
	il.mu.Lock()
	was := il.latchReason
	il.latched, il.latchReason = false, ""
	il.mu.Unlock()
	return il.record(ctx, Entry{Decision: DecisionReset, Operator: operator, Reason: "cleared latch: " + was})
}

// Arm energises the interlock-owned outputs (the relay that powers the heater
// and the gas valves) when the interlock is not latched and a fresh snapshot
// shows no trip condition. Local only; the operator is recorded.
func (il *Interlock) Arm(ctx context.Context, operator string) error {
	if operator == "" {
		return errors.New("envelope: arm needs the operator's name")
	}
	if latched, why := il.Latched(); latched {
		return violation(RuleLatched, "arm", "latched by %s: reset first", why)
	}
	if trips := il.env.EvaluateTrips(il.poll(ctx)); len(trips) > 0 {
		return violation(RuleLatched, trips[0].Channel, "trip condition %s holds: %s", trips[0].Trip, trips[0].Reason)
	}
	for _, n := range il.instr {
		if n.role != roleRelay {
			continue
		}
		sw := n.inst.(device.Switch)
		wctx, cancel := context.WithTimeout(ctx, il.opts.WriteTimeout)
		err := sw.Set(wctx, true)
		cancel()
		if err != nil {
			_ = il.halt(ctx, roleRelay)
			return fmt.Errorf("envelope: arm %s: %w", n.name, err)
		}
	}
	return il.record(ctx, Entry{Decision: DecisionArmed, Operator: operator})
}
