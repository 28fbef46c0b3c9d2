//go:build race

package nbio

import (
	"errors"
	"syscall"
)

// Under the race detector the reads and writes go through package syscall's
// wrappers after all: they tell the detector that a write to a descriptor
// happens before the read that gets its bytes (syscall's ioSync), which is
// how a test's peer, replying over a pty or a socket, is ordered with the
// test that reads the reply. Raw system calls would hide that, and the
// detector would report races between a peer and the test that waited for
// its reply. Speed does not matter in a race build.

func rawRead(fd uintptr, b []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), b)
	return max(n, 0), errno(err)
}

func rawWrite(fd uintptr, b []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), b)
	return max(n, 0), errno(err)
}

func errno(err error) syscall.Errno {
	var e syscall.Errno
	if err == nil || !errors.As(err, &e) {
		return 0
	}
	return e
}
