// Package serialtest gives driver tests a scripted instrument on the far side
// of a real pseudo-terminal, so the driver under test opens a real tty through
// go.bug.st/serial exactly as it would open the rig's port.
//
// # Concepts
//
// A Peer owns a pty pair in raw mode and a symlink to its slave (the path the
// driver opens). Serve starts one goroutine that splits what the driver writes
// into requests and answers each with a Handler; Stop and the test's cleanup
// stop that goroutine and wait for it. Replace swaps in a fresh pty behind the
// same symlink, which to the driver looks like an unplugged and re-plugged
// cable.
//
// Script is a record/playback transcript: a list of request/reply exchanges
// that a Handler plays back, reporting any unexpected request and, at the end,
// any exchange that was not consumed.
//
// # Caveats
//
// Test-only: nothing in the product imports it.
package serialtest
