// Package lane is the lock of a line or connection that several drivers'
// transactions share (a Modbus bus, a serial line): one transaction at a time,
// handed on in order of arrival, except that an urgent transaction (one whose
// context is marked device.WithUrgent: the interlock's halts) goes before
// every routine one waiting. A transaction already on the line finishes
// first, and nothing barges: a transaction that finds the lane busy waits its
// turn, and the one that unlocks hands the lane on before it can ask again.
//
// With a sync.Mutex a trip's safe-state write that came to a line while a
// poll was on it could wait behind that poller's next transaction too (the
// unlocking goroutine takes the mutex again before the woken waiter runs),
// and behind whatever else was waiting: on the furnace's Modbus connection,
// under load, 28 ms (docs/SAFETY.md §8, "The reaction").
package lane

import (
	"context"
	"slices"
	"sync"
)

// Lane is the lock. The zero value is a free lane; a Lane must not be copied
// after first use.
type Lane struct {
	mu      sync.Mutex // guards the fields below
	busy    bool
	urgent  []chan struct{} // waiting, first come first
	routine []chan struct{}
}

// Lock takes the lane, waiting for the transactions before it; an urgent one
// waits only for the transaction on the line and the urgent ones before it.
func (l *Lane) Lock(urgent bool) { l.wait(nil, urgent) }

// LockContext is Lock, giving up when ctx is done: it then returns ctx.Err()
// and does not hold the lane (a turn handed to it as it gave up is handed on).
// A ctx already done gets the error at once, even on a free lane.
func (l *Lane) LockContext(ctx context.Context, urgent bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !l.wait(ctx.Done(), urgent) {
		return ctx.Err()
	}
	return nil
}

// wait takes the lane, or gives up when done is closed (never, when nil) and
// reports false.
func (l *Lane) wait(done <-chan struct{}, urgent bool) bool {
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		return true
	}
	turn := make(chan struct{})
	q := &l.routine
	if urgent {
		q = &l.urgent
	}
	*q = append(*q, turn)
	l.mu.Unlock()
	select {
	case <-turn: // the lane was handed to us: busy stays true
		return true
	case <-done:
	}
	l.mu.Lock()
	if i := slices.Index(*q, turn); i >= 0 {
		*q = slices.Delete(*q, i, i+1)
		l.mu.Unlock()
		return false
	}
	l.mu.Unlock()
	l.Unlock() // handed to us as we gave up: on to the next
	return false
}

// Unlock hands the lane to the next transaction waiting, or frees it.
func (l *Lane) Unlock() {
	l.mu.Lock()
	var next chan struct{}
	switch {
	case len(l.urgent) > 0:
		next = l.urgent[0]
		l.urgent[0] = nil
		l.urgent = l.urgent[1:]
	case len(l.routine) > 0:
		next = l.routine[0]
		l.routine[0] = nil
		l.routine = l.routine[1:]
	default:
		l.busy = false
	}
	l.mu.Unlock()
	if next != nil {
		close(next)
	}
}

// Waiting reports how many transactions wait for the lane, urgent and
// routine (tests).
func (l *Lane) Waiting() (urgent, routine int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.urgent), len(l.routine)
}

// Busy reports whether a transaction holds the lane (tests).
func (l *Lane) Busy() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.busy
}
