package atrest

import (
	"errors"
	"fmt"
	"io/fs"
)

// Sentinel errors of the package.
var (
	// ErrNotSealed: the blob does not start with the magic of a sealed
	// blob.
	ErrNotSealed = errors.New("atrest: not a sealed blob")
	// ErrVersion: a sealed blob of a format version this build does not
	// know.
	ErrVersion = errors.New("atrest: unknown sealed format version")
	// ErrTruncated: shorter than a header and an authentication tag.
	ErrTruncated = errors.New("atrest: sealed blob truncated")
	// ErrWrongKey: the blob was sealed under another key (matched by
	// every *WrongKeyError).
	ErrWrongKey = errors.New("atrest: sealed under another key")
	// ErrTampered: the blob fails authentication under the right key: it
	// was altered, or it was sealed for another session, purpose or name.
	ErrTampered = errors.New("atrest: sealed blob fails authentication (altered, or sealed for another session, purpose or name)")
	// ErrBinding: a Binding without a session id or a purpose.
	ErrBinding = errors.New("atrest: a binding needs a session id and a purpose")
	// ErrNoKey: sealed data, and no at-rest key to open it with.
	ErrNoKey = errors.New("atrest: no at-rest key configured")
	// ErrKeyFormat: a key that is not 32 bytes (64 hex digits in a key
	// file), or is all zero.
	ErrKeyFormat = errors.New("atrest: a key is 64 hex digits (32 random bytes)")
	// ErrKeyPermissions: a key file that is not a regular file readable by
	// its owner only (0600 or stricter).
	ErrKeyPermissions = errors.New("atrest: a key file must be a regular file readable by its owner only (0600 or stricter)")
)

// WrongKeyError is a blob sealed under another key than the one at hand.
type WrongKeyError struct {
	Have string // the id of the key at hand
	Want string // the id of the key the blob was sealed with
}

func (e *WrongKeyError) Error() string {
	return fmt.Sprintf("atrest: sealed under key %s, the key at hand is %s", e.Want, e.Have)
}

// Is makes errors.Is(err, ErrWrongKey) true.
func (e *WrongKeyError) Is(target error) bool { return target == ErrWrongKey }

// KeyError is a key file that cannot be used: it unwraps to ErrKeyFormat,
// ErrKeyPermissions or the file system's error (fs.ErrNotExist,
// fs.ErrPermission...).
type KeyError struct {
	Path   string
	Mode   fs.FileMode // the file's mode, when it could be read
	Reason string      // what is wrong with the content (ErrKeyFormat)
	Err    error
}

func (e *KeyError) Error() string {
	switch e.Err {
	case ErrKeyPermissions:
		return fmt.Sprintf("atrest: key file %s has mode %v: it must be a regular file readable by its owner only (chmod 600 %s)", e.Path, e.Mode, e.Path)
	case ErrKeyFormat:
		return fmt.Sprintf("atrest: key file %s: %s: it must hold 64 hex digits, 32 random bytes (umask 077; openssl rand -hex 32 > %s)", e.Path, e.Reason, e.Path)
	}
	return fmt.Sprintf("atrest: key file %s: %v", e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *KeyError) Unwrap() error { return e.Err }
