// Package recipes loads the agent's process recipes (session/recipe;
// docs/RECIPES.md): the shipped ones, embedded in the binary
// (configs/recipes), and a lab's own, the *.yaml files of the
// configuration's agent.recipes_dir. Every file is checked against the
// rig's compiled envelope (recipe.CheckAll); a recipe that fails is never
// offered, and the Set says which and why, so that the agent logs it at
// start and on every reload while the others load.
//
// # Concepts
//
// A Set is one load: the recipes that passed, their executors
// (executor.RecipeExecutor, one per recipe name), and every refusal.
// Capabilities merges the recipes' capabilities into the other
// declarations; a recipe replaces a JSON declaration of the same name and
// version (the seed task's shipped recipe is cvd-material-synthesis 1.0.0).
//
// # Caveats
//
// A recipe file or directory writable by group or others is refused
// (*PermissionError, ErrWritable): whoever can write it could change what
// the rig does. A recipe whose content differs from what Known holds under
// the same name and version is refused: a change of content needs a new
// version. The daemon fills Known from every load since it started and,
// at start, from the recipe identity of every session in its state file,
// so an edit is caught across restarts too as long as a session ran the
// earlier content.
package recipes
