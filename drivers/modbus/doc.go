// Package modbus is the Modbus client of the drivers: a Bus per serial line or
// TCP connection, shared by every unit id on it, built on
// github.com/goburrow/modbus v0.1.0 (its client and packagers) with our own
// transporters, and RegisterSpec, the configured layout of a value.
//
// # Concepts
//
// A Bus (New for TCP or RTU, NewInMemory for tests) runs one transaction at a
// time under its lane (package lane: in order of arrival, a halt marked
// device.WithUrgent before every routine transaction waiting) and sets the
// unit id inside it. Every method takes a
// context; the earlier of its deadline and Opts.Timeout bounds each attempt
// and is put on the socket or serial read, and cancelling the context
// interrupts the I/O. Reads and single-register/single-coil writes are retried
// up to Opts.Retries times; multiple writes and Modbus exceptions never are.
//
// A RegisterSpec (table, address, int16/uint16/int32/uint32/float32, byte and
// word order, scale, offset) decodes and encodes engineering values; Encode
// refuses a value that does not fit with device.ErrOutOfRange, so nothing is
// sent.
//
// # Errors
//
// A Modbus exception is an *Exception (unit, function, address, code) that
// wraps device.ErrRejected. A missing or incomplete reply wraps
// device.ErrTimeout; a bad CRC device.ErrChecksum; a reply that does not parse
// device.ErrFrame; a closed bus device.ErrClosed. Messages name the bus, unit,
// function code and address.
//
// # Protocol
//
// Modbus Application Protocol v1.1b3 and Modbus over Serial Line v1.02
// (https://modbus.org/specs.php); the rig's maps are in
// configs/rig-protocols.md.
//
// # Caveats
//
// Known goburrow v0.1.0 bugs and what this package does about them:
//   - its RTU handler is not goroutine-safe: one lane per Bus;
//   - its RTU transporter misreads exception replies split over two reads as
//     CRC errors (upstream #81) and sleeps instead of reading: it is not used;
//     the RTU packager runs over our transporter on go.bug.st/serial, which
//     reads until the length computed from the function code, exception bit
//     and byte count (RTUReplyLength), or a silence of Opts.FrameGap for
//     unknown function codes, treating go.bug.st's (0, nil) read timeout as
//     "nothing yet";
//   - its TCP transporter never reconnects and leaves a late reply in the
//     socket after a timeout: our TCP transporter closes the connection after
//     every failure that is not an exception, and the next call redials.
//
// Register reads over TCP (FC 03, 04: every poll) skip goburrow's client and
// packager, which allocate five buffers and structs an exchange: the
// transport encodes the request into a buffer of its own, reads the reply
// into another and checks it as goburrow does (transaction id, unit,
// function or its exception, byte count), under the same lane, deadline,
// retries, typed errors and reconnection as every other transaction.
//
// After a failed RTU exchange the line is drained until silent for one
// FrameGap, so a late reply is not read as the next answer. A reply later
// than that (a loaded host, a slow unit) that answers another unit or
// function is skipped, complete and with a valid CRC, and the exchange
// reads on within its deadline; one to the same unit and function cannot
// be told from the answer. Broadcast (unit 0) is refused on RTU.
package modbus
