package preview

import (
	"errors"
	"fmt"
	"strings"

	"hcp-edge/device/rig"
	"hcp-edge/session/executor"
)

// ErrMultiZone marks a preview of a rig or a recipe of several heated
// zones: the simulated plant heats one furnace, and a prediction of a
// two-zone process from it would be wrong, so none is made. Its errors
// also wrap ErrInput: a preview_request is answered request_refused
// invalid_input, `recipe simulate` exits 2, both with the reason.
var ErrMultiZone = errors.New("the preview simulates one heated zone; a process of several zones is not previewed yet")

// oneZone refuses a preview on a layout of several zones, or of a planned
// run naming several zones or a zone the layout lacks.
func oneZone(l rig.Layout, rec executor.Recipe) error {
	if len(l.Zones) != 1 {
		return fmt.Errorf("%w: %w (the rig has %d)", ErrInput, ErrMultiZone, len(l.Zones))
	}
	z, ok := rec.(interface{ Zones() []string })
	if !ok {
		return nil
	}
	switch zs := z.Zones(); {
	case len(zs) > 1:
		return fmt.Errorf("%w: %w (the recipe heats %s)", ErrInput, ErrMultiZone, strings.Join(zs, ", "))
	case len(zs) == 1 && zs[0] != l.Zones[0].Name:
		return fmt.Errorf("%w: the recipe heats zone %s; the rig's zone is %s", ErrInput, zs[0], l.Zones[0].Name)
	}
	return nil
}
