package control

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// unsetLoginUID is the kernel's loginuid of a process no login set it for
// (a daemon, a boot-time service): (uid_t)-1.
const unsetLoginUID = 4294967295

// loginUIDOf reads the kernel's audit login uid of process pid under proc
// (/proc/PID/loginuid): the uid of the account that logged in, set by
// pam_loginuid at login and kept across sudo and su. ok is false when it is
// unset, unreadable or not a number. It names who logged in, for the
// audit; it never decides a role (the peer's uid does).
func loginUIDOf(proc string, pid int32) (uid uint32, ok bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(int(pid)), "loginuid"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil || n == unsetLoginUID {
		return 0, false
	}
	return uint32(n), true
}
