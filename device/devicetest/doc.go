// Package devicetest holds fakes of the device contracts for unit tests at
// package boundaries, a frame record/playback fake, an injectable clock, and the
// helpers that decide whether a test needing a peer program skips or fails.
//
// # Fakes
//
// FakeFurnace, FakeFlow, FakeGauge, FakeSwitch, FakeInput and FakeSpectrometer
// implement the contracts of device/instruments.go. Each embeds a Recorder:
// every call is recorded (Calls, Count, Halted), SetErr injects an error into a
// method by name, and a done context fails a call with device.ErrTimeout. State
// is set with the fakes' own setters (SetProcessValue, SetMeasured, SetReading,
// Stick, Set, SetSpectrum) and the fakes enforce the contract's rules (a flow
// above full scale is device.ErrOutOfRange; a stuck switch is
// device.ErrReadback; a broken thermocouple is device.ErrSensor).
//
// # Clock
//
// Clock (Now, After, NewTicker) is the clock abstraction to inject; RealClock
// is package time. FakeClock stands still until Advance, which fires due timers
// and tickers in deadline order before it returns; BlockUntil waits until the
// code under test has armed its timers, so tests need no sleeps.
//
// # Frames
//
// Playback and Record work like periph's conntest, on an io.ReadWriter (a
// serial line, a TCP connection): record a driver's exchange against a real
// instrument or the simulator once with Record, then replay its frames with
// Playback in a unit test. Playback fails the test on an unexpected write,
// returns ErrNoResponse (wrapping os.ErrDeadlineExceeded) when the instrument
// is silent, can deliver replies in pieces (ReadChunk), and its Close reports
// frames left unconsumed.
//
// # Peers
//
// Tests that need something outside the Go toolchain (mbpoll, pymodbus, socat,
// RabbitMQ) call MissingPeer or LookPath. Under `make test` they skip with a loud
// reason; under `make ci`, which sets HCP_REQUIRE_PEERS=1, they fail instead.
package devicetest
