package amqp_test

import (
	"strings"
	"testing"

	amqp091 "github.com/rabbitmq/amqp091-go"

	tamqp "github.com/hcp-edge/hcp-edge/transport/amqp"
	"github.com/hcp-edge/hcp-edge/transport/wire"
)

// eventTap declares the exchanges and a private auto-delete queue on conn,
// bound to hcp.events under a routing key of its own (prefix + the queue's
// name), and consumes it: the key to publish under and the deliveries.
func eventTap(t *testing.T, conn *amqp091.Connection, prefix string) (string, <-chan amqp091.Delivery) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := tamqp.DeclareExchanges(ch); err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := prefix + "." + strings.ReplaceAll(q.Name, ".", "-")
	if err := ch.QueueBind(q.Name, key, wire.EventsExchange, false, nil); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key, ds
}
