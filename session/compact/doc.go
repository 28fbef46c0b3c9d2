// Package compact gives the pages that retention freed inside the state
// file back to the file system: bbolt reuses freed pages but never
// shrinks its file.
//
// # Concepts
//
// File rewrites the bbolt file at a path with bbolt's Compact into a new
// file beside it (path + ".compact"), checks the copy (bbolt's page check
// and the state file's own check, store.Check: the audit chain, every
// session's events, checkpoints and audited transitions), fsyncs it, gives
// it the original's mode and owner, renames it over the original and
// fsyncs the directory. Until that rename the original is not written;
// after it, it is the checked copy. Any failure removes the copy and
// leaves the original as it was.
//
// # Refusals
//
// It holds the file's lock (bbolt's flock, shared) for the whole rewrite,
// so it refuses a file that a running daemon holds (ErrInUse, after
// Opts.Timeout). A file that does not open or fails a check is ErrDamaged
// (nothing is written). Too little free space beside the file for its
// pages in use, or a write that fails for want of space, is ErrNoSpace.
//
// # Caveats
//
// A daemon started during the rewrite waits on the lock (its own timeout,
// one second) and fails to start; one that got the file's lock between
// the rename and the release of ours would hold the replaced inode: stop
// the daemon's unit (systemctl stop) before compacting, as the command's
// help says.
package compact
