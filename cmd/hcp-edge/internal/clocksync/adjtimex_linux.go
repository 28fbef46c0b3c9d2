package clocksync

import (
	"time"

	"golang.org/x/sys/unix"
)

// Read asks the kernel (adjtimex(2) with no modes: a read).
func Read() State {
	var tx unix.Timex
	code, err := unix.Adjtimex(&tx)
	if err != nil {
		return State{Err: "adjtimex: " + err.Error()}
	}
	return State{Known: true, Synced: code != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0,
		MaxError: time.Duration(tx.Maxerror) * time.Microsecond, EstError: time.Duration(tx.Esterror) * time.Microsecond}
}
