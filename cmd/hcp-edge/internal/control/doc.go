// Package control is the daemon's local control socket: a unix domain
// socket (mode 0660) on which the technician's CLI asks for an e-stop, the
// status, a reset or arming. Nothing on the network reaches it.
//
// # Protocol
//
// One request per connection: a JSON object on one line (at most
// MaxRequest bytes), e.g.
//
//	{"op":"estop","operator":"alice"}
//
// The server answers at once with an acknowledgement line
//
//	{"op":"estop","stage":"accepted","ok":true}
//
// and, once the operation has finished, with the final reply line
//
//	{"op":"estop","stage":"done","ok":true,"result":{...}}
//
// or {"ok":false,"error":"..."}. The acknowledgement lets a client tell a
// daemon that is alive but busy from one that is hung (a stopped process's
// listening socket still accepts connections): Do waits AckTimeout for it
// and returns ErrNoAck otherwise, ErrNoDaemon when nothing listens.
//
// Operations: estop {operator} drives every output safe and replies once
// the read-backs confirm; status; reset {operator} (required); arm
// {operator} (required). The result's shape belongs to the operation.
//
// # Caveats
//
// Each connection has a deadline (Opts.ConnTimeout) covering the read of
// the request and the handling; a client that sends nothing is dropped after
// Opts.ReadTimeout. Shutdown stops intake, waits for the operations in
// progress (an e-stop is never cut short by a shutdown unless its context
// ends) and then returns.
package control
