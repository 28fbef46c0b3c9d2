package regmap

import (
	"context"
	"fmt"

	"hcp-edge/drivers/profile"
)

// HeaterEnabled reads the heater-enable channel alone (one transaction of
// its own words) and reports whether the heater may heat: anything but the
// profile's off value. It is the read-back of a halt where the line is slow
// and shared (an RS-485 line of several controllers at 19200 baud, where
// Status's reads of every status channel take several times as long);
// Status reads the same word among the others.
func (c *Controller) HeaterEnabled(ctx context.Context) (bool, error) {
	spec := c.ch[profile.RoleHeaterEnable].Register()
	words, err := readSpans(ctx, c.bus, c.o.Unit, c.o.Name, []span{{table: spec.Table, lo: spec.Address, n: spec.Words()}})
	if err != nil {
		return false, err
	}
	raw, err := spec.Raw(words[0])
	if err != nil {
		return false, fmt.Errorf("%s: channel %s: %w", c.o.Name, c.ch[profile.RoleHeaterEnable].Name, err)
	}
	return raw != c.heaterOff, nil
}
