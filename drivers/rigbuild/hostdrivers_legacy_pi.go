//go:build linux && gpio_legacy && (arm || arm64)

package rigbuild

// With the build tag gpio_legacy on arm and arm64: the Raspberry Pi's
// drivers as host.Init registers them, the BCM283x GPIO (pulls set in its
// registers) and the board's header names (P1_11 ...).
import (
	_ "periph.io/x/host/v3/bcm283x"
	_ "periph.io/x/host/v3/rpi"
)
