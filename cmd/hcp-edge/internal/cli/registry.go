package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"hcp-edge/configs"
	"hcp-edge/session/capability"
)

// loadRegistry loads the capability declarations: dir (relative to the
// configuration file's directory), else <config dir>/capabilities when it
// exists, else the copies embedded in the binary. It returns where they
// came from.
func loadRegistry(cfgPath, dir string) (*capability.Registry, string, error) {
	base := "."
	if cfgPath != "" {
		base = filepath.Dir(cfgPath)
	}
	if dir != "" {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(base, dir)
		}
		reg, err := capability.LoadDir(dir)
		return reg, dir, err
	}
	if cfgPath != "" {
		d := filepath.Join(base, "capabilities")
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			reg, err := capability.LoadDir(d)
			return reg, d, err
		}
	}
	shipped := configs.Capabilities()
	var caps []*capability.Capability
	var errs []error
	for _, n := range shipped.Names() {
		c, err := capability.Parse(shipped[n])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
			continue
		}
		caps = append(caps, c)
	}
	if len(errs) > 0 {
		return nil, "", errors.Join(errs...)
	}
	reg, err := capability.NewRegistry(caps...)
	return reg, "embedded configs/capabilities", err
}
