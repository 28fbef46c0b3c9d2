// Package devicetest holds fakes of the device contracts for unit tests at
// package boundaries, a frame record/playback fake, an injectable clock, and the
// helpers that decide whether a test needing a peer program skips or fails.
//
// # Peers
//
// Tests that need something outside the Go toolchain (mbpoll, pymodbus, socat,
// RabbitMQ) call MissingPeer or LookPath. Under `make test` they skip with a loud
// reason; under `make ci`, which sets HCP_REQUIRE_PEERS=1, they fail instead.
package devicetest
