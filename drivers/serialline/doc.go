// Package serialline is one serial line (a real port, a USB adapter or a pty)
// shared by the ASCII instrument drivers: it opens the port with the configured
// mode, runs one transaction at a time, and turns every read into a bounded,
// context-aware operation.
//
// # Concepts
//
// A Line is opened by path (e.g. /dev/ttyUSB0 or the simulator's symlink
// /tmp/hcp-rig-sim/mfc-ar). Drivers talk to the instrument inside Do, which holds
// the line's mutex for the whole command/reply exchange, discards stale input
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
// Every read honours the context: its deadline becomes the port's read
// timeout (sliced into short polls so a cancellation is noticed quickly), and a
// read that gets nothing before the deadline returns an error wrapping
// device.ErrTimeout. A frame longer than Opts.MaxFrame without its terminator
// wraps device.ErrFrame. When the context has no deadline, Opts.Timeout
// applies.
//
// After an I/O error (an unplugged adapter, a pty whose other side went away)
// the port is closed, and the next Do opens the path again, so the line
// recovers by itself once the device is back.
//
// # Caveats
//
// go.bug.st/serial v1.8.0 returns (0, nil) from Read when its read timeout
// expires; this package turns that into device.ErrTimeout so no caller can spin
// on it. The library has no write timeout: a write blocks until the kernel
// accepts the bytes, which on a serial port or a pty is immediate for the short
// commands used here. Baud rate and parity are ignored by a pty.
package serialline
