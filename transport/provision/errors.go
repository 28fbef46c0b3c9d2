package provision

import "errors"

// ErrOverlap is returned by Derive when two roles of a Spec would share a
// broker user or a queue: one login must never hold two callers' (or the
// callee's and a caller's) rights.
var ErrOverlap = errors.New("provision: overlapping users")

// ErrInvalid is returned by Derive for a Spec with an empty or invalid vhost,
// user or id.
var ErrInvalid = errors.New("provision: invalid spec")

// ErrNotConverged is returned by Apply when the broker's state read back
// after the changes still differs from the grants.
var ErrNotConverged = errors.New("provision: broker state did not converge")
