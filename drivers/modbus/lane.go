package modbus

import "sync"

// lane is a Bus's lock: one transaction on the line at a time, handed on
// when it ends to the first urgent transaction waiting (device.WithUrgent:
// the interlock's halts), else to the first routine one waiting. With a
// sync.Mutex a trip's heater-off write that came to the furnace's connection
// while a poll was on it could wait behind that poller's next transaction
// too (the unlocking goroutine takes the mutex again before the woken waiter
// runs), and behind the watchdog kick: under load, 28 ms (docs/SAFETY.md).
// Nothing barges: a transaction that finds the lane busy waits its turn.
type lane struct {
	mu     sync.Mutex // guards the fields below
	busy   bool
	urgent []chan struct{} // waiting, first come first
	normal []chan struct{}
}

// lock takes the lane, waiting for the transactions before it; an urgent one
// waits only for the transaction on the line and the urgent ones before it.
func (l *lane) lock(urgent bool) {
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.mu.Unlock()
		return
	}
	turn := make(chan struct{})
	if urgent {
		l.urgent = append(l.urgent, turn)
	} else {
		l.normal = append(l.normal, turn)
	}
	l.mu.Unlock()
	<-turn // the lane was handed to us: busy stays true
}

// unlock hands the lane to the next transaction waiting, or frees it.
func (l *lane) unlock() {
	l.mu.Lock()
	var next chan struct{}
	switch {
	case len(l.urgent) > 0:
		next = l.urgent[0]
		l.urgent[0] = nil
		l.urgent = l.urgent[1:]
	case len(l.normal) > 0:
		next = l.normal[0]
		l.normal[0] = nil
		l.normal = l.normal[1:]
	default:
		l.busy = false
	}
	l.mu.Unlock()
	if next != nil {
		close(next)
	}
}
