// Package serialline is one serial line (a real port, a USB adapter or a pty)
// shared by the ASCII instrument drivers: it opens the port with the configured
// mode, runs one transaction at a time, and turns every read into a bounded,
// context-aware operation.
//
// # Concepts
//
// A Line is opened by path (e.g. /dev/ttyUSB0 or the simulator's symlink
// /tmp/hcp-rig-sim/mfc-ar). Drivers talk to the instrument inside Do, which holds
// the line for the whole command/reply exchange, discards stale input
// before the closure runs, and hands it a Tx:
//
//	err := line.Do(ctx, func(tx *serialline.Tx) error {
//		if err := tx.Write(ctx, []byte("A\r")); err != nil {
//			return err
//		}
//		frame, err := tx.ReadUntil(ctx, []byte("\r"))
//		...
//	})
//
// Every read honours the context: its deadline becomes the read's deadline, a
// cancellation cuts the read short at once, and a read that gets nothing
// before the deadline returns an error wrapping device.ErrTimeout. A frame longer than Opts.MaxFrame without its terminator
// wraps device.ErrFrame. When the context has no deadline, Opts.Timeout
// applies.
//
// Transactions waiting for the line get it in their order of arrival (the
// line's lock is a lane.Lane, as a Modbus bus's is): one whose context is
// marked device.WithUrgent (the interlock's halts: a trip's flow-zero on an
// RS-485 line shared by several MFCs) goes before every routine one waiting,
// the transaction already on the line finishing first, and nothing barges
// (with a sync.Mutex, the poller that had just unlocked could take the line
// again before the halt). A transaction whose context ends while it waits
// gives up its turn at once, with the error it used to get only once the
// line was free ("wait for line", wrapping device.ErrTimeout at the
// deadline).
//
// After an I/O error (an unplugged adapter, a pty whose other side went away)
// the port is closed, and the next Do opens the path again, so the line
// recovers by itself once the device is back.
//
// # Two descriptors
//
// go.bug.st/serial opens the port, sets its mode and takes exclusive access,
// and flushes its input; the bytes go through a second, non-blocking
// descriptor of the same tty (opened first, before exclusive access), which the
// Go runtime's netpoller waits on with deadlines. go.bug.st/serial's own Read
// blocks an OS thread in select(2) for the whole wait: four instruments polled
// at 10 Hz kept a thread in a syscall most of the time, and the runtime's
// sysmon spinning to take its P back (docs/FOOTPRINT.md). A waiting read here
// is a parked goroutine.
//
// # Caveats
//
// A write also has the context's deadline; on a serial port or a pty the
// kernel takes the short commands used here at once. Baud rate and parity are
// ignored by a pty. A device the netpoller cannot wait on (no poll(2) support
// in its tty driver) fails to open, with an error that says so.
package serialline
