// Package serialsim serves the simulated rig's serial instruments on
// pseudo-terminals: three Alicat-style mass-flow controllers, a Pfeiffer
// TPG-style vacuum gauge and a Raman spectrometer, each on its own pty
// ("cable") with a stable symlink, exactly as configs/rig-protocols.md
// describes them.
//
// # Concepts
//
// Each instrument is a small firmware state machine fed with the bytes a client
// writes and answering on the same line. It sees the physics only through the
// [Plant] interface (satisfied by *plant.Plant) and records every write it
// receives, accepted or refused, with Plant.RecordWrite (device mfc-ar, mfc-h2,
// mfc-h2s, gauge or raman; via "serial").
//
// [StartAll] opens the five instruments under a run directory; [NewMFC],
// [NewGauge] and [NewRaman] open one each. Every instrument owns one goroutine
// reading its line (plus, on the spectrometer, one timer goroutine per running
// acquisition); its Close stops them and waits for them. Cancelling the context
// given at start stops the instrument too (Close must still be called to wait).
//
// # Protocol
//
//   - MFC: "<id>\r" poll, "<id>S<v>\r" or "<id>S <v>\r" setpoint, "<id>HC\r" hold,
//     "<id>C\r" cancel hold, "<id>VE\r" version; anything else "<id> ?". Commands
//     for other unit ids are ignored. Like a real Alicat, commands are not case
//     sensitive; a stray LF is ignored.
//   - Gauge: mnemonics PR1, UNI, UNI,n, TID, ERR ended by CR (LF optional),
//     answered ACK or NAK + CR LF; ENQ sends the data of the last accepted
//     command (again at every ENQ). Spaces are ignored and ETX clears the input,
//     as on a TPG 26x.
//   - Raman: *IDN?, ACQ <ms>, STOP; lines end with CR LF (either CR or LF ends a
//     command). The acquisition lasts ms/time-scale of wall-clock time. The
//     spectrum shows the plant's Film: the silicon line at 520.7 cm⁻¹, and the
//     E2g and A1g bands of each material grown (MoS2Peaks; WS2Peaks, with
//     the literature it follows in ws2.go), with shot noise.
//
// # Faults
//
// The plant's faults are read at every reply: "silent" (target = device) makes
// the instrument read and discard its input without acting or answering;
// "corrupt" garbles its replies: digits replaced by non-digit characters on the
// MFC and the gauge (a format check catches it), a bad CRC or a mangled data line
// in the Raman data block. "mfc-stuck-open" is the plant's: it shows in
// MFCState (flow above full scale) and the frame gets status MOV.
//
// # Caveats
//
// A pty ignores baud rate and parity. Replies left unread by a client stay in
// the pty's buffer until the next reader drains them; a client that never reads
// while asking for many spectra can fill that buffer and block the instrument's
// write (and so its Close) until it reads.
//
// The pty master from ptyline is in blocking mode (creack/pty calls Fd on it),
// so read deadlines are ignored and Close does not interrupt a pending read
// while a client holds the slave open: stopping therefore writes one byte
// into the slave side to wake the reader, and acquisitions are timed by their
// own goroutine rather than by read deadlines.
package serialsim
