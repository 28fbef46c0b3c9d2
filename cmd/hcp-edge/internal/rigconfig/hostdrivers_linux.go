package rigconfig

// periph's host drivers that gpio.source: host needs, registered for
// openHostGPIO's driverreg.Init: the GPIO character device (gpioioctl) and
// sysfs on every Linux host, and on arm and arm64 the Raspberry Pi's
// (hostdrivers_pi.go). periph's host.Init imports every board driver it has
// (Allwinner, AM335x, BeagleBone, C.H.I.P., ODROID-C1, Pine64): ~0.45 MB of
// the armv7 binary for boards the rig does not use (docs/FOOTPRINT.md). On a
// Raspberry Pi the drivers that load are the same as with host.Init (the
// others find no board of theirs and skip): the same pin names, the same
// pulls. On another board its pins come from the character device.
import (
	_ "periph.io/x/host/v3/gpioioctl"
	_ "periph.io/x/host/v3/sysfs"
)
