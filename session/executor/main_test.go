package executor

import (
	"os"
	"testing"

	"hcp-edge/device/devicetest"
)

// TestMain lets four of the package's parallel tests run at once: the
// end-to-end runs against the simulator wait on its scaled clock far more
// than they compute (the five WS2 temperatures, the leak checks).
func TestMain(m *testing.M) {
	devicetest.WidenParallel(4)
	os.Exit(m.Run())
}
