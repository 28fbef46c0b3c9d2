//go:build !race

package nbio

import (
	"syscall"
	"unsafe"
)

// rawRead is read(2) without the runtime's syscall bookkeeping; b is not
// empty.
func rawRead(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}

// rawWrite is write(2) without the runtime's syscall bookkeeping; b is not
// empty.
func rawWrite(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}
