package compact

import "errors"

// Sentinel errors of File. Each leaves the original file untouched.
var (
	// ErrInUse: another process (the daemon) holds the file's lock.
	ErrInUse = errors.New("state file in use (is the daemon running?)")
	// ErrDamaged: the file does not open as a bbolt file, or the original
	// or its copy fails a check.
	ErrDamaged = errors.New("state file damaged")
	// ErrNoSpace: not enough free space beside the file for the copy.
	ErrNoSpace = errors.New("not enough free space for the compacted copy")
)
