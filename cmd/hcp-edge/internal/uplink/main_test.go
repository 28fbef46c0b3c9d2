package uplink

import (
	"os"
	"testing"
	"time"

	"hcp-edge/transport/amqp/amqptest"
)

// hangGuard bounds every wait of these tests: a guard against hangs, never a
// performance assertion.
const hangGuard = 20 * time.Second

func TestMain(m *testing.M) {
	os.Exit(amqptest.Main(m)) // m.Run, then the bench vhost deleted
}
