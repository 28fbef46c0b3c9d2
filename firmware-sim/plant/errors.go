package plant

import "errors"

// Errors returned by the register and instrument methods. Modbus front ends map
// ErrIllegalAddress to exception 02 and ErrIllegalValue to exception 03.
var (
	// ErrIllegalAddress: an address range not entirely in the register map.
	ErrIllegalAddress = errors.New("plant: illegal data address")
	// ErrIllegalValue: a value outside the register's range; nothing changed.
	ErrIllegalValue = errors.New("plant: illegal data value")
	// ErrUnknownGas: not one of ar, h2, h2s.
	ErrUnknownGas = errors.New("plant: unknown gas")
	// ErrUnknownFault: not a fault of the protocol document's table.
	ErrUnknownFault = errors.New("plant: unknown fault")
	// ErrBadTarget: a fault target that does not fit the fault.
	ErrBadTarget = errors.New("plant: bad fault target")
	// ErrUnknownPin: not a virtual GPIO pin.
	ErrUnknownPin = errors.New("plant: unknown gpio pin")
	// ErrInputPin: an attempt to drive an input pin.
	ErrInputPin = errors.New("plant: pin is an input")
	// ErrUnknownPrecursor: not a precursor the plant knows (MoO3, WO3).
	ErrUnknownPrecursor = errors.New("plant: unknown precursor")
	// ErrClosed: the plant has been closed.
	ErrClosed = errors.New("plant: closed")
)
