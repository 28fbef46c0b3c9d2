// Package modbussim is the rig's Modbus firmware: the furnace temperature
// controller (unit 1) and the digital I/O module (unit 2) of
// configs/rig-protocols.md, served over Modbus TCP and over an RTU line (a pty),
// on top of a plant.Plant.
//
// It is written from the Modbus specification (Modbus Application Protocol
// V1.1b3, Modbus over Serial Line V1.02) and uses no Modbus library, because
// the simulator must be able to corrupt frames and go silent on request.
//
// # Concepts
//
// Handler executes one request PDU for a unit and appends the response PDU; it
// allocates nothing. TCPServer frames requests with the MBAP header (several
// clients, unit ids 1 and 2, any other unit → exception 0x0B). RTUSlave reads
// an RS-485-like line carrying both units: it finds the end of a request from
// its function code and byte count, or from a silence, checks the CRC-16/MODBUS
// and answers only its own units; broadcasts (unit 0) are executed unanswered.
//
// On a rig with several heated zones (plant.Zones: the two-zone rig) the RTU
// line is the zones' RS-485 line instead: zone i's Eurotherm 3200 at unit
// i + 1 (the sulfur zone's at 1, the growth zone's at 2), each answering only
// its address, a broadcast register write executed by all of them
// (Handler.HandleZone); on TCP unit 1 then answers exception 0x0B and unit 2
// is the I/O module as before.
//
// # Models
//
// Unit 1 serves the plant's furnace model, unit 2 its DIO model
// (plant.Opts.FurnaceModel, DIOModel): the sim maps of
// configs/rig-protocols.md, or the Eurotherm 3200 (function codes 03, 04, 06,
// 16; 03 and 04 read the same table) and the ADAM-6052 (01, 02, 03, 04, 05,
// 06, 15, 16) of configs/manuals/. The plant does the addressing; the handler
// dispatches through a target enum so that reads allocate nothing.
//
// # Faults
//
// `silent` (target furnace or dio): the request is still executed, but no
// reply is sent. `corrupt`: on TCP the byte count of a read reply is wrong (a
// write echo or exception has its last byte flipped instead); on RTU the CRC
// of the reply is wrong.
//
// # Caveats
//
// A pty ignores baud rate: the end-of-frame silence is a configurable wall
// time (RTUOpts.Silence, 20 ms by default), not 3.5 character times at
// 19200 baud.
package modbussim
