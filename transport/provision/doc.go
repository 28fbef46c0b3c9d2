// Package provision derives a RabbitMQ broker's users and permissions from an
// HCP agent's configuration and applies them, so that the broker itself keeps
// callers apart (DESIGN.md §7: the broker is a security boundary).
//
// # Concepts
//
// A Spec names the virtual host, the callee (its broker user and callee_id)
// and the callers (broker user → caller_id) the agent's gate knows. Derive
// turns it into Grants, the narrowest RabbitMQ permissions (configure, write
// and read regular expressions per user and vhost) and topic permissions
// (RabbitMQ's topic authorisation on hcp.events):
//
//   - the callee may configure the two exchanges and its own command queue
//     hcp.cmd.{callee_id}, read (consume) only that queue and bind it to
//     hcp.commands, and write (publish) only to hcp.events;
//   - a caller may configure (declare, delete) only its own event queue
//     hcp.evt.{caller_id}, bind it to hcp.events only with routing keys that
//     start with "{caller_id}." (topic permission, read), consume and purge
//     only that queue, and publish only to hcp.commands — and to hcp.commands
//     only when the gate lets it use at least one capability of this callee.
//     It may not publish onto hcp.events (no write permission, and a topic
//     permission that matches no key), nor through the default exchange.
//
// Diff compares Grants with the broker's State (read from
// `rabbitmqctl export_definitions`) and lists the Changes; Apply makes them
// and reads the state back to check that nothing is left to change.
//
// # Why rabbitmqctl and not the management HTTP API
//
// rabbitmqctl ships with every RabbitMQ server and needs no plugin (the
// management plugin is often disabled, as on the development broker here);
// it authenticates with the node's Erlang cookie, so no administrator password
// has to live in the agent's configuration or on the command line; and it
// reads the whole state in one structured document (export_definitions) and
// applies the vhost, permissions and topic permissions in one
// import_definitions call. The cost: it runs on the broker host (or a host
// holding the cluster's cookie), as root or the rabbitmq user.
//
// # Caveats
//
//   - RabbitMQ applies topic permissions to topic exchanges only.
//     hcp.commands is a direct exchange (L1), so the broker cannot restrict
//     the routing key a caller publishes commands with: a caller allowed on
//     one callee of a vhost can address every callee of that vhost. Each
//     callee's gate refuses such a task (unauthorized, from the
//     broker-validated user_id); a lab that needs the broker itself to keep
//     callers off a callee gives that callee a vhost of its own. Derive sets
//     no topic permission on hcp.commands: it would have no effect.
//   - Passwords are not managed: a user that does not exist yet is created
//     without one (it can log in only with a client certificate, EXTERNAL);
//     give it a password with `rabbitmqctl change_password` or
//     Options.Passwords. Existing users keep theirs.
//   - Other users with permissions on the vhost are reported (Diff's
//     warnings), never changed: they may belong to another callee.
//   - No user may carry the impersonator tag: RabbitMQ would then accept any
//     user_id it publishes with. Diff removes the tag from the users it
//     provisions.
package provision
