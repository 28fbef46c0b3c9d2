// Package operators decides who may do what on the control socket: the
// identity of a request comes from the kernel (the peer's uid, read with
// SO_PEERCRED by package control), never from a name typed on a command
// line, and the configuration's operators section grants roles to OS users.
//
// # Concepts
//
// An operator entry maps a display name (what --operator NAME carries, and
// what the caller and the logs read) to one OS user (a name or a numeric
// uid) and a list of roles:
//
//	operators:
//	  olga: {user: olga, roles: [operate, approve]}
//	  rene: {user: "1002", roles: [approve, release]}
//
// The roles are RoleEStop (held by anyone who can reach the socket; it is
// never checked), RoleOperate (arm, reset, submit, pause, resume, abort,
// takeover, handback), RoleApprove (approve and deny tasks awaiting a human
// approval), RoleRelease (decide T4 access requests) and RoleAdmin (reserved
// for broker provisioning and a configuration reload; no socket operation
// needs it today). Root (uid 0) holds every role and may use any display
// name.
//
// A display name that belongs to another OS user is refused (ErrForbidden),
// and so is one that is not configured at all while the section is
// present. Without the section (Table.Configured false) only root holds
// roles: every other member of the socket's group keeps e-stop and the
// read-only operations, and the daemon says so loudly at start.
//
// # Caveats
//
// OS users are resolved once, when the table is built (New): a user
// created or renumbered afterwards takes effect at the next start. The
// kernel's answer is about the process at the other end of the socket at
// connect time; a root process that passes a connected socket on lends its
// identity with it, as with any SO_PEERCRED check.
package operators
