// Package amqp puts the HCP L1 wire on a RabbitMQ broker with
// github.com/rabbitmq/amqp091-go: the L1 topology and the publisher that
// drains the durable outbox (transport/outbox) with pipelined publisher
// confirms.
//
// # Topology
//
// DeclareTopology declares, idempotently, hcp.commands (direct, durable),
// hcp.events (topic, durable) and the callee's command queue hcp.cmd.{callee_id}
// (durable; a quorum queue when asked) bound with the callee id.
// DeclareCallerQueue declares a caller's hcp.evt.{caller_id} bound with
// {caller_id}.#, with the message TTL and max length L1 recommends.
//
// # Queue types
//
// DeclareCalleeTopology and DeclareCallerTopology (through CalleeDeclarer and
// CallerDeclarer, the Supervisor's DeclareConn) ask for quorum queues: they
// are replicated over a cluster's nodes and survive the loss of a minority.
// The command queue gets x-delivery-limit and dead-letters into hcp.dlx →
// hcp.dlq.{callee_id} (quorum, 7-day TTL, 10,000 messages at most), so a
// command that keeps coming back unacked, or that the inbox rejects, ends
// there instead of being redelivered forever. Event queues have no delivery
// limit (a caller returns events held behind a gap on every reconnect). A
// queue's type cannot change: when the broker refuses the quorum
// declaration (PRECONDITION_FAILED: a classic queue of that name exists, or
// one with other arguments) the existing queue is declared passively and
// used as it is; when the queue does not exist and the broker still refuses,
// it is declared classic. Either is logged as a warning with the broker's
// words at the first connect and whenever the outcome changes. Queues are
// never deleted by the agent: a queue may hold commands or events.
//
// # Publishing
//
// Publisher.Run drains the outbox over one connection: it publishes in key
// order with up to Window confirms outstanding
// (PublishWithDeferredConfirmWithContext), waits for them in order with a
// deadline (WaitContext), and deletes each message once the broker has
// acknowledged it. A nack, a timeout or a closed channel ends Run with an
// error: the outcome of everything in flight is unknown, so a supervisor
// reconnects and calls Run again, which republishes from the outbox head with
// the same message_id (receivers de-duplicate). Delivery tags are never matched
// across channels.
//
// # Supervisor
//
// Supervisor owns the connection: it dials (amqps with CA, client
// certificate and key from TLSConfig), re-declares the topology on every
// connect, runs the Publisher and the Workers (the command inbox, a caller's
// consumer) on it, watches NotifyClose and NotifyBlocked (buffered and
// drained; a blocked connection pauses publishing), and reconnects with capped
// exponential backoff and jitter (Backoff, 1 s → 60 s by default; Rand and Dial
// are injectable). State reports connected, blocked and the outbox backlog
// for metrics; Close stops everything and waits.
//
// # Failover
//
// SupervisorOpts.URLs lists a cluster's endpoints (same scheme and login for
// all: a TLS uplink never falls over to plaintext, and the user_id property
// is the login). The Supervisor starts at a random endpoint (a fleet spreads
// over the nodes); one round tries every endpoint once, back to back; a
// round that fails entirely waits Backoff.Delay(rounds) before the next.
// After a connection is lost it waits the first, jittered backoff step and
// starts at the following endpoint, so the node that dropped it is tried
// last. A connect counts only once the topology is declared within
// DeclareTimeout (a node cut off from the majority accepts connections but
// cannot declare quorum queues). Then the publisher drains the outbox from
// its head, in order, and the Workers consume again. State names the
// endpoint in use.
//
// # Inbox
//
// Inbox consumes hcp.cmd.{callee_id} with manual ack and a prefetch. A
// delivery without user_id is refused (task_rejected unauthorized); one that
// fails strict decoding or the property check is rejected without requeue
// and answered with task_rejected invalid_input (request_refused for an
// extension request), naming the field, when its message_id can be read and
// its login maps to a caller (InboxOpts.CallerOf; without a mapping, the
// payload's caller_id); InboxOpts.Refused sees every refusal in the
// transaction of its answer. A message_id already in the persisted window gets its
// recorded replies again; otherwise the Engine decides, and its replies, the
// window entry and the engine's own Outcome.Record commit in one bbolt
// transaction before the ack. Group commit (group.go, the outbox
// committer's approach): the deliveries that arrive together — up to
// InboxOpts.GroupMax, each within GroupWait of the last; a prefetch of
// DefaultPrefetch keeps many in flight — are decided in order and share
// that transaction, each acked only after it has committed; if it fails,
// each is committed again alone, so one faulty command fails only itself.
//
// # A full disk
//
// A write of the state file that fails locally (InboxOpts.LocalError: no
// space, an I/O error) is not a broker fault: the delivery is held, unacked,
// on its channel and handled again once InboxOpts.Intake opens (requeued
// once past HoldMax), and Run goes on. While Intake is closed (the state
// directory below its free-space watermark, internal/diskspace) the inbox
// cancels its consumer and waits on the same channel: commands wait ready
// in the queue, nothing is returned, so nothing counts toward a quorum
// queue's x-delivery-limit (RabbitMQ counts every return: a nack with
// requeue, and the unacked deliveries of a channel that closes). The
// Publisher treats a failed deletion of confirmed messages alike
// (PublisherOpts.LocalError): the outbox retries it in a later commit.
//
// # Caveats
//
// Messages are published without the mandatory flag: an event for a caller
// whose queue does not exist is confirmed and dropped by the broker. An
// Engine error requeues a delivery once and drops it when it was already a
// redelivery. Each outbox Append is one fsynced commit, which bounds the
// outbox's event rate well below a bare publisher's (see the benchmarks).
package amqp
