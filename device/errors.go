package device

import "errors"

// Sentinel errors shared by every driver. Drivers wrap them with %w and a prefix
// naming the instrument, so callers use errors.Is; the wrapped chain keeps the
// underlying I/O error too.
var (
	// ErrTimeout: the instrument did not answer within the deadline.
	ErrTimeout = errors.New("device: no answer within the deadline")
	// ErrChecksum: a frame arrived with a bad CRC or checksum.
	ErrChecksum = errors.New("device: bad checksum")
	// ErrFrame: a frame arrived that does not parse (wrong length, bad format,
	// unexpected echo, garbage).
	ErrFrame = errors.New("device: malformed frame")
	// ErrRejected: the instrument understood the request and refused it (a Modbus
	// exception, a NAK, an error reply).
	ErrRejected = errors.New("device: request rejected by the instrument")
	// ErrSensor: the instrument reports its sensor broken or its reading invalid
	// (thermocouple open, gauge sensor error, out of range).
	ErrSensor = errors.New("device: sensor fault")
	// ErrReadback: an output was written but the read-back does not match.
	ErrReadback = errors.New("device: read-back does not match the written value")
	// ErrOutOfRange: a value lies outside the instrument's own range; nothing was sent.
	ErrOutOfRange = errors.New("device: value outside the instrument's range")
	// ErrClosed: the instrument or its line has been closed.
	ErrClosed = errors.New("device: closed")
)
