//go:build !linux

package amqp_test

import "os"

// fdatasync is fsync where Linux's fdatasync(2) is not available.
func fdatasync(f *os.File) error { return f.Sync() }
