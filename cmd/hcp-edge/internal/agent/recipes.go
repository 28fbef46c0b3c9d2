package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"hcp-edge/cmd/hcp-edge/internal/recipes"
	"hcp-edge/session/capability"
	"hcp-edge/session/engine"
	"hcp-edge/session/executor"
)

// loadRecipes loads the shipped recipes and agent.recipes_dir against the
// compiled envelope (after openRig, before startSessions): each recipe
// that passes becomes a capability of the registry, with its executor;
// each that fails is logged with its file and why, and not offered — so
// is one whose name and version a session of the state file ran with
// other content. A failure to build the registry stops the start.
func (d *daemon) loadRecipes(ctx context.Context) error {
	d.base = d.reg.All()
	// What every session of the state file ran: a recipe whose content
	// changed since without a new version is refused, across restarts too.
	d.known = recipes.Known{}
	ss, err := d.st.Sessions(ctx, false)
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	for _, s := range ss {
		if id, ok := engine.PinnedRecipe(s); ok {
			d.known[id.Name+"@"+id.Version] = id.SHA256
		}
	}
	xs, caps, err := d.recipeSet()
	if err != nil {
		return err
	}
	if err := d.reg.Replace(caps...); err != nil {
		return fmt.Errorf("recipes: %w", err)
	}
	d.xs = xs
	return nil
}

// recipeSet loads the recipes, logs what was refused, and returns every
// executor and every capability: the declarations the agent started with,
// a recipe replacing one of the same name and version.
func (d *daemon) recipeSet() ([]executor.Executor, []*capability.Capability, error) {
	set, err := recipes.Load(d.env, d.f.Agent.RecipesDir, d.known)
	if err != nil {
		return nil, nil, fmt.Errorf("recipes: %w", err)
	}
	set.Log(d.log, d.f.Agent.RecipesDir)
	caps, err := set.Capabilities(d.base)
	if err != nil {
		return nil, nil, fmt.Errorf("recipes: %w", err)
	}
	reg, err := capability.NewRegistry(caps...)
	if err != nil {
		return nil, nil, fmt.Errorf("recipes: %w", err)
	}
	xs, missing, err := executors(reg, set.Executors)
	if err != nil {
		return nil, nil, err
	}
	if len(missing) > 0 {
		// A declaration whose recipe was refused (or that names no
		// executor at all) is not offered either. One whose shipped recipe
		// is made for another rig (set.NotForRig, logged at info) is
		// expected on this rig: not an error.
		other := set.NotForRigNames()
		var unexpected []string
		for _, m := range missing {
			if !slices.Contains(other, m) {
				unexpected = append(unexpected, m)
			}
		}
		if len(unexpected) > 0 {
			d.log.Error("capabilities declared without an executor or a recipe that passed: not offered", "capabilities", strings.Join(unexpected, ", "))
		}
		caps = slices.DeleteFunc(caps, func(c *capability.Capability) bool { return slices.Contains(missing, c.Name) })
	}
	return xs, caps, nil
}

// reloadRecipes is SIGHUP: the recipes loaded again, the registry (and so
// discovery, `hcp-edge capabilities` over the socket and the gate) and the
// engine's executors replaced. A session already created keeps its
// executor and its pinned plan. While the registry is swapped the engine
// holds the old executors and the new, so that no capability is ever
// offered without one. On an error nothing changes.
func (d *daemon) reloadRecipes() error {
	xs, caps, err := d.recipeSet()
	if err != nil {
		return err
	}
	both := append([]executor.Executor{}, xs...)
	for _, x := range d.xs {
		if !containsExecutor(both, x.Capability()) {
			both = append(both, x)
		}
	}
	if err := d.eng.SetExecutors(both...); err != nil {
		return err
	}
	if err := d.reg.Replace(caps...); err != nil {
		_ = d.eng.SetExecutors(d.xs...)
		return fmt.Errorf("recipes: %w", err)
	}
	if err := d.eng.SetExecutors(xs...); err != nil {
		return err
	}
	d.xs = xs
	d.log.Info("recipes reloaded (SIGHUP)", "capabilities", len(caps))
	return nil
}

func containsExecutor(xs []executor.Executor, name string) bool {
	for _, x := range xs {
		if x.Capability() == name {
			return true
		}
	}
	return false
}
