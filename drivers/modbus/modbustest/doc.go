// Package modbustest provides an in-memory Modbus device and a small Modbus
// TCP server for tests of drivers built on package modbus.
//
// # Concepts
//
// A Server holds, per unit id, four tables (coils, discrete inputs, holding
// and input registers) of fixed size, and answers FC 01–06, 15 and 16 from
// them like a simple device: addresses outside a table give exception 02, an
// unknown function code exception 01, a write refused by the Validate hook
// exception 03, an unknown unit id no answer. It implements modbus.Handler, so
// modbus.NewInMemory(srv, opts) gives a Bus that talks to it without sockets;
// ServeTCP serves it (or any Handler) over a real MBAP listener.
//
// # Caveats
//
// This is a test double written from the Modbus specification, not from
// firmware-sim: drivers must also be tested against the simulator (HIL) and
// a foreign peer (pymodbus).
package modbustest
