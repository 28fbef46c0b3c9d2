//go:build linux && gpio_legacy

package rigbuild

// With the build tag gpio_legacy: the sysfs GPIO driver, for kernels older
// than 5.10 that have no v2 character device (hostdrivers_linux.go).
import (
	_ "periph.io/x/host/v3/sysfs"
)
