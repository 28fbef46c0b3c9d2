// Package diskspace watches the free space of the state directory against a
// watermark and keeps a reserve for the last writes of running sessions.
//
// # Concepts
//
// A Watcher polls statfs(2) of one directory (the agent's state_dir). Free
// space below the watermark is an alarm, not a fault: the Watcher reports
// Low, the command inbox stops taking commands (it cancels its consumer, so
// commands wait in their queue), and everything else — the interlock, the
// trip monitor, the e-stop, the sessions already running — goes on. When
// free space is back above the watermark plus a margin (hysteresis, so the
// alarm does not flap) Low ends by itself.
//
// The reserve is a file of Opts.Reserve bytes in the directory, allocated
// with fallocate(2) while space is plentiful. When a write of the state file
// fails for want of space (Failed), the Watcher deletes it: the space it held
// is what the terminal steps of the running sessions commit into. It is
// allocated again once free space is back above the watermark.
//
// LocalWriteError tells a local write failure of the state file (ENOSPC,
// EDQUOT, EIO, EROFS, EFBIG, also when bbolt wrapped it with %s) from
// anything else: such an error is never a lost broker connection.
//
// # Caveats
//
// statfs reports the free space of the whole file system: another process
// can take it between two polls. The reserve is released only after a write
// has failed, so the write that failed is retried, once, by its caller.
// On a file system without fallocate the reserve is written with zeros.
package diskspace
