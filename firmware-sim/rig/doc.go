// Package rig assembles the simulated rig: the plant, Modbus TCP, the Modbus
// RTU line on a pty, the control socket and (through a hook) the serial
// instruments, all in one run directory. cmd/rig-sim is a thin wrapper around
// it, and tests can run a whole rig in-process with it.
//
// # Concepts
//
// Start brings everything up in order and tears down what it started when a
// step fails; Close stops everything in reverse order, waits for every
// goroutine and removes the sockets and links it made.
package rig
