package caller_test

import (
	"os"
	"testing"

	"hcp-edge/transport/amqp/amqptest"
)

// TestMain deletes the bench vhost (amqptest.Main) after the tests.
func TestMain(m *testing.M) { os.Exit(amqptest.Main(m)) }
