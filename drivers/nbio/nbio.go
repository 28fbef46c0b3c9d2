// Package nbio reads and writes a descriptor that the Go runtime's
// netpoller waits on (a TCP or unix socket, a tty opened non-blocking) with
// raw system calls, so that an exchange with an instrument costs the idle
// agent no more wake-ups than it must.
//
// Every read and write through net.Conn or os.File enters the runtime's
// syscall bookkeeping (entersyscall), which wakes the runtime's monitor
// thread, sysmon, whenever it is sleeping because every P is idle — that is,
// at nearly every exchange of an agent at rest. Once woken, sysmon polls
// every 20 µs until the agent is idle again. On the development VM this was
// about a fifth of the idle agent's CPU (docs/FOOTPRINT.md, "Fourth
// round"). A read or write of a non-blocking descriptor never blocks, so it
// needs none of that bookkeeping: FD makes it with syscall.RawSyscall inside
// the descriptor's syscall.RawConn, which still waits in the netpoller when
// the descriptor is not ready and still honours the deadlines set on the
// connection or file (SetDeadline and friends).
//
// Built with -race, the reads and writes go through package syscall's
// wrappers instead, so that the race detector still orders a write to a
// descriptor before the read that gets its bytes (raw_race.go).
//
// An FD is for one reader and one writer at a time (a read and a write may
// run at once); the drivers that use one hold their line's lane for a whole
// exchange.
package nbio

import (
	"io"
	"os"
	"syscall"
)

// FD is one descriptor read and written with raw system calls.
type FD struct {
	rc syscall.RawConn

	// The read in progress: its buffer, what it got, its error.
	rb   []byte
	rn   int
	rerr error
	rfn  func(uintptr) bool
	// The write in progress.
	wb   []byte
	wn   int
	werr error
	wfn  func(uintptr) bool
}

// New returns the FD of c (a *net.TCPConn, *net.UnixConn or an *os.File
// opened non-blocking). c's deadlines apply to the FD's reads and writes,
// and closing c ends them.
func New(c syscall.Conn) (*FD, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	f := &FD{rc: rc}
	// Bound once: a closure per call would be an allocation per exchange.
	f.rfn, f.wfn = f.read, f.write
	return f, nil
}

// Read reads what the descriptor has into b, waiting in the netpoller until
// something comes, the deadline passes (an error wrapping
// os.ErrDeadlineExceeded) or the descriptor is closed. End of stream is
// io.EOF.
func (f *FD) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	f.rb, f.rn, f.rerr = b, 0, nil
	err := f.rc.Read(f.rfn)
	n, rerr := f.rn, f.rerr
	f.rb, f.rerr = nil, nil
	switch {
	case err != nil:
		return n, err
	case rerr != nil:
		return n, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of b, waiting in the netpoller while the descriptor
// cannot take more, until the deadline or a close (the error says which).
func (f *FD) Write(b []byte) (int, error) {
	f.wb, f.wn, f.werr = b, 0, nil
	err := f.rc.Write(f.wfn)
	n, werr := f.wn, f.werr
	f.wb, f.werr = nil, nil
	if err != nil {
		return n, err
	}
	return n, werr
}

// read is the RawConn callback of Read: true when done (data, end of stream
// or an error), false to wait until the descriptor is readable.
func (f *FD) read(fd uintptr) bool {
	for {
		n, e := rawRead(fd, f.rb)
		switch {
		case e == 0:
			f.rn = n
			return true
		case e == syscall.EINTR:
		case e == syscall.EAGAIN:
			return false
		default:
			f.rerr = os.NewSyscallError("read", e)
			return true
		}
	}
}

// write is the RawConn callback of Write.
func (f *FD) write(fd uintptr) bool {
	for f.wn < len(f.wb) {
		n, e := rawWrite(fd, f.wb[f.wn:])
		switch {
		case e == 0:
			f.wn += n
		case e == syscall.EINTR:
		case e == syscall.EAGAIN:
			return false
		default:
			f.werr = os.NewSyscallError("write", e)
			return true
		}
	}
	return true
}

// Control calls fn with the descriptor, for an operation that never blocks
// (an ioctl such as a tty's input flush); the descriptor stays valid while
// fn runs.
func (f *FD) Control(fn func(fd uintptr)) error { return f.rc.Control(fn) }
