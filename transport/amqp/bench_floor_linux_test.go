package amqp_test

import (
	"os"
	"syscall"
)

// fdatasync is what bbolt calls on Linux after writing a commit's pages.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
