package amqp_test

import (
	"testing"

	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/wire"
)

// eventTap is the caller's (alpha's) event queue, declared, purged and
// consumed by alpha's own login — what the provisioned broker lets a caller
// do: the key to publish under (the callee publishes with conn) and the
// deliveries. The queue is deleted at cleanup.
func eventTap(t *testing.T, _ *amqp091.Connection, prefix string) (string, <-chan amqp091.Delivery) {
	t.Helper()
	ch, err := amqptest.Dial(t, amqptest.AlphaURL()).Channel()
	if err != nil {
		t.Fatal(err)
	}
	q, _ := wire.EventQueue(amqptest.AlphaID)
	if _, err := ch.QueueDelete(q, false, false, false); err != nil { // an earlier test's, with its arguments
		t.Fatal(err)
	}
	if err := tamqp.DeclareCallerQueue(ch, tamqp.CallerQueueOpts{CallerID: amqptest.AlphaID}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.QueueDelete(q, false, false, false) })
	ds, err := ch.Consume(q, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return amqptest.AlphaID + "." + prefix, ds
}
