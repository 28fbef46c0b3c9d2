// Package control is the daemon's local control socket: a unix domain
// socket (mode 0660) on which the technician's CLI asks for an e-stop, the
// status, a reset or arming, and submits and steers sessions. Nothing on
// the network reaches it.
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
// {operator} (required); the session operations submit {task, watch},
// approve, deny, abort, pause and resume {id, operator, reason}, answer
// {id, checkpoint, value, operator} (a recipe's question), sessions
// {all} and artifact {uri, operator}; access_list {all}, access_approve
// {id, operator, for}, access_deny and access_withdraw {id, operator,
// reason}; whoami {operator}; audit_verify (the audit log's hash
// chain) and audit_replay {id, operator} (one session's audit entries);
// tools (the tool pipeline's per-tool statistics). The result's shape
// belongs to the operation.
//
// # Identity
//
// The server reads the credentials of the process at the other end of
// each connection from the kernel (SO_PEERCRED: uid, gid, pid) and puts
// them in Request.Peer, which is never decoded from the request line: a
// client cannot claim another user's identity. The handler decides what
// that user may do (cmd/hcp-edge/internal/operators); the "operator" field
// is only a display name that must belong to the peer. whoami {operator}
// asks who the daemon sees. The peer's login uid (/proc/PID/loginuid, kept
// by the kernel across sudo and su) is read too, for the audit only
// (Peer.LoginUID): it never decides a role.
//
// # Streaming
//
// A request with "watch": true to a StreamHandler is answered, after the
// acknowledgement, by any number of intermediate lines
//
//	{"op":"submit","stage":"event","ok":true,"result":{...}}
//
// before the final reply. Such a connection has no overall deadline: its
// context ends when the client hangs up (the server reads the connection
// for EOF) or when Shutdown begins, so a watcher never holds up a
// shutdown. Stream is the client; Do skips intermediate lines.
//
// # Caveats
//
// Each connection has a deadline (Opts.ConnTimeout) covering the read of
// the request and the handling; a client that sends nothing is dropped after
// Opts.ReadTimeout. Shutdown stops intake, waits for the operations in
// progress (an e-stop is never cut short by a shutdown unless its context
// ends) and then returns.
package control
