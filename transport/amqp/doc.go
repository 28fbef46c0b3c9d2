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
// # Caveats
//
// The reconnect supervisor (capped backoff with jitter, NotifyBlocked), TLS,
// the command inbox and the caller client are not here yet (issue 5).
// Messages are published without the mandatory flag: an event for a caller
// whose queue does not exist is confirmed and dropped by the broker.
package amqp
