package preview

import (
	"errors"
	"fmt"

	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/recipe"
)

// Builtin returns the executor of a capability hcp-edge ships: a shipped
// recipe of that name (configs/recipes), else a built-in executor (For) of
// the capability resolved in reg at its highest version.
func Builtin(reg *capability.Registry, name string) (executor.Executor, *capability.Capability, error) {
	if x, c, ok, err := shippedRecipe(name); ok || err != nil {
		return x, c, err
	}
	c, err := reg.Resolve(name, "")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnknownCapability, err)
	}
	x, err := For(c)
	return x, c, err
}

// For returns the built-in executor of capability c, one written in Go
// (the processes are recipes: executor.NewRecipeExecutor). The daemon
// builds its sessions' built-in executors here too
// (cmd/hcp-edge/internal/agent), so that a preview runs what a session
// would: a built-in executor for a new capability is added here, once.
func For(c *capability.Capability) (executor.Executor, error) {
	switch c.Name {
	case executor.RigStatusName:
		return executor.NewRigStatus(c)
	case executor.LeakCheckName:
		return executor.NewLeakCheck(c)
	}
	return nil, fmt.Errorf("%w: capability %s has no built-in executor", ErrUnknownCapability, c.Name)
}

// ErrUnknownCapability: no executor serves the capability.
var ErrUnknownCapability = errors.New("preview: unknown capability")

// shippedRecipe is the executor and capability of the shipped recipe
// named name; ok is false when no shipped recipe has that name.
func shippedRecipe(name string) (executor.Executor, *capability.Capability, bool, error) {
	srcs, err := recipe.Shipped()
	if err != nil {
		return nil, nil, false, err
	}
	for _, src := range srcs {
		r, err := recipe.Load(src.Name, src.Data)
		if err != nil {
			return nil, nil, false, err
		}
		if r.Name != name {
			continue
		}
		c, err := r.Capability()
		if err != nil {
			return nil, nil, true, err
		}
		x, err := executor.NewRecipeExecutor(r)
		return x, c, true, err
	}
	return nil, nil, false, nil
}
