// Package wallclock is the agent's process clock: the wall time it stamps
// records with, and the monotonic time it judges durations by.
//
// # Concepts
//
// A Raspberry Pi has no real-time clock: it boots with the time saved at
// shutdown (fake-hwclock) or 1970 and steps to the right time when NTP
// synchronises, by hours or days, often minutes after the agent started.
// A Clock separates the two uses of time so that such a step judges
// nothing:
//
//   - Now is the wall clock: the stamp of a record, an event, an audit
//     entry, a token's iat. It may step.
//   - Elapsed and Mono are the monotonic clock of this process: how long
//     something took, how old a reading is, how long a token has lived.
//     No step of the wall clock moves them.
//   - MinAge judges a wall stamp that was stored (a de-duplication entry,
//     a revocation's expiry) without letting a forward step age it: it is
//     the smaller of the stamp's age by the wall clock and its age by the
//     monotonic clock of this process (see MinAge). MaxAge is the larger:
//     the end of a permission is judged by it, so that a step back never
//     keeps one open longer.
//
// The rule across restarts: a stamp written by an earlier process has no
// monotonic reading anyone can use, so its age is the wall clock's word —
// the wall time at this process's start minus the stamp, plus the
// monotonic time since. A step of the wall clock while this process runs
// never makes such a stamp older than that, and a step back makes it
// younger (kept longer).
//
// # Tests
//
// Step shifts the wall clock of one Clock by a duration, in-process, as NTP
// would: Now moves, Elapsed and Mono do not. While a step is set, Now
// returns times without a monotonic reading (as if read back from disk),
// so code that judged a duration by subtracting two Now values would see
// the step in a test even where Go's monotonic reading would have hidden
// it in production. NewFrom takes a fake time source for deterministic
// tests; the source is then both the wall and the monotonic clock.
//
// # Caveats
//
// Go's time.Time from time.Now carries a monotonic reading, and Sub,
// Before and After between two such values use it; Round(0), Truncate,
// UTC, In and Local strip it, and a value that was serialised (JSON,
// msgp, a JWT NumericDate) has none. Judge such values with MinAge, never
// by subtracting them from Now.
package wallclock
