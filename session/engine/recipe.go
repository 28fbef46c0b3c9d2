package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"hcp-edge/session/audit"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	"hcp-edge/session/recipe"
	"hcp-edge/session/store"
	"hcp-edge/transport/wire"
)

// recipeExecutor is an executor whose sessions run a process recipe
// (executor.RecipeExecutor): it has the recipe of each version.
type recipeExecutor interface {
	Recipe(version string) (*recipe.Recipe, error)
}

// recipeOf is the identity and the file of the recipe x runs for c (nil
// when x runs no recipe).
func recipeOf(x executor.Executor, c *capability.Capability) (*recipe.Identity, []byte, error) {
	rx, ok := x.(recipeExecutor)
	if !ok {
		return nil, nil, nil
	}
	r, err := rx.Recipe(c.SemVer.String())
	if err != nil {
		return nil, nil, err
	}
	id := r.Identity()
	return &id, r.Source(), nil
}

// pinnedRecipe rebuilds a recovered session's capability and executor
// from the recipe file its metadata keeps: loaded, its sha256 the one
// recorded, and checked against today's envelope (a recipe the envelope
// no longer admits does not resume).
func (e *Engine) pinnedRecipe(m meta) (*capability.Capability, executor.Executor, error) {
	id := m.Recipe
	r, err := recipe.LoadFor(id.Name, m.RecipeSource, recipe.Hazards(e.cfg.Rig.Envelope()))
	if err != nil {
		return nil, nil, fmt.Errorf("its recipe %s %s: %w", id.Name, id.Version, err)
	}
	if r.Identity() != *id {
		return nil, nil, fmt.Errorf("its recipe %s %s: the kept file is %s %s (sha256 %.12s…), not the recorded sha256 %.12s…",
			id.Name, id.Version, r.Name, r.Version, r.SHA256, id.SHA256)
	}
	if ps := recipe.Check(r, e.cfg.Rig.Envelope()); len(ps) > 0 {
		return nil, nil, fmt.Errorf("its recipe %s %s no longer passes the check against the envelope: %w", id.Name, id.Version, recipe.Problems(ps))
	}
	c, err := r.Capability()
	if err != nil {
		return nil, nil, err
	}
	x, err := executor.NewRecipeExecutor(r)
	if err != nil {
		return nil, nil, err
	}
	return c, x, nil
}

// PinnedRecipe is the identity of the recipe a stored session runs (false
// when it runs none): what it was accepted with.
func PinnedRecipe(s store.Session) (recipe.Identity, bool) {
	var m meta
	if json.Unmarshal(s.Metadata, &m) != nil || m.Recipe == nil {
		return recipe.Identity{}, false
	}
	return *m.Recipe, true
}

// auditRecipe records in w the recipe a new session runs (nothing
// without one).
func auditRecipe(ctx context.Context, w *store.Tx, sid string, id *recipe.Identity) error {
	if id == nil {
		return nil
	}
	b, err := json.Marshal(id)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if _, err := w.Audit(ctx, audit.Entry{SessionID: sid, Kind: audit.KindRecipe, Detail: string(b)}); err != nil {
		return fmt.Errorf("engine: audit the recipe of %s: %w", sid, err)
	}
	return nil
}

// wireRecipe is task_accepted's recipe field.
func wireRecipe(id *recipe.Identity) *wire.RecipeIdentity {
	if id == nil {
		return nil
	}
	return &wire.RecipeIdentity{Name: id.Name, Version: id.Version, SHA256: id.SHA256}
}

// SetExecutors replaces the executors new sessions are planned with, by
// capability name (two for one name are refused; the old set stays). A
// session already created keeps the executor it was created with — a
// recipe executor's recipe is immutable, and a running session's plan is
// pinned in its checkpoints — so a reload of the agent's recipes never
// changes a session under way.
func (e *Engine) SetExecutors(xs ...executor.Executor) error {
	next := make(map[string]executor.Executor, len(xs))
	for _, x := range xs {
		if _, dup := next[x.Capability()]; dup {
			return fmt.Errorf("engine: two executors for %s", x.Capability())
		}
		next[x.Capability()] = x
	}
	e.mu.Lock()
	e.execs = next
	e.mu.Unlock()
	return nil
}

// Executor is the current executor of capability name (SetExecutors): the
// one a session created now would run, and a preview asks.
func (e *Engine) Executor(name string) (executor.Executor, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.execs[name]
	return x, ok
}
