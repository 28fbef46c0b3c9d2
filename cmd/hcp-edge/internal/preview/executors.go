package preview

import (
	"errors"
	"fmt"

	"github.com/hcp-edge/hcp-edge/session/capability"
	"github.com/hcp-edge/hcp-edge/session/executor"
)

// Builtin returns the executor of a capability hcp-edge has a built-in
// executor for (For), and the capability, resolved in reg at its highest
// version.
func Builtin(reg *capability.Registry, name string) (executor.Executor, *capability.Capability, error) {
	c, err := reg.Resolve(name, "")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnknownCapability, err)
	}
	x, err := For(c)
	return x, c, err
}

// For returns the built-in executor of capability c. The daemon builds its
// sessions' executors here too (cmd/hcp-edge/internal/agent), so that a
// preview runs what a session would: an executor for a new capability is
// added here, once.
func For(c *capability.Capability) (executor.Executor, error) {
	switch c.Name {
	case executor.CVDName:
		return executor.NewCVD(c, executor.CVDOpts{})
	case executor.RigStatusName:
		return executor.NewRigStatus(c)
	case executor.LeakCheckName:
		return executor.NewLeakCheck(c)
	}
	return nil, fmt.Errorf("%w: capability %s has no built-in executor", ErrUnknownCapability, c.Name)
}

// ErrUnknownCapability: no executor serves the capability.
var ErrUnknownCapability = errors.New("preview: unknown capability")
