package modbus

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"testing"
	"time"

	"hcp-edge/device"
)

// queued reports how many transactions wait for b's lane, urgent and routine.
func queued(b *Bus) (urgent, normal int) {
	return b.lane.Waiting()
}

// TestUrgentGoesBeforeWaitingPolls: while a read is on the line, two routine
// reads, a routine write and then an urgent write (a halt, device.WithUrgent)
// come to the bus; once the read ends, the urgent write goes first and the
// routine ones follow in their order of arrival. Before the lane, a
// sync.Mutex let any of them in, the goroutine that had just unlocked first.
func TestUrgentGoesBeforeWaitingPolls(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	h := HandlerFunc(func(ctx context.Context, unit byte, req PDU) (PDU, error) {
		addr := binary.BigEndian.Uint16(req.Data)
		if addr == 9 {
			<-release // the read on the line when the others come
		}
		mu.Lock()
		order = append(order, map[byte]string{3: "read", 6: "write"}[req.Function]+string(rune('0'+addr)))
		mu.Unlock()
		if req.Function == 6 {
			return req, nil // the echo
		}
		return PDU{Function: req.Function, Data: []byte{2, 0, 0}}, nil
	})
	o := DefaultOpts()
	b, err := NewInMemory(h, o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // before Close: a failed test must not leave the first read on the line
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				t.Error(err)
			}
		}()
	}
	waitQueued := func(urgent, normal int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if u, n := queued(b); u == urgent && n == normal {
				return
			}
			if time.Now().After(deadline) {
				u, n := queued(b)
				t.Fatalf("waiting: %d urgent, %d routine; want %d, %d", u, n, urgent, normal)
			}
		}
	}
	read := func(addr uint16) func() error {
		return func() error { _, err := b.ReadHoldingRegisters(ctx, 1, addr, 1); return err }
	}
	run(read(9))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if b.lane.Busy() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first read never took the lane")
		}
	}
	run(read(1))
	waitQueued(0, 1)
	run(func() error { return b.WriteSingleRegister(ctx, 1, 4, 7) }) // a watchdog kick
	waitQueued(0, 2)
	run(read(2))
	waitQueued(0, 3)
	run(func() error { return b.WriteSingleRegister(device.WithUrgent(ctx), 1, 2, 0) }) // heater off
	waitQueued(1, 3)
	unblock()
	wg.Wait()
	if want := []string{"read9", "write2", "read1", "write4", "read2"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if u, n := queued(b); u != 0 || n != 0 || b.lane.Busy() {
		t.Fatalf("after: %d urgent, %d routine waiting, busy %v", u, n, b.lane.Busy())
	}
}
