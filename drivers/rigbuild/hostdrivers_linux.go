package rigbuild

// periph's host driver that gpio.source: host needs, registered for
// openHostGPIO's driverreg.Init: the kernel's GPIO character device
// (gpioioctl, the v2 uAPI of Linux 5.10 and later). It names the lines as the
// kernel does (GPIO17 on a Raspberry Pi), sets the pulls through the kernel
// (bias flags) and holds each line it opens, so no other process drives the
// relay while the agent runs. It is the interface the kernel supports on
// every board, the Raspberry Pi 5 among them.
//
// The older drivers (sysfs, and on arm and arm64 the Raspberry Pi's register
// driver bcm283x with the header names P1_11 ...) are built only with the
// tag gpio_legacy (hostdrivers_legacy.go): ~0.26 MB of the armv7 binary for
// kernels older than 5.10 (docs/FOOTPRINT.md).
import (
	_ "periph.io/x/host/v3/gpioioctl"
)
