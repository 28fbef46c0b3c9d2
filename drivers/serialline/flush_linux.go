package serialline

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// resetInput discards the tty's input buffer: tcflush(TCIFLUSH), the ioctl
// go.bug.st/serial's ResetInputBuffer makes, made here as a raw system call
// on the netpoller's descriptor (the buffer is the tty's, whichever
// descriptor asks). Made through the runtime's syscall bookkeeping, it woke
// sysmon before every serial exchange of an idle agent (package nbio).
func (p *Port) resetInput() error {
	var errno syscall.Errno
	if err := p.fd.Control(func(fd uintptr) {
		_, _, errno = syscall.RawSyscall(syscall.SYS_IOCTL, fd, unix.TCFLSH, unix.TCIFLUSH)
	}); err != nil {
		return err
	}
	if errno != 0 {
		return os.NewSyscallError("tcflush", errno)
	}
	return nil
}
