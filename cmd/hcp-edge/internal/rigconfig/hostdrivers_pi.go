//go:build linux && (arm || arm64)

package rigconfig

// The Raspberry Pi's drivers: the BCM283x GPIO (pulls set in its
// registers) and the board's header names (P1_11 ...), as host.Init
// registers them on arm and arm64.
import (
	_ "periph.io/x/host/v3/bcm283x"
	_ "periph.io/x/host/v3/rpi"
)
