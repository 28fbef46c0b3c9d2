package modbus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"hcp-edge/device"
)

// Exception codes defined by the Modbus application protocol.
const (
	ExceptionIllegalFunction    byte = 0x01
	ExceptionIllegalAddress     byte = 0x02
	ExceptionIllegalValue       byte = 0x03
	ExceptionDeviceFailure      byte = 0x04
	ExceptionAcknowledge        byte = 0x05
	ExceptionDeviceBusy         byte = 0x06
	ExceptionGatewayPath        byte = 0x0A
	ExceptionGatewayTargetNoAns byte = 0x0B
)

// Exception is a Modbus exception reply: the device understood the request and
// refused it. It wraps device.ErrRejected, so errors.Is(err, device.ErrRejected)
// holds; use errors.As to read the code. Exceptions are never retried.
type Exception struct {
	Bus      string // bus name, e.g. "tcp 127.0.0.1:5020"
	Unit     byte   // unit id the request was addressed to
	Function byte   // function code of the request (without the 0x80 bit)
	Address  uint16 // first address of the request
	Code     byte   // exception code (ExceptionIllegalAddress, ...)
}

func (e *Exception) Error() string {
	return fmt.Sprintf("modbus %s unit %d fc %02d addr %d: exception %d (%s): %v",
		e.Bus, e.Unit, e.Function, e.Address, e.Code, exceptionName(e.Code), device.ErrRejected)
}

// Unwrap returns device.ErrRejected.
func (e *Exception) Unwrap() error { return device.ErrRejected }

func exceptionName(code byte) string {
	switch code {
	case ExceptionIllegalFunction:
		return "illegal function"
	case ExceptionIllegalAddress:
		return "illegal data address"
	case ExceptionIllegalValue:
		return "illegal data value"
	case ExceptionDeviceFailure:
		return "server device failure"
	case ExceptionAcknowledge:
		return "acknowledge"
	case ExceptionDeviceBusy:
		return "server device busy"
	case ExceptionGatewayPath:
		return "gateway path unavailable"
	case ExceptionGatewayTargetNoAns:
		return "gateway target device failed to respond"
	}
	return "unknown"
}

// frameError marks a reply that does not parse; it wraps device.ErrFrame.
func frameError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{device.ErrFrame}, args...)...)
}

// checksumError marks a reply with a bad CRC; it wraps device.ErrChecksum.
func checksumError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{device.ErrChecksum}, args...)...)
}

// timeoutError marks a missing or incomplete reply; it wraps device.ErrTimeout
// and, when not nil, the I/O error that reported it.
func timeoutError(cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cause == nil {
		return fmt.Errorf("%w: %s", device.ErrTimeout, msg)
	}
	return fmt.Errorf("%w: %s: %w", device.ErrTimeout, msg, cause)
}

// classify turns a transport error into one wrapping a device sentinel. Errors
// that already wrap a sentinel, and context cancellation, pass unchanged.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, device.ErrTimeout), errors.Is(err, device.ErrFrame),
		errors.Is(err, device.ErrChecksum), errors.Is(err, device.ErrRejected),
		errors.Is(err, device.ErrClosed), errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return timeoutError(err, "no reply")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return timeoutError(err, "no reply")
	}
	return err
}

// retryable reports whether a failed transaction may be repeated: not for an
// exception, a closed bus or a caller that gave up.
func retryable(err error) bool {
	var ex *Exception
	switch {
	case errors.As(err, &ex), errors.Is(err, device.ErrClosed),
		errors.Is(err, context.Canceled), errors.Is(err, device.ErrOutOfRange):
		return false
	}
	return true
}
